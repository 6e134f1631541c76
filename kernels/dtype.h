// Bit-exact conversions between FP32 and the 16-bit storage formats (IEEE binary16 "half", bfloat16), as NVIDIA's
// cuda_fp16.h / cuda_bf16.h define them for __float2half_rn / __float2bfloat16_rn: round to nearest, ties to even;
// overflow goes to infinity; NaN stays NaN (quiet, sign kept). Widening (16 -> 32 bit) is exact.
//
// Header-only and dependency-free so that the shim, the analyzer, simgpu and the CUDA kernels (host and device
// code alike) share one definition.
#ifndef TTRACE_KERNELS_DTYPE_H_
#define TTRACE_KERNELS_DTYPE_H_

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TTRACE_HD __host__ __device__
#else
#define TTRACE_HD
#endif

namespace ttrace::kernels {

TTRACE_HD inline uint32_t FloatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
TTRACE_HD inline float BitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// bfloat16 is the top half of an FP32: round the low 16 bits away, ties to even.
TTRACE_HD inline uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}
TTRACE_HD inline float Bf16ToFloat(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; subnormals below 2^-14, max finite 65504.
TTRACE_HD inline uint16_t FloatToHalf(float f) {
  uint32_t u = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): value = m * 2^-24 with m rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal 2^-25: rounds to zero
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp;  // 113 - exp + 13
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias exponent, round 13 dropped bits to nearest even (a carry may roll into the exponent).
  uint32_t v = abs - 0x38000000u;  // exponent bias 127 -> 15
  uint32_t lsb = (v >> 13) & 1u;
  v += 0xfffu + lsb;
  return static_cast<uint16_t>(sign | (v >> 13));
}

TTRACE_HD inline float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return BitsFloat(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return BitsFloat(sign);
    // Subnormal: normalize.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    mant &= 0x3ffu;
    return BitsFloat(sign | static_cast<uint32_t>(112 - e) << 23 | (mant << 13));
  }
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

}  // namespace ttrace::kernels

#endif  // TTRACE_KERNELS_DTYPE_H_
