// Hand-computed cases that tell the NCCL semantics apart from plausible alternatives: rounding after every
// 16-bit and FP8 add, FP8 saturation, PreMulSum avg for floats (and user PreMulSum scalars), SumPostDiv avg for
// integers, wrapping integers, fmax/fmin NaN and signed-zero handling, and the operand order.
#include "tools/simgpu/nccl/reduce_kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu::nccl {
namespace {

namespace kd = simgpu::nv;

// Reduces one element per rank, in the order given, as a collective's chain does.
template <typename T>
T Chain(const Reduction& r, const std::vector<T>& per_rank) {
  T acc;
  ReduceFirst(r, &acc, &per_rank[0], 1);
  for (size_t i = 1; i < per_rank.size(); ++i) ReduceNext(r, &acc, &per_rank[i], 1);
  ReduceFinish(r, &acc, 1);
  return acc;
}

template <typename T>
T ReduceRanks(ncclDataType_t dtype, ncclRedOp_t op, const std::vector<T>& per_rank) {
  Reduction r = BuiltinReduction(dtype, op, static_cast<int>(per_rank.size()));
  T acc;
  ReduceFirst(r, &acc, &per_rank[0], 1);
  for (size_t i = 1; i < per_rank.size(); ++i) ReduceNext(r, &acc, &per_rank[i], 1);
  ReduceFinish(r, &acc, 1);
  return acc;
}

TEST(ReduceKernels, DataTypeSizes) {
  EXPECT_EQ(DataTypeSize(ncclInt8), 1u);
  EXPECT_EQ(DataTypeSize(ncclUint8), 1u);
  EXPECT_EQ(DataTypeSize(ncclFloat16), 2u);
  EXPECT_EQ(DataTypeSize(ncclBfloat16), 2u);
  EXPECT_EQ(DataTypeSize(ncclInt32), 4u);
  EXPECT_EQ(DataTypeSize(ncclFloat32), 4u);
  EXPECT_EQ(DataTypeSize(ncclInt64), 8u);
  EXPECT_EQ(DataTypeSize(ncclFloat64), 8u);
  EXPECT_EQ(DataTypeSize(ncclFloat8e4m3), 1u);
  EXPECT_EQ(DataTypeSize(static_cast<ncclDataType_t>(ncclNumTypes)), 0u);
  EXPECT_TRUE(ReductionSupported(ncclFloat8e4m3, ncclSum));
  EXPECT_TRUE(ReductionSupported(ncclFloat8e5m2, ncclAvg));
  EXPECT_FALSE(ReductionSupported(ncclFloat32, static_cast<ncclRedOp_t>(ncclNumOps)));
  EXPECT_FALSE(ReductionSupported(static_cast<ncclDataType_t>(ncclNumTypes), ncclSum));
  EXPECT_TRUE(ReductionSupported(ncclBfloat16, ncclAvg));
}

TEST(ReduceKernels, HalfSumRoundsAfterEveryAdd) {
  // 2048 + 1 = 2049 is a tie between 2048 and 2050 in binary16 and rounds to even (2048), twice; the exact sum
  // 2050 is representable, so one rounding at the end would give 2050.
  uint16_t x = kd::FloatToHalf(2048), one = kd::FloatToHalf(1);
  EXPECT_EQ(kd::HalfToFloat(ReduceRanks<uint16_t>(ncclFloat16, ncclSum, {x, one, one})), 2048.0f);
  EXPECT_EQ(kd::HalfToFloat(ReduceRanks<uint16_t>(ncclFloat16, ncclSum, {one, one, x})), 2050.0f);
}

TEST(ReduceKernels, Bf16SumRoundsAfterEveryAdd) {
  uint16_t x = kd::FloatToBf16(256), one = kd::FloatToBf16(1);
  EXPECT_EQ(kd::Bf16ToFloat(ReduceRanks<uint16_t>(ncclBfloat16, ncclSum, {x, one, one})), 256.0f);
  EXPECT_EQ(kd::Bf16ToFloat(ReduceRanks<uint16_t>(ncclBfloat16, ncclSum, {one, one, x})), 258.0f);
}

TEST(ReduceKernels, DoubleSumFollowsRankOrder) {
  EXPECT_EQ(ReduceRanks<double>(ncclFloat64, ncclSum, {1e16, 1, 1}), 1e16);
  EXPECT_EQ(ReduceRanks<double>(ncclFloat64, ncclSum, {1, 1, 1e16}), 1e16 + 2);
}

TEST(ReduceKernels, FloatAvgIsPreMulSum) {
  // Ten ranks holding 1.0f: each is multiplied by float(1/10) = 0.100000001490116, and ten such terms summed
  // in FP32 give 1.0000001192092896 (0x3f800001); sum-then-divide would give exactly 1.
  std::vector<float> ones(10, 1.0f);
  float avg = ReduceRanks<float>(ncclFloat32, ncclAvg, ones);
  EXPECT_EQ(kd::FloatBits(avg), 0x3f800001u) << avg;
}

TEST(ReduceKernels, IntegerAvgIsSumThenTruncatingDivision) {
  EXPECT_EQ(ReduceRanks<int32_t>(ncclInt32, ncclAvg, {-7, 0, 0}), -2);
  EXPECT_EQ(ReduceRanks<int32_t>(ncclInt32, ncclAvg, {7, 0, 0}), 2);
  // The uint8 sum wraps first: 255 + 255 + 255 = 765 = 253 (mod 256), then 253 / 3 = 84.
  EXPECT_EQ(ReduceRanks<uint8_t>(ncclUint8, ncclAvg, {255, 255, 255}), 84);
  EXPECT_EQ(ReduceRanks<int64_t>(ncclInt64, ncclAvg, {INT64_MIN / 2, INT64_MIN / 2 + 1, 0}),
            (INT64_MIN + 1) / 3);
}

TEST(ReduceKernels, IntegersWrap) {
  EXPECT_EQ(ReduceRanks<int8_t>(ncclInt8, ncclSum, {100, 100}), -56);
  EXPECT_EQ(ReduceRanks<int8_t>(ncclInt8, ncclProd, {16, 16}), 0);
  EXPECT_EQ(ReduceRanks<int8_t>(ncclInt8, ncclProd, {-3, 5, 7}), -105);
  EXPECT_EQ(ReduceRanks<uint32_t>(ncclUint32, ncclSum, {0xffffffffu, 2}), 1u);
  EXPECT_EQ(ReduceRanks<int64_t>(ncclInt64, ncclSum, {INT64_MAX, 1}), INT64_MIN);
  EXPECT_EQ(ReduceRanks<uint64_t>(ncclUint64, ncclProd, {1ull << 32, 1ull << 32}), 0u);
}

TEST(ReduceKernels, MinMaxSignedness) {
  EXPECT_EQ(ReduceRanks<int8_t>(ncclInt8, ncclMax, {-1, -128, 5}), 5);
  EXPECT_EQ(ReduceRanks<int8_t>(ncclInt8, ncclMin, {-1, -128, 5}), -128);
  EXPECT_EQ(ReduceRanks<uint8_t>(ncclUint8, ncclMax, {1, 255, 5}), 255);
  EXPECT_EQ(ReduceRanks<int64_t>(ncclInt64, ncclMin, {3, INT64_MIN, 0}), INT64_MIN);
}

TEST(ReduceKernels, FloatMinMaxIgnoreNaNLikeFmaxf) {
  float nan = std::nanf("");
  EXPECT_EQ(ReduceRanks<float>(ncclFloat32, ncclMax, {nan, 1.0f}), 1.0f);
  EXPECT_EQ(ReduceRanks<float>(ncclFloat32, ncclMin, {2.0f, nan}), 2.0f);
  EXPECT_EQ(ReduceRanks<float>(ncclFloat32, ncclMax, {-0.5f, -3.0f, -1.0f}), -0.5f);
  uint16_t h = ReduceRanks<uint16_t>(ncclFloat16, ncclMin, {kd::FloatToHalf(3), kd::FloatToHalf(-2)});
  EXPECT_EQ(kd::HalfToFloat(h), -2.0f);
}

TEST(ReduceKernels, SignedZerosAreOrderedInMaxAndMin) {
  // __hmax/__hmin: +0 > -0, whichever operand comes first.
  for (auto zeros : {std::vector<float>{-0.0f, 0.0f}, std::vector<float>{0.0f, -0.0f}}) {
    EXPECT_FALSE(std::signbit(ReduceRanks<float>(ncclFloat32, ncclMax, zeros)));
    EXPECT_TRUE(std::signbit(ReduceRanks<float>(ncclFloat32, ncclMin, zeros)));
  }
  uint16_t pz = kd::FloatToBf16(0.0f), nz = kd::FloatToBf16(-0.0f);
  EXPECT_EQ(ReduceRanks<uint16_t>(ncclBfloat16, ncclMax, {nz, pz}), pz);
  EXPECT_EQ(ReduceRanks<uint16_t>(ncclBfloat16, ncclMin, {pz, nz}), nz);
}

TEST(ReduceKernels, Fp8SumRoundsAfterEveryAdd) {
  // E4M3 spacing at 1 is 1/8: 1 + 1/16 is a tie that rounds to even (1), twice; the exact 1.125 is
  // representable, so one rounding at the end would give 1.125.
  uint8_t one = kd::FloatToE4M3(1.0f), sixteenth = kd::FloatToE4M3(0.0625f);
  EXPECT_EQ(kd::E4M3ToFloat(ReduceRanks<uint8_t>(ncclFloat8e4m3, ncclSum, {one, sixteenth, sixteenth})), 1.0f);
  EXPECT_EQ(kd::E4M3ToFloat(ReduceRanks<uint8_t>(ncclFloat8e4m3, ncclSum, {sixteenth, sixteenth, one})), 1.125f);
  // E5M2 spacing at 1 is 1/4.
  uint8_t q = kd::FloatToE5M2(0.125f), e5one = kd::FloatToE5M2(1.0f);
  EXPECT_EQ(kd::E5M2ToFloat(ReduceRanks<uint8_t>(ncclFloat8e5m2, ncclSum, {e5one, q, q})), 1.0f);
  EXPECT_EQ(kd::E5M2ToFloat(ReduceRanks<uint8_t>(ncclFloat8e5m2, ncclSum, {q, q, e5one})), 1.25f);
}

TEST(ReduceKernels, Fp8SaturatesToTheLargestFiniteValue) {
  // __nv_fp8_e4m3(__half) uses __NV_SATFINITE: 448 + 448 stays 448 (not NaN); E5M2's 57344 + 57344 overflows
  // half to infinity, which still narrows to 57344 (not infinity).
  uint8_t m4 = kd::FloatToE4M3(448.0f);
  EXPECT_EQ(ReduceRanks<uint8_t>(ncclFloat8e4m3, ncclSum, {m4, m4}), 0x7e);
  uint8_t m5 = kd::FloatToE5M2(57344.0f);
  EXPECT_EQ(ReduceRanks<uint8_t>(ncclFloat8e5m2, ncclSum, {m5, m5}), 0x7b);
  EXPECT_EQ(ReduceRanks<uint8_t>(ncclFloat8e5m2, ncclProd, {m5, kd::FloatToE5M2(-2.0f)}), 0xfb);
  // A NaN operand of max yields the other operand; E4M3's NaN is 0x7f.
  EXPECT_EQ(ReduceRanks<uint8_t>(ncclFloat8e4m3, ncclMax, {0x7f, m4}), m4);
}

TEST(ReduceKernels, Fp8AvgMultipliesByAnFp8Scalar) {
  // 1/3 in E4M3 is 0.34375 (0x2b): three ranks holding 3.0 give 3 * round(3 * 0.34375 = 1.03125) = 3 * 1.0.
  uint8_t three = kd::FloatToE4M3(3.0f);
  Reduction r = BuiltinReduction(ncclFloat8e4m3, ncclAvg, 3);
  EXPECT_EQ(r.op, DevOp::kPreMulSum);
  EXPECT_EQ(r.scalar, 0x2bu);
  EXPECT_EQ(kd::E4M3ToFloat(Chain<uint8_t>(r, {three, three, three})), 3.0f);
}

TEST(ReduceKernels, UserPreMulSumScalesEveryOperandInItsType) {
  // int8: 100 * 3 = 300 wraps to 44 per rank; 44 + 44 = 88.
  Reduction i8{ncclInt8, DevOp::kPreMulSum, 3, 2};
  EXPECT_EQ(Chain<int8_t>(i8, {100, 100}), 88);
  // half: 1.001 (1.0009765625) * 3 = 3.0029296875, a tie between 3.001953125 and 3.00390625 in binary16,
  // rounds to even (3.00390625) before the add; 3.00390625 + 3.00390625 = 6.0078125 is exact.
  uint16_t h = kd::FloatToHalf(1.001f);
  Reduction f16{ncclFloat16, DevOp::kPreMulSum, kd::FloatToHalf(3.0f), 2};
  EXPECT_EQ(kd::HalfToFloat(Chain<uint16_t>(f16, {h})), 3.00390625f);
  EXPECT_EQ(kd::HalfToFloat(Chain<uint16_t>(f16, {h, h})), 6.0078125f);
  // double: the scalar's bytes are used as they are.
  double two = 2.0;
  uint64_t bits;
  std::memcpy(&bits, &two, 8);
  Reduction f64{ncclFloat64, DevOp::kPreMulSum, bits, 3};
  EXPECT_EQ(Chain<double>(f64, {1.0, 2.5, -1.0}), 5.0);
}

TEST(ReduceKernels, NextPutsTheOwnOperandFirst) {
  // For sums the operand order cannot change bits; PreMulSum shows that only the incoming operand is scaled.
  Reduction r{ncclFloat32, DevOp::kPreMulSum, 0, 2};
  float k = 10.0f;
  std::memcpy(&r.scalar, &k, 4);
  float acc = 1.0f;  // a partial result received from the previous rank: not scaled again
  float own = 2.0f;
  ReduceNext(r, &acc, &own, 1);
  EXPECT_EQ(acc, 21.0f);
}

TEST(ReduceKernels, HalfProdRoundsToHalf) {
  // 1.5 * 1.5 * 1.5 = 3.375 exactly representable; 1.001 (rounded to half: 1.0009765625) squared is
  // 1.00195407867, which rounds to 1.001953125 in binary16.
  uint16_t a = kd::FloatToHalf(1.5f);
  EXPECT_EQ(kd::HalfToFloat(ReduceRanks<uint16_t>(ncclFloat16, ncclProd, {a, a, a})), 3.375f);
  uint16_t b = kd::FloatToHalf(1.001f);
  EXPECT_EQ(kd::HalfToFloat(ReduceRanks<uint16_t>(ncclFloat16, ncclProd, {b, b})), 1.001953125f);
}

TEST(ReduceKernels, WorksInPlaceOnLongVectors) {
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * static_cast<float>(i);
  }
  Reduction r = BuiltinReduction(ncclFloat32, ncclSum, 2);
  ReduceFirst(r, a.data(), a.data(), a.size());
  ReduceNext(r, a.data(), b.data(), a.size());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a[i], 1.5f * static_cast<float>(i)) << i;
}

}  // namespace
}  // namespace simgpu::nccl
