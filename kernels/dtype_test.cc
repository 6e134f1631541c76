// kernels/dtype.h against NVIDIA's own conversions (cuda_fp16.h / cuda_bf16.h host code, header-only).
#include "kernels/dtype.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace ttrace::kernels {
namespace {

uint16_t NvHalfBits(float f) {
  __half h = __float2half_rn(f);
  uint16_t b;
  memcpy(&b, &h, 2);
  return b;
}
uint16_t NvBf16Bits(float f) {
  __nv_bfloat16 h = __float2bfloat16_rn(f);
  uint16_t b;
  memcpy(&b, &h, 2);
  return b;
}

// Every 97th FP32 bit pattern (44 million values, all exponents and both signs): same bits as NVIDIA's RNE.
TEST(DType, NarrowingMatchesNvidiaBitForBit) {
  uint64_t checked = 0;
  for (uint64_t i = 0; i < (1ull << 32); i += 97) {
    float f = BitsFloat(static_cast<uint32_t>(i));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(f))));
      continue;
    }
    ASSERT_EQ(FloatToHalf(f), NvHalfBits(f)) << std::hex << i;
    ASSERT_EQ(FloatToBf16(f), NvBf16Bits(f)) << std::hex << i;
    ++checked;
  }
  EXPECT_GT(checked, 40000000u);
}

TEST(DType, HalfBoundaries) {
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bffu);
  EXPECT_EQ(FloatToHalf(65519.99f), 0x7bffu);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00u);  // ties to even rounds up to infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001u);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000u);   // tie to even: 0
  EXPECT_EQ(FloatToHalf(std::ldexp(1.5f, -25)), 0x0001u);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000u);
}

TEST(DType, WideningIsExactForEveryHalfAndBf16) {
  for (uint32_t h = 0; h < 65536; ++h) {
    __half_raw r;
    r.x = static_cast<unsigned short>(h);
    float nv = __half2float(__half(r));
    float mine = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(nv)) {
      EXPECT_TRUE(std::isnan(mine));
      continue;
    }
    ASSERT_EQ(FloatBits(mine), FloatBits(nv)) << std::hex << h;
    ASSERT_EQ(FloatToHalf(mine), h) << "round trip " << std::hex << h;
    float b = Bf16ToFloat(static_cast<uint16_t>(h));
    if (!std::isnan(b)) ASSERT_EQ(FloatToBf16(b), h);
  }
}

}  // namespace
}  // namespace ttrace::kernels
