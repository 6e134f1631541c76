// kernels/fp8.h against NVIDIA's own conversions (cuda_fp8.h host code, header-only).
#include "kernels/fp8.h"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace ttrace::kernels {
namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};
constexpr Fp8Saturation kSaturations[] = {Fp8Saturation::kSatFinite, Fp8Saturation::kNoSat};

__nv_fp8_interpretation_t Nv(Fp8Format f) { return f == Fp8Format::kE4M3 ? __NV_E4M3 : __NV_E5M2; }
__nv_saturation_t Nv(Fp8Saturation s) { return s == Fp8Saturation::kSatFinite ? __NV_SATFINITE : __NV_NOSAT; }

uint8_t NvNarrow(float f, Fp8Format format, Fp8Saturation saturation) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(f, Nv(saturation), Nv(format)));
}

uint32_t NvWidenBits(uint8_t code, Fp8Format format) {
  __half_raw raw = __nv_cvt_fp8_to_halfraw(code, Nv(format));
  return FloatBits(__half2float(__half(raw)));
}

// Compares one float in every format and saturation mode; returns false (with a message) on the first mismatch.
::testing::AssertionResult SameAsNvidia(float f) {
  for (Fp8Format format : kFormats) {
    for (Fp8Saturation saturation : kSaturations) {
      uint8_t mine = FloatToFp8(f, format, saturation);
      uint8_t nv = NvNarrow(f, format, saturation);
      if (mine != nv) {
        return ::testing::AssertionFailure()
               << "float bits 0x" << std::hex << FloatBits(f) << " format " << static_cast<int>(format)
               << " saturation " << static_cast<int>(saturation) << ": mine 0x" << int{mine} << " nvidia 0x"
               << int{nv};
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Every 97th FP32 bit pattern (44 million values, all exponents, both signs, NaNs and infinities).
TEST(Fp8, NarrowingMatchesNvidiaOnAStrideOfAllFloats) {
  uint64_t checked = 0;
  for (uint64_t i = 0; i < (1ull << 32); i += 97) {
    ASSERT_TRUE(SameAsNvidia(BitsFloat(static_cast<uint32_t>(i))));
    ++checked;
  }
  EXPECT_GT(checked, 44000000u);
}

// Rounding depends on the bits below the kept mantissa: for every sign, exponent and top 11 mantissa bits, the
// low 12 bits take the values that sit on, just below and just above each tie and each truncation boundary.
TEST(Fp8, NarrowingMatchesNvidiaAtEveryTieAndBoundary) {
  const uint32_t lows[] = {0x000, 0x001, 0x7ff, 0x800, 0x801, 0xfff};
  uint64_t checked = 0;
  for (uint32_t top = 0; top < (1u << 20); ++top) {  // sign, 8 exponent bits, 11 high mantissa bits
    for (uint32_t low : lows) {
      ASSERT_TRUE(SameAsNvidia(BitsFloat(top << 12 | low)));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6u << 20);
}

// Every FP8 value, through FP32 and back, in both formats: widening equals NVIDIA's bit for bit and the round
// trip is the identity without saturation (NaNs excepted: they come back as NVIDIA's canonical 0x7F).
TEST(Fp8, WideningMatchesNvidiaAndRoundTripsForEveryCode) {
  for (Fp8Format format : kFormats) {
    for (uint32_t c = 0; c < 256; ++c) {
      const uint8_t code = static_cast<uint8_t>(c);
      const float wide = Fp8ToFloat(code, format);
      ASSERT_EQ(FloatBits(wide), NvWidenBits(code, format)) << "format " << static_cast<int>(format) << " code " << c;
      if (std::isnan(wide)) {
        EXPECT_EQ(FloatToFp8(wide, format, Fp8Saturation::kNoSat), 0x7f);
        continue;
      }
      ASSERT_EQ(FloatToFp8(wide, format, Fp8Saturation::kNoSat), code) << "round trip of code " << c;
      // Saturation changes only infinities (E5M2), which saturate to the largest finite value.
      const uint8_t saturated = std::isinf(wide) ? static_cast<uint8_t>((code & 0x80) | 0x7b) : code;
      ASSERT_EQ(FloatToFp8(wide, format, Fp8Saturation::kSatFinite), saturated) << "code " << c;
    }
  }
}

TEST(Fp8, DocumentedBoundaries) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(E4M3ToFloat(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(E4M3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(E4M3ToFloat(0xff)));
  EXPECT_EQ(E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(E5M2ToFloat(0x7b), 57344.0f);
  EXPECT_EQ(E5M2ToFloat(0x7c), inf);
  EXPECT_EQ(E5M2ToFloat(0xfc), -inf);
  EXPECT_EQ(E5M2ToFloat(0x01), std::ldexp(1.0f, -16));
  // E4M3: 464 is the midpoint between 448 and the (absent) next value 480: ties to even keep 448.
  EXPECT_EQ(FloatToE4M3(464.0f, Fp8Saturation::kNoSat), 0x7e);
  EXPECT_EQ(FloatToE4M3(464.5f, Fp8Saturation::kNoSat), 0x7f);
  EXPECT_EQ(FloatToE4M3(-1e6f, Fp8Saturation::kNoSat), 0xff);
  EXPECT_EQ(FloatToE4M3(-1e6f, Fp8Saturation::kSatFinite), 0xfe);
  EXPECT_EQ(FloatToE4M3(inf, Fp8Saturation::kSatFinite), 0x7e);
  // E5M2: 61440 is the midpoint between 57344 and 65536; the tie goes to the even code 0x7C, infinity.
  EXPECT_EQ(FloatToE5M2(61440.0f, Fp8Saturation::kNoSat), 0x7c);
  EXPECT_EQ(FloatToE5M2(61439.0f, Fp8Saturation::kNoSat), 0x7b);
  EXPECT_EQ(FloatToE5M2(61440.0f, Fp8Saturation::kSatFinite), 0x7b);
  EXPECT_EQ(FloatToE5M2(-inf, Fp8Saturation::kNoSat), 0xfc);
  // Underflow keeps the sign; half the smallest subnormal ties to zero.
  EXPECT_EQ(FloatToE4M3(-std::ldexp(1.0f, -10)), 0x80);
  EXPECT_EQ(FloatToE4M3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(FloatToE5M2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(FloatToE4M3(-std::nanf("")), 0x7f);
}

}  // namespace
}  // namespace ttrace::kernels
