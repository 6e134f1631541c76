// accumulate.h against the independent re-implementation in accumulate_reference.h, bit for bit, for both Sum()
// and SumPanel(); plus parsing, the exit on malformed values, and the random order's properties.
#include "tools/simgpu/common/accumulate.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/accumulate_reference.h"

namespace simgpu {
namespace {

using testing_ref::RefSpec;
using testing_ref::RefSum;

// ---- helpers ---------------------------------------------------------------------------------------------------

AccumConfig Parse(const std::string& text) {
  AccumConfig c;
  std::string error;
  EXPECT_TRUE(ParseAccumConfig(text, &c, &error)) << text << ": " << error;
  return c;
}

template <typename T>
bool SameBits(T a, T b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

// Values representable in the operand format of each precision: FP8-like (4 significant bits) for kFp8, binary16
// for kFp16, FP32 otherwise; mixed magnitudes and signs so that the order matters.
std::vector<float> Operands(AccumPrecision p, size_t n, std::mt19937* rng) {
  std::uniform_real_distribution<float> mant(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-6, 6);
  std::vector<float> v(n);
  for (float& x : v) {
    float raw = std::ldexp(mant(*rng), exp(*rng));
    if (p == AccumPrecision::kFp8) {
      int e;
      std::frexp(raw, &e);
      float q = std::ldexp(1.0f, e - 4);
      x = std::round(raw / q) * q;
    } else if (p == AccumPrecision::kFp16) {
      x = static_cast<float>(static_cast<_Float16>(raw));
    } else {
      x = raw;
    }
  }
  return v;
}

const char* const kOrders[] = {"sequential", "pairwise", "blocked:1", "blocked:7", "blocked:64", "splitk:1",
                               "splitk:3",   "splitk:16", "splitk:1000", "random:0", "random:12345",
                               "random:18446744073709551615"};
const int64_t kKs[] = {0, 1, 2, 3, 5, 8, 13, 31, 64, 100, 257};

struct PrecisionCase {
  const char* name;
  AccumPrecision precision;
  int fp8_bits;
  int64_t interval;
};
const PrecisionCase kPrecisions[] = {
    {"fp32", AccumPrecision::kFp32, 0, 128},  {"fp64", AccumPrecision::kFp64, 0, 128},
    {"fp16", AccumPrecision::kFp16, 0, 128},  {"fp8_unset", AccumPrecision::kFp8, 0, 128},
    {"fp8_b14_n128", AccumPrecision::kFp8, 14, 128}, {"fp8_b10_n4", AccumPrecision::kFp8, 10, 4},
    {"fp8_b5_never", AccumPrecision::kFp8, 5, 0},
};

// ---- tests -----------------------------------------------------------------------------------------------------

TEST(AccumParse, AcceptsEveryDocumentedForm) {
  EXPECT_EQ(Parse("").order, AccumOrder::kSequential);
  EXPECT_EQ(Parse("sequential").order, AccumOrder::kSequential);
  EXPECT_EQ(Parse("pairwise").order, AccumOrder::kPairwise);
  EXPECT_EQ(Parse("blas").order, AccumOrder::kBlas);
  AccumConfig b = Parse("blocked:32");
  EXPECT_EQ(b.order, AccumOrder::kBlocked);
  EXPECT_EQ(b.param, 32);
  AccumConfig s = Parse("splitk:4");
  EXPECT_EQ(s.order, AccumOrder::kSplitK);
  EXPECT_EQ(s.param, 4);
  AccumConfig r = Parse("random:18446744073709551615");
  EXPECT_EQ(r.order, AccumOrder::kRandom);
  EXPECT_EQ(r.seed, 18446744073709551615ull);
}

TEST(AccumParse, RejectsMalformedValues) {
  for (const char* bad : {"Sequential", "sequential:1", "pairwise:2", "blocked", "blocked:", "blocked:0",
                          "blocked:-3", "blocked:4x", "splitk:0", "splitk: 2", "random", "random:",
                          "random:18446744073709551616", "random:-1", "blas:1", "fast", " sequential"}) {
    AccumConfig c;
    std::string error;
    EXPECT_FALSE(ParseAccumConfig(bad, &c, &error)) << bad;
    EXPECT_NE(error.find("expected"), std::string::npos) << bad << ": " << error;
  }
  int bits = 0;
  std::string error;
  EXPECT_TRUE(ParseFp8AccBits("14", &bits, &error));
  EXPECT_EQ(bits, 14);
  for (const char* bad : {"0", "24", "", "14 ", "-1", "x"}) EXPECT_FALSE(ParseFp8AccBits(bad, &bits, &error)) << bad;
}

TEST(AccumParseDeathTest, MalformedEnvironmentValueExitsWithStatus2) {
  EXPECT_EXIT(AccumConfigOrDie("blocked:0"), ::testing::ExitedWithCode(2),
              "malformed SIMGPU_ACCUM=\"blocked:0\"");
  EXPECT_EXIT(Fp8AccBitsOrDie("30"), ::testing::ExitedWithCode(2), "malformed SIMGPU_FP8_ACC_BITS=\"30\"");
  EXPECT_EQ(AccumConfigOrDie(nullptr).order, AccumOrder::kSequential);
  EXPECT_EQ(Fp8AccBitsOrDie(nullptr), 0);
}

class AccumOrders : public ::testing::TestWithParam<std::tuple<int, int>> {};

// Sum() and SumPanel() against the reference, bit for bit, for k from 0 to 257, several calls, and a panel whose
// shape is not a multiple of the kernels' tiles (m = 70, n = 6, padded leading dimensions).
TEST_P(AccumOrders, SumAndPanelMatchIndependentReferenceBitForBit) {
  const char* order = kOrders[std::get<0>(GetParam())];
  const PrecisionCase& pc = kPrecisions[std::get<1>(GetParam())];
  const AccumConfig config = Parse(order);
  std::mt19937 rng(std::get<0>(GetParam()) * 31 + std::get<1>(GetParam()));
  int mismatches = 0;
  for (int64_t k : kKs) {
    for (int64_t call : {0, 1, 7}) {
      RefSpec spec{config, pc.precision, pc.fp8_bits, pc.interval, call};
      AccumPlan plan(config, pc.precision, k, call, pc.fp8_bits, pc.interval);
      const int64_t m = 70, n = 6, lda = m + 3, ldb = k + 2, ldo = m + 1;
      if (pc.precision == AccumPrecision::kFp64) {
        std::uniform_real_distribution<double> dist(-1.0, 1.0);
        std::vector<double> a(lda * std::max<int64_t>(k, 1)), b(ldb * n), out(ldo * n, -7.0);
        for (double& v : a) v = std::ldexp(dist(rng), static_cast<int>(rng() % 20) - 10);
        for (double& v : b) v = dist(rng);
        plan.SumPanel(m, n, a.data(), lda, b.data(), ldb, out.data(), ldo);
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t i = 0; i < m; ++i) {
            std::vector<double> x(k);
            for (int64_t p = 0; p < k; ++p) x[p] = a[i + p * lda] * b[p + j * ldb];
            const double want = RefSum(spec, x);
            mismatches += !SameBits(out[i + j * ldo], want);
            mismatches += !SameBits(plan.Sum(x.data()), want);
          }
          mismatches += !SameBits(out[m + j * ldo], -7.0);  // padding untouched
        }
      } else {
        std::vector<float> a = Operands(pc.precision, lda * std::max<int64_t>(k, 1), &rng);
        std::vector<float> b = Operands(pc.precision, ldb * n, &rng);
        std::vector<float> out(ldo * n, -7.0f);
        plan.SumPanel(m, n, a.data(), lda, b.data(), ldb, out.data(), ldo);
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t i = 0; i < m; ++i) {
            std::vector<float> xf(k);
            std::vector<double> x(k);
            for (int64_t p = 0; p < k; ++p) {
              xf[p] = a[i + p * lda] * b[p + j * ldb];
              x[p] = xf[p];
            }
            const float want = static_cast<float>(RefSum(spec, x));
            mismatches += !SameBits(out[i + j * ldo], want);
            mismatches += !SameBits(plan.Sum(xf.data()), want);
          }
          mismatches += !SameBits(out[m + j * ldo], -7.0f);
        }
      }
      ASSERT_EQ(mismatches, 0) << order << " " << pc.name << " k=" << k << " call=" << call;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, AccumOrders,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kOrders))),
                                            ::testing::Range(0, static_cast<int>(std::size(kPrecisions)))),
                         [](const ::testing::TestParamInfo<AccumOrders::ParamType>& info) {
                           std::string name = std::string(kOrders[std::get<0>(info.param)]) + "_" +
                                              kPrecisions[std::get<1>(info.param)].name;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Sums whose rounding depends on the order: many positive terms with full-width significands, so every partial
// sum rounds.
std::vector<float> OrderSensitive(int k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(k);
  for (float& v : x) v = dist(rng);
  return x;
}

TEST(AccumRandom, OrderDiffersBetweenCallsAndIsReproducible) {
  const AccumConfig config = Parse("random:99");
  const std::vector<float> x = OrderSensitive(512, 1);
  std::vector<uint32_t> sums;
  for (int64_t call = 0; call < 8; ++call) {
    float s = AccumPlan(config, AccumPrecision::kFp32, 512, call).Sum(x.data());
    float again = AccumPlan(config, AccumPrecision::kFp32, 512, call).Sum(x.data());
    EXPECT_TRUE(SameBits(s, again)) << call;
    uint32_t bits;
    memcpy(&bits, &s, 4);
    sums.push_back(bits);
    EXPECT_NE(RandomOrder(99, call, 512), RandomOrder(99, call + 1, 512));
  }
  std::sort(sums.begin(), sums.end());
  EXPECT_GE(std::unique(sums.begin(), sums.end()) - sums.begin(), 4) << "8 calls gave too few distinct sums";
  EXPECT_NE(RandomOrder(99, 0, 512), RandomOrder(100, 0, 512));
  std::vector<int64_t> pi = RandomOrder(99, 3, 512);
  std::sort(pi.begin(), pi.end());
  for (int64_t q = 0; q < 512; ++q) ASSERT_EQ(pi[q], q);  // a permutation
}

TEST(AccumOrdersDiffer, EveryOrderGivesADifferentRoundingOnSensitiveData) {
  const std::vector<float> x = OrderSensitive(20000, 2);
  std::vector<uint32_t> sums;
  for (const char* order : {"sequential", "pairwise", "blocked:16", "splitk:5", "random:5"}) {
    float s = AccumPlan(Parse(order), AccumPrecision::kFp32, 20000, 0).Sum(x.data());
    uint32_t bits;
    memcpy(&bits, &s, 4);
    sums.push_back(bits);
  }
  std::sort(sums.begin(), sums.end());
  EXPECT_EQ(std::unique(sums.begin(), sums.end()) - sums.begin(), 5);
}

TEST(AccumPrecisionTest, Fp16AccumulationStallsAt2048) {
  // 3000 ones: in binary16, 2048 + 1 is a tie between 2048 and 2050 and rounds to the even 2048.
  std::vector<float> ones(3000, 1.0f);
  EXPECT_EQ(AccumPlan(AccumConfig{}, AccumPrecision::kFp16, 3000, 0).Sum(ones.data()), 2048.0f);
  EXPECT_EQ(AccumPlan(AccumConfig{}, AccumPrecision::kFp32, 3000, 0).Sum(ones.data()), 3000.0f);
  // Pairwise keeps every partial a power of two up to 2048, then adds exactly representable blocks.
  EXPECT_EQ(AccumPlan(Parse("pairwise"), AccumPrecision::kFp16, 3000, 0).Sum(ones.data()), 3000.0f);
  // 65504 + 32 overflows binary16 to infinity.
  std::vector<float> big = {65504.0f, 32.0f};
  EXPECT_TRUE(std::isinf(AccumPlan(AccumConfig{}, AccumPrecision::kFp16, 2, 0).Sum(big.data())));
}

TEST(AccumPrecisionTest, Fp8PartialIsTruncatedAndPromoted) {
  // 1 followed by 15 terms of 2^-5: with 4 fraction bits, 1 + 2^-5 truncates to 1 and the partial never moves.
  std::vector<float> x(16, std::ldexp(1.0f, -5));
  x[0] = 1.0f;
  const float exact = 1.0f + 15 * std::ldexp(1.0f, -5);
  EXPECT_EQ(AccumPlan(AccumConfig{}, AccumPrecision::kFp8, 16, 0, 4, 0).Sum(x.data()), 1.0f);
  // Promoting after every product adds each term in FP32: exact.
  EXPECT_EQ(AccumPlan(AccumConfig{}, AccumPrecision::kFp8, 16, 0, 4, 1).Sum(x.data()), exact);
  // Promotion every 8: the first partial is stuck at 1, the second sums 8 * 2^-5 = 0.25 exactly.
  EXPECT_EQ(AccumPlan(AccumConfig{}, AccumPrecision::kFp8, 16, 0, 4, 8).Sum(x.data()), 1.25f);
  // Truncation is toward zero for negative partials too: -1 - 2^-5 -> -1.
  std::vector<float> neg = {-1.0f, -std::ldexp(1.0f, -5)};
  EXPECT_EQ(AccumPlan(AccumConfig{}, AccumPrecision::kFp8, 2, 0, 4, 0).Sum(neg.data()), -1.0f);
  // Unset bits: plain FP32.
  EXPECT_EQ(AccumPlan(AccumConfig{}, AccumPrecision::kFp8, 16, 0, 0).Sum(x.data()), exact);
}

TEST(AccumBlas, HostBlasPanelIsWithinTheFp32Bound) {
  const AccumPlan plan(Parse("blas"), AccumPrecision::kFp32, 300, 0);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int m = 37, n = 29, k = 300;
  std::vector<float> a(m * k), b(k * n), out(m * n);
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  plan.SumPanel(m, n, a.data(), m, b.data(), k, out.data(), m);
  const double gamma = k * std::ldexp(1.0, -24) / (1 - k * std::ldexp(1.0, -24));
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double ref = 0, mag = 0;
      for (int p = 0; p < k; ++p) {
        ref += static_cast<double>(a[i + p * m]) * b[p + j * k];
        mag += std::fabs(static_cast<double>(a[i + p * m]) * b[p + j * k]);
      }
      ASSERT_LE(std::fabs(out[i + j * m] - ref), gamma * mag) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace simgpu
