// Bit-exact conversions between FP32 and the two 8-bit floating-point formats of Hopper and later GPUs, as
// NVIDIA's cuda_fp8.h defines them on the host (__nv_cvt_float_to_fp8, __nv_cvt_fp8_to_halfraw followed by
// __half2float):
//   E4M3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7F and 0xFF are NaN; max finite 448;
//         smallest subnormal 2^-9.
//   E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-like with infinities (0x7C, 0xFC) and NaNs;
//         max finite 57344; smallest subnormal 2^-16.
// Narrowing rounds to nearest, ties to even. A result beyond the largest finite value (after rounding; infinity
// included) becomes, with kSatFinite (__NV_SATFINITE), the largest finite value of that sign, and with kNoSat
// (__NV_NOSAT) infinity for E5M2 and NaN (0x7F | sign) for E4M3. A NaN input becomes 0x7F whatever its sign, as
// NVIDIA's host code canonicalizes it. Zero and underflow keep the sign. Widening is exact; every FP8 NaN widens
// to NVIDIA's canonical NaN 0x7FFFFFFF (what __half2float returns on the host for every NaN).
//
// Header-only and dependency-free, like dtype.h, so that simgpu, the shim, the analyzer and CUDA kernels share
// one definition.
#ifndef TTRACE_KERNELS_FP8_H_
#define TTRACE_KERNELS_FP8_H_

#include <cstdint>

#include "kernels/dtype.h"

namespace ttrace::kernels {

enum class Fp8Format { kE4M3, kE5M2 };
enum class Fp8Saturation { kSatFinite, kNoSat };

TTRACE_HD inline uint8_t FloatToFp8(float f, Fp8Format format, Fp8Saturation saturation) {
  const bool e4m3 = format == Fp8Format::kE4M3;
  const int mant_bits = e4m3 ? 3 : 2;
  const int bias = e4m3 ? 7 : 15;
  const uint32_t max_finite = e4m3 ? 0x7eu : 0x7bu;
  const uint32_t overflow = saturation == Fp8Saturation::kSatFinite ? max_finite : (e4m3 ? 0x7fu : 0x7cu);
  const uint32_t u = FloatBits(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7fu;
  if (abs == 0x7f800000u) return static_cast<uint8_t>(sign | overflow);
  if (abs < 0x00800000u) return static_cast<uint8_t>(sign);  // zero or FP32 subnormal: far below FP8's range
  // |f| = m * 2^(e - 23) with m the 24-bit significand. The FP8 result is n * 2^(te - mant_bits) with
  // te = max(e, 1 - bias) (subnormals share the smallest normal exponent) and n rounded to nearest even; its
  // code is ((te - (1 - bias)) << mant_bits) + n, which also carries a rounded-up significand into the exponent.
  const int e = static_cast<int>(abs >> 23) - 127;
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  const int min_exp = 1 - bias;
  const int te = e > min_exp ? e : min_exp;
  const int shift = 23 - mant_bits + (te - e);
  if (shift > 24) return static_cast<uint8_t>(sign);  // below half the smallest subnormal
  uint32_t n = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (n & 1u))) ++n;
  const uint32_t code = (static_cast<uint32_t>(te - min_exp) << mant_bits) + n;
  if (code > max_finite) return static_cast<uint8_t>(sign | overflow);
  return static_cast<uint8_t>(sign | code);
}

TTRACE_HD inline float Fp8ToFloat(uint8_t code, Fp8Format format) {
  const bool e4m3 = format == Fp8Format::kE4M3;
  const int mant_bits = e4m3 ? 3 : 2;
  const int bias = e4m3 ? 7 : 15;
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exp = (code & 0x7fu) >> mant_bits;
  uint32_t mant = code & ((1u << mant_bits) - 1u);
  if (e4m3 && (code & 0x7fu) == 0x7fu) return BitsFloat(0x7fffffffu);
  if (!e4m3 && exp == 0x1fu) return mant == 0 ? BitsFloat(sign | 0x7f800000u) : BitsFloat(0x7fffffffu);
  if (exp == 0) {
    if (mant == 0) return BitsFloat(sign);
    // Subnormal mant * 2^(1 - bias - mant_bits): normalize so the leading 1 becomes the implicit bit.
    int e = 1 - bias;
    while ((mant & (1u << mant_bits)) == 0) {
      mant <<= 1;
      --e;
    }
    mant &= (1u << mant_bits) - 1u;
    return BitsFloat(sign | static_cast<uint32_t>(e + 127) << 23 | mant << (23 - mant_bits));
  }
  return BitsFloat(sign | static_cast<uint32_t>(static_cast<int>(exp) - bias + 127) << 23 | mant << (23 - mant_bits));
}

TTRACE_HD inline uint8_t FloatToE4M3(float f, Fp8Saturation s = Fp8Saturation::kSatFinite) {
  return FloatToFp8(f, Fp8Format::kE4M3, s);
}
TTRACE_HD inline uint8_t FloatToE5M2(float f, Fp8Saturation s = Fp8Saturation::kSatFinite) {
  return FloatToFp8(f, Fp8Format::kE5M2, s);
}
TTRACE_HD inline float E4M3ToFloat(uint8_t code) { return Fp8ToFloat(code, Fp8Format::kE4M3); }
TTRACE_HD inline float E5M2ToFloat(uint8_t code) { return Fp8ToFloat(code, Fp8Format::kE5M2); }

}  // namespace ttrace::kernels

#endif  // TTRACE_KERNELS_FP8_H_
