// Element faults: the value= conversion is checked against an independent reference (every code of the format
// decoded, the nearest picked by search, ties to the even code) and against NVIDIA's host conversions
// (common/nv_dtype.h) for FP16/BF16; bit flips and the refusals that stop the process.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/nv_dtype.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

// A positive code of a binary format with `exp_bits` and `mant_bits`, decoded by the textbook formula. Applied to
// the code just above the largest finite one it gives the "next" value that rounding may overflow to.
double Decode(uint32_t code, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t e = code >> mant_bits;
  const uint32_t m = code & ((1u << mant_bits) - 1);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - bias - mant_bits);
  return std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mant_bits), static_cast<int>(e) - bias);
}

struct Format {
  cudaDataType type;
  int exp_bits;
  int mant_bits;
  uint32_t max_finite;  // largest finite positive code
  uint32_t overflow;    // what magnitudes that round past max_finite become (positive)
  uint32_t nan;
};
const Format kFormats[] = {
    {CUDA_R_16F, 5, 10, 0x7bff, 0x7c00, 0x7e00},
    {CUDA_R_16BF, 8, 7, 0x7f7f, 0x7f80, 0x7fc0},
    {CUDA_R_8F_E5M2, 5, 2, 0x7b, 0x7c, 0x7e},
    {CUDA_R_8F_E4M3, 4, 3, 0x7e, 0x7f, 0x7f},  // E4M3: no infinity, overflow is NaN
};

// Nearest code by binary search over the monotonic positive codes, ties to the even code.
uint32_t Reference(const Format& f, double v) {
  const uint32_t sign = std::signbit(v) ? 1u << (f.exp_bits + f.mant_bits) : 0u;
  if (std::isnan(v)) return sign | f.nan;
  const double a = std::fabs(v);
  const uint32_t top = f.max_finite + 1;
  if (a >= Decode(top, f.exp_bits, f.mant_bits)) return sign | f.overflow;
  uint32_t lo = 0, hi = top;  // Decode(lo) <= a < Decode(hi)
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) / 2;
    (Decode(mid, f.exp_bits, f.mant_bits) <= a ? lo : hi) = mid;
  }
  const double below = a - Decode(lo, f.exp_bits, f.mant_bits);
  const double above = Decode(hi, f.exp_bits, f.mant_bits) - a;
  uint32_t code = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | (code == top ? f.overflow : code);
}

uint32_t Stored(const Format& f, double v) {
  uint32_t out = 0;
  EXPECT_TRUE(StoreElementValue(v, f.type, &out));
  return out;  // little-endian: the element's bytes are the low bytes
}

TEST(StoreElementValue, MatchesTheNearestCodeForEveryMidpointAndItsNeighbours) {
  for (const Format& f : kFormats) {
    for (uint32_t c = 0; c <= f.max_finite; ++c) {
      const double a = Decode(c, f.exp_bits, f.mant_bits);
      const double b = Decode(c + 1, f.exp_bits, f.mant_bits);
      const double mid = (a + b) / 2;  // exact: both are short binary fractions
      for (double v : {a, mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY), -mid, -a}) {
        ASSERT_EQ(Stored(f, v), Reference(f, v)) << "type " << f.type << " value " << v;
      }
    }
  }
}

TEST(StoreElementValue, MatchesTheReferenceOnRandomMagnitudes) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(-150, 140);
  for (const Format& f : kFormats) {
    for (int i = 0; i < 20000; ++i) {
      double v = std::ldexp(mant(rng), exp(rng)) * (i % 2 ? -1 : 1);
      ASSERT_EQ(Stored(f, v), Reference(f, v)) << "type " << f.type << " value " << v;
    }
  }
}

TEST(StoreElementValue, AgreesWithTheFp32ConversionsOfDtypeH) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const float x = simgpu::nv::BitsFloat(rng());
    if (std::isnan(x)) continue;
    uint16_t half = 0, bf16 = 0;
    ASSERT_TRUE(StoreElementValue(x, CUDA_R_16F, &half));
    ASSERT_TRUE(StoreElementValue(x, CUDA_R_16BF, &bf16));
    ASSERT_EQ(half, simgpu::nv::FloatToHalf(x)) << x;
    ASSERT_EQ(bf16, simgpu::nv::FloatToBf16(x)) << x;
  }
}

// value= on FP8 is NVIDIA's non-saturating conversion (__NV_NOSAT): agree with common/nv_dtype.h on FP32 inputs.
TEST(StoreElementValue, AgreesWithTheNonSaturatingFp8ConversionsOfFp8H) {
  using simgpu::nv::Fp8Format;
  using simgpu::nv::Fp8Saturation;
  std::mt19937 rng(13);
  for (int i = 0; i < 200000; ++i) {
    // Exponents near FP8's range are where rounding, subnormals and overflow happen: draw them there half the time.
    uint32_t bits = rng();
    if (i % 2 == 0) bits = (bits & 0x807fffffu) | ((100u + bits % 60u) << 23);
    const float x = simgpu::nv::BitsFloat(bits);
    if (std::isnan(x)) continue;
    uint8_t e4m3 = 0, e5m2 = 0;
    ASSERT_TRUE(StoreElementValue(x, CUDA_R_8F_E4M3, &e4m3));
    ASSERT_TRUE(StoreElementValue(x, CUDA_R_8F_E5M2, &e5m2));
    ASSERT_EQ(e4m3, simgpu::nv::FloatToFp8(x, Fp8Format::kE4M3, Fp8Saturation::kNoSat)) << x;
    ASSERT_EQ(e5m2, simgpu::nv::FloatToFp8(x, Fp8Format::kE5M2, Fp8Saturation::kNoSat)) << x;
  }
}

TEST(StoreElementValue, KnownEncodings) {
  const Format& e4m3 = kFormats[3];
  const Format& e5m2 = kFormats[2];
  EXPECT_EQ(Stored(e4m3, 1.0), 0x38u);
  EXPECT_EQ(Stored(e4m3, 448.0), 0x7eu);
  EXPECT_EQ(Stored(e4m3, 464.0), 0x7eu);  // the tie above the maximum goes to the even code, 448
  EXPECT_EQ(Stored(e4m3, 464.5), 0x7fu);  // beyond it: NaN (no infinity in E4M3)
  EXPECT_EQ(Stored(e4m3, -INFINITY), 0xffu);
  EXPECT_EQ(Stored(e4m3, std::ldexp(1.0, -9)), 0x01u);   // smallest subnormal
  EXPECT_EQ(Stored(e4m3, std::ldexp(1.0, -10)), 0x00u);  // half of it: tie to zero
  EXPECT_EQ(Stored(e5m2, 57344.0), 0x7bu);
  EXPECT_EQ(Stored(e5m2, 61440.0), 0x7cu);  // tie above the maximum: the even code is infinity
  EXPECT_EQ(Stored(e5m2, -0.0), 0x80u);
  double d = 0;
  float f = 0;
  ASSERT_TRUE(StoreElementValue(0.1, CUDA_R_64F, &d));
  ASSERT_TRUE(StoreElementValue(0.1, CUDA_R_32F, &f));
  EXPECT_EQ(d, 0.1);
  EXPECT_EQ(f, 0.1f);
}

TEST(StoreElementValue, IntegersMustBeWholeAndInRange) {
  int8_t i8 = 0;
  uint8_t u8 = 0;
  int64_t i64 = 0;
  uint64_t u64 = 0;
  EXPECT_TRUE(StoreElementValue(-128, CUDA_R_8I, &i8));
  EXPECT_EQ(i8, -128);
  EXPECT_FALSE(StoreElementValue(128, CUDA_R_8I, &i8));
  EXPECT_FALSE(StoreElementValue(-1, CUDA_R_8U, &u8));
  EXPECT_TRUE(StoreElementValue(255, CUDA_R_8U, &u8));
  EXPECT_EQ(u8, 255);
  EXPECT_FALSE(StoreElementValue(1.5, CUDA_R_32I, &i64));
  EXPECT_FALSE(StoreElementValue(NAN, CUDA_R_32I, &i64));
  EXPECT_TRUE(StoreElementValue(-std::ldexp(1.0, 63), CUDA_R_64I, &i64));
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(StoreElementValue(std::ldexp(1.0, 63), CUDA_R_64I, &i64));
  EXPECT_TRUE(StoreElementValue(std::ldexp(1.0, 63), CUDA_R_64U, &u64));
  EXPECT_EQ(u64, uint64_t{1} << 63);
  EXPECT_FALSE(StoreElementValue(std::ldexp(1.0, 64), CUDA_R_64U, &u64));
  uint64_t untouched = 0x1234;
  EXPECT_FALSE(StoreElementValue(1.0, CUDA_C_32F, &untouched));
  EXPECT_EQ(untouched, 0x1234u);
}

Fault ElementFault(FaultAction action, int bit, double value) {
  Fault f;
  f.site = FaultSite::kConv;
  f.action = action;
  f.bit = bit;
  f.value = value;
  return f;
}

TEST(ApplyElementFault, FlipsOneBitOfTheTypedElement) {
  uint16_t bf16[2] = {0x3f80, 0x3f80};
  ApplyElementFault(ElementFault(FaultAction::kBitFlip, 15, 0), &bf16[1], CUDA_R_16BF);
  EXPECT_EQ(bf16[0], 0x3f80);
  EXPECT_EQ(bf16[1], 0xbf80);  // sign flipped: -1.0
  double d = 1.0;
  ApplyElementFault(ElementFault(FaultAction::kBitFlip, 63, 0), &d, CUDA_R_64F);
  EXPECT_EQ(d, -1.0);
  uint8_t fp8 = 0x38;
  ApplyElementFault(ElementFault(FaultAction::kBitFlip, 3, 0), &fp8, CUDA_R_8F_E4M3);
  EXPECT_EQ(fp8, 0x30);  // lowest exponent bit: 1.0 -> 0.5
}

TEST(ApplyElementFault, StoresTheValueConvertedToTheElementType) {
  uint16_t half[3] = {0, 0, 0};
  ApplyElementFault(ElementFault(FaultAction::kValue, 0, 65520.0), &half[1], CUDA_R_16F);
  EXPECT_EQ(half[0], 0);
  EXPECT_EQ(half[1], 0x7c00);  // 65520 rounds past 65504: infinity
  EXPECT_EQ(half[2], 0);
  float f = 1.0f;
  ApplyElementFault(ElementFault(FaultAction::kValue, 0, -0.0), &f, CUDA_R_32F);
  EXPECT_TRUE(f == 0.0f && std::signbit(f));
  int32_t i = 0;
  ApplyElementFault(ElementFault(FaultAction::kValue, 0, -7), &i, CUDA_R_32I);
  EXPECT_EQ(i, -7);
}

TEST(ApplyElementFaultDeathTest, RefusalsStopTheProcessWithTheSpec) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  uint64_t buf[2] = {};
  EXPECT_EXIT(ApplyElementFault(ElementFault(FaultAction::kBitFlip, 16, 0), buf, CUDA_R_16F),
              ::testing::ExitedWithCode(2),
              "conv:call=0: bit=16 does not fit a 2-byte element \\(fault conv:rank=0:call=0:elem=0:bit=16\\)");
  EXPECT_EXIT(ApplyElementFault(ElementFault(FaultAction::kValue, 0, 300), buf, CUDA_R_8U),
              ::testing::ExitedWithCode(2), "value=300: the value cannot be stored.*integer in range");
  EXPECT_EXIT(ApplyElementFault(ElementFault(FaultAction::kValue, 0, 1), buf, CUDA_C_32F),
              ::testing::ExitedWithCode(2), "cannot be stored in a cudaDataType 4 element");
  EXPECT_EXIT(ApplyElementFault(ElementFault(FaultAction::kBitFlip, 0, 0), buf, CUDA_R_4F_E2M1),
              ::testing::ExitedWithCode(2), "bit flips in cudaDataType 33 elements are not supported");
  EXPECT_EXIT(ApplyElementFault(ElementFault(FaultAction::kStale, 0, 0), buf, CUDA_R_32F),
              ::testing::ExitedWithCode(2), "not an element fault");
  Fault far = ElementFault(FaultAction::kBitFlip, 0, 0);
  far.elem = 10;
  EXPECT_EXIT(CheckFaultElement(far, 10), ::testing::ExitedWithCode(2),
              "elem=10 is out of range \\(the output has 10 elements; fault conv:rank=0:call=0:elem=10:bit=0\\)");
}

TEST(DataTypeBytes, WholeByteTypes) {
  EXPECT_EQ(DataTypeBytes(CUDA_R_64F), 8u);
  EXPECT_EQ(DataTypeBytes(CUDA_R_32F), 4u);
  EXPECT_EQ(DataTypeBytes(CUDA_R_16BF), 2u);
  EXPECT_EQ(DataTypeBytes(CUDA_R_8F_E5M2), 1u);
  EXPECT_EQ(DataTypeBytes(CUDA_C_64F), 16u);
  EXPECT_EQ(DataTypeBytes(CUDA_R_4F_E2M1), 0u);
}

}  // namespace
}  // namespace simgpu
