// FP16, BF16 and FP8 conversions for simgpu and the programs run on it (tools/workloads, shim/testing): NVIDIA's
// own host code from cuda_fp16.h, cuda_bf16.h and cuda_fp8.h (__float2half_rn, __float2bfloat16_rn,
// __nv_cvt_float_to_fp8, __nv_cvt_fp8_to_halfraw then __half2float), which is what a CUDA program and cuBLAS's
// host side compute, and what the device's cvt instructions compute bit for bit.
//
// The device side of every test converts here, the analyzer (the oracle) converts with kernels/dtype.h and
// kernels/fp8.h, its own code: a rounding bug in either shows up as a disagreement instead of hiding on both sides
// of an end-to-end test. tests/conversion_agreement_test.cc holds the two to the same bits on every 16- and 8-bit
// value and at every rounding boundary; where NVIDIA's host code is the reference, kernels/dtype_test.cc and
// fp8_test.cc say so.
//
// Header-only, host-only, thread-safe (pure functions).
#ifndef TTRACE_TOOLS_SIMGPU_COMMON_NV_DTYPE_H_
#define TTRACE_TOOLS_SIMGPU_COMMON_NV_DTYPE_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstring>

namespace simgpu::nv {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even; overflow to infinity.
inline uint16_t FloatToBf16(float f) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(f)).x; }
inline float Bf16ToFloat(uint16_t h) {
  __nv_bfloat16_raw r;
  r.x = h;
  return __bfloat162float(__nv_bfloat16(r));
}
inline uint16_t FloatToHalf(float f) { return static_cast<__half_raw>(__float2half_rn(f)).x; }
inline float HalfToFloat(uint16_t h) {
  __half_raw r;
  r.x = h;
  return __half2float(__half(r));
}

enum class Fp8Format { kE4M3, kE5M2 };
enum class Fp8Saturation { kSatFinite, kNoSat };

inline uint8_t FloatToFp8(float f, Fp8Format format, Fp8Saturation saturation) {
  const __nv_saturation_t sat = saturation == Fp8Saturation::kSatFinite ? __NV_SATFINITE : __NV_NOSAT;
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(f, sat, format == Fp8Format::kE4M3 ? __NV_E4M3 : __NV_E5M2));
}
// Exact; every NaN widens to 0x7FFFFFFF, as __half2float gives on the host.
inline float Fp8ToFloat(uint8_t code, Fp8Format format) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(code, format == Fp8Format::kE4M3 ? __NV_E4M3 : __NV_E5M2)));
}
inline uint8_t FloatToE4M3(float f, Fp8Saturation s = Fp8Saturation::kSatFinite) {
  return FloatToFp8(f, Fp8Format::kE4M3, s);
}
inline uint8_t FloatToE5M2(float f, Fp8Saturation s = Fp8Saturation::kSatFinite) {
  return FloatToFp8(f, Fp8Format::kE5M2, s);
}
inline float E4M3ToFloat(uint8_t code) { return Fp8ToFloat(code, Fp8Format::kE4M3); }
inline float E5M2ToFloat(uint8_t code) { return Fp8ToFloat(code, Fp8Format::kE5M2); }

}  // namespace simgpu::nv

#endif  // TTRACE_TOOLS_SIMGPU_COMMON_NV_DTYPE_H_
