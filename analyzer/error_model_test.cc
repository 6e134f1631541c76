// The error-model registry and parameters, and reduce.deterministic against measured error: random all-reduces
// computed the ways NCCL may compute them (ring in the dtype from any start rank, tree, random order, FP32
// accumulation with one final rounding; avg by premultiplying with 1/n or dividing the sum) never exceed the
// bound. Prints the tightness per configuration.
#include "analyzer/error_model.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analyzer/collective_check.h"
#include "analyzer/element_stats.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using testing::RoundTo;

TEST(ErrorModelTest, RegistryNamesAreUniqueAndResolvable) {
  std::set<std::string> names;
#define TTRACE_CHECK_MODEL(id, str, summary)                       \
  EXPECT_STREQ(GetErrorModel(ErrorModelId::id).name, str);          \
  EXPECT_TRUE(names.insert(str).second) << "duplicate model " << str;
  TTRACE_ERROR_MODELS(TTRACE_CHECK_MODEL)
#undef TTRACE_CHECK_MODEL
  EXPECT_EQ(names.count("gemm.deterministic"), 1u);
}

TEST(ErrorModelTest, ThetaIsGammaToFirstOrderAndAlwaysFinite) {
  const double u = 0x1p-24;
  for (double n : {1.0, 10.0, 4096.0, 1e6}) {
    const double gamma = n * u / (1 - n * u);
    EXPECT_LE(Theta(u, n), gamma);
    EXPECT_GT(Theta(u, n), n * u * (1 - 1e-6) * (1 - n * u));
  }
  EXPECT_TRUE(std::isfinite(Theta(0x1p-11, 4096)));  // n·u = 2: γ_n undefined, θ_n fine
  EXPECT_GT(Theta(0x1p-11, 4096), 1.0);
  EXPECT_EQ(Theta(0, 100), 0.0);
}

TEST(ErrorModelTest, FormatParameters) {
  EXPECT_EQ(FormatOf(DType::kF32).u, 0x1p-24);
  EXPECT_EQ(FormatOf(DType::kF16).u, 0x1p-11);
  EXPECT_EQ(FormatOf(DType::kBF16).u, 0x1p-8);
  EXPECT_EQ(FormatOf(DType::kF64).u, 0x1p-53);
  EXPECT_EQ(FormatOf(DType::kE4M3).u, 0x1p-4);
  EXPECT_EQ(FormatOf(DType::kE5M2).u, 0x1p-3);
  EXPECT_EQ(FormatOf(DType::kF16).max_finite, 65504.0);
  EXPECT_EQ(FormatOf(DType::kI32).u, 0.0);
  EXPECT_EQ(Tf32Format().u, 0x1p-10);
}

// GemmBound::Affine (the FP32 slices' pass test evaluates the bound through it) is Bound() written out: equal to
// it to 2^-42 relative on random terms (the pass test keeps a margin of 2^-40), for precisions with input
// conversion (TF32, FP16), 16-bit outputs, α, β.
TEST(ErrorModelTest, AffineBoundIsTheBound) {
  const uint16_t kEx = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> e(-30, 30);
  int checked = 0;
  for (int32_t compute : {68, 74, 75, 64}) {
    for (DType out : {DType::kF32, DType::kBF16, DType::kF16}) {
      const DType in = compute == 64 ? DType::kF16 : DType::kF32;
      auto p = ResolveGemmPrecision(kEx, compute, 0, in, in, compute == 64 ? DType::kF16 : out);
      ASSERT_TRUE(p.ok()) << p.status();
      for (double alpha : {1.0, -2.5, 0.0}) {
        for (double beta : {0.0, 0.75}) {
          const GemmBound bound(*p, 700, alpha, beta);
          const GemmBoundAffine aff = bound.Affine();
          for (int t = 0; t < 50; ++t) {
            GemmElementTerms x;
            x.abs_ab = std::exp2(e(rng));
            x.abs_row_a = std::exp2(e(rng));
            x.abs_col_b = std::exp2(e(rng));
            x.abs_c0 = t % 3 == 0 ? 0 : std::exp2(e(rng));
            x.ref = (t % 2 ? -1 : 1) * std::exp2(e(rng));
            const double b = bound.Bound(x);
            EXPECT_NEAR(aff.At(x.abs_ab, x.abs_row_a + x.abs_col_b, x.abs_c0, std::fabs(x.ref)), b, 0x1p-42 * b);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * 3 * 2 * 50);
}

TEST(ErrorModelTest, ResolvesComputeTypesAndMathModes) {
  constexpr uint16_t kEx = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);
  constexpr uint16_t kS = static_cast<uint16_t>(format::ApiId::kCublasSgemm);
  auto p = ResolveGemmPrecision(kEx, 68, 0, DType::kF32, DType::kF32, DType::kF32);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->acc.u, 0x1p-24);
  EXPECT_EQ(p->u_in, 0.0);
  EXPECT_EQ(p->u_out, 0.0);  // FP32 accumulator to FP32 C: no extra rounding
  p = ResolveGemmPrecision(kEx, 68, 3, DType::kF32, DType::kF32, DType::kF32);  // TF32 tensor op math
  EXPECT_EQ(p->u_in, 0x1p-10);
  p = ResolveGemmPrecision(kEx, 68, 3 | 16, DType::kBF16, DType::kBF16, DType::kBF16);  // TF32 moot for BF16
  EXPECT_EQ(p->u_in, 0.0);
  EXPECT_EQ(p->u_out, 0x1p-8);
  p = ResolveGemmPrecision(kEx, 69, 3, DType::kF32, DType::kF32, DType::kF32);  // pedantic: no TF32
  EXPECT_EQ(p->u_in, 0.0);
  p = ResolveGemmPrecision(kEx, 0, 2, DType::kF32, DType::kF32, DType::kF32);  // legacy CUDA_R_32F, pedantic
  EXPECT_EQ(p->u_in, 0.0);
  p = ResolveGemmPrecision(kS, 12345, -1, DType::kF32, DType::kF32, DType::kF32);  // math mode unknown
  EXPECT_EQ(p->u_in, 0x1p-10);
  EXPECT_NE(p->description.find("TF32 assumed"), std::string::npos);
  p = ResolveGemmPrecision(kEx, 74, 0, DType::kF32, DType::kF32, DType::kF32);
  EXPECT_EQ(p->in_max, 65504.0);
  p = ResolveGemmPrecision(kEx, 75, 0, DType::kF32, DType::kF32, DType::kF32);
  EXPECT_EQ(p->u_in, 0x1p-8);
  p = ResolveGemmPrecision(kEx, 64, 0, DType::kF16, DType::kF16, DType::kF16);
  EXPECT_EQ(p->acc.u, 0x1p-11);
  EXPECT_EQ(p->u_out, 0.0);
  p = ResolveGemmPrecision(kEx, 2, 0, DType::kF16, DType::kF16, DType::kF16);  // legacy CUDA_R_16F
  EXPECT_EQ(p->acc.u, 0x1p-11);
  p = ResolveGemmPrecision(kEx, 78, 0, DType::kF32, DType::kF32, DType::kF32);
  EXPECT_EQ(p->products_per_term, 9.0);
  p = ResolveGemmPrecision(kEx, 72, 0, DType::kI8, DType::kI8, DType::kI32);
  EXPECT_EQ(p->acc.u, 0.0);
  EXPECT_FALSE(ResolveGemmPrecision(kEx, 79, 0, DType::kF64, DType::kF64, DType::kF64).ok());
  EXPECT_FALSE(ResolveGemmPrecision(kEx, 70, 8, DType::kF64, DType::kF64, DType::kF64).ok());
  EXPECT_FALSE(ResolveGemmPrecision(kEx, 999, 0, DType::kF32, DType::kF32, DType::kF32).ok());
  EXPECT_FALSE(ResolveGemmPrecision(kEx, 68, 0, DType::kInvalid, DType::kF32, DType::kF32).ok());
}

TEST(ErrorModelTest, GemmBoundTerms) {
  auto p = ResolveGemmPrecision(3, 68, 0, DType::kBF16, DType::kBF16, DType::kBF16);
  ASSERT_TRUE(p.ok());
  const GemmBound b(*p, 100, 1, 0);
  GemmElementTerms t;
  t.ref = 10;
  t.abs_ab = 20;
  // (1+u_out)·θ_102(2^-24)·20 + u_out·10 + tiny terms.
  const double expect = (1 + 0x1p-8) * Theta(0x1p-24, 102) * 20 + 0x1p-8 * 10;
  EXPECT_NEAR(b.Bound(t), expect, expect * 1e-6);
  EXPECT_FALSE(b.OverflowPossible(t));
  t.abs_ab = 3e38;  // partial sums stay below FLT_MAX even with every rounding up
  EXPECT_FALSE(b.OverflowPossible(t));
  t.abs_ab = 3.5e38;
  EXPECT_TRUE(b.OverflowPossible(t));
}

TEST(ErrorModelTest, AlphaZeroBoundDoesNotGrowWithK) {
  // α = 0: D = β·C0, no accumulation over k; the bound is the same for k = 1 and k = 2^50, and a few units of
  // FP32 roundoff of |β·C0|.
  auto p = ResolveGemmPrecision(3, 68, 0, DType::kF32, DType::kF32, DType::kF32);
  ASSERT_TRUE(p.ok());
  GemmElementTerms t;
  t.ref = 0.75;
  t.abs_c0 = 1.5;
  const GemmBound small(*p, 1, 0, 0.5), huge(*p, int64_t{1} << 50, 0, 0.5);
  EXPECT_TRUE(huge.finite());
  EXPECT_EQ(small.Bound(t), huge.Bound(t));
  EXPECT_LT(huge.Bound(t), 8 * 0x1p-24 * 0.75);
  EXPECT_GT(huge.Bound(t), 0x1p-24 * 0.75);
  // With α != 0 the same k has no finite bound.
  EXPECT_FALSE(GemmBound(*p, int64_t{1} << 50, 1, 0.5).finite());
}

// Reduction orders of a real NCCL.
enum class Way { kRing, kTree, kRandom, kWide, kCount };
const char* kWayNames[] = {"ring", "tree", "random", "fp32+round"};

double Reduce(ReduceOp op, DType dt, const std::vector<double>& x, Way way, bool premul, std::mt19937_64& rng) {
  const size_t n = x.size();
  auto rd = [&](double v) { return RoundTo(dt, v); };
  if (op == ReduceOp::kMax) return *std::max_element(x.begin(), x.end());
  if (op == ReduceOp::kMin) return *std::min_element(x.begin(), x.end());
  std::vector<double> v = x;
  if (op == ReduceOp::kAvg && premul) {
    const double inv = rd(1.0 / static_cast<double>(n));
    for (double& e : v) e = rd(e * inv);
  }
  const bool prod = op == ReduceOp::kProd;
  auto combine = [&](double a, double b, bool wide) {
    const double r = prod ? a * b : a + b;
    return wide && dt != DType::kF64 ? RoundTo(DType::kF32, r) : rd(r);
  };
  double r = 0;
  switch (way) {
    case Way::kRing: {
      const size_t start = rng() % n;
      r = v[start];
      for (size_t i = 1; i < n; ++i) r = combine(r, v[(start + i) % n], false);
      break;
    }
    case Way::kRandom:
      std::shuffle(v.begin(), v.end(), rng);
      r = v[0];
      for (size_t i = 1; i < n; ++i) r = combine(r, v[i], false);
      break;
    case Way::kTree:
      while (v.size() > 1) {
        std::vector<double> next;
        for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(combine(v[i], v[i + 1], false));
        if (v.size() % 2) next.push_back(v.back());
        v = next;
      }
      r = v[0];
      break;
    case Way::kWide:
      r = v[0];
      for (size_t i = 1; i < n; ++i) r = combine(r, v[i], true);
      r = rd(r);
      break;
    case Way::kCount:
      break;
  }
  if (op == ReduceOp::kAvg && !premul) r = rd(r / static_cast<double>(n));
  return r;
}

// Tightness table, measured below (seed 11, 60 trials x 256 elements per dtype and op): for sum, avg and prod in
// each dtype, {the largest clean err/bound, the smallest over the four ways and two rank ranges of the largest
// clean err/bound in that cell}. The maximum and every cell must reach kReduceTightness of them, so a bound made
// 2x looser fails; none may exceed 1. (FP64 sums and products of few ranks are often exact: their cells are 0.)
constexpr double kReduceTightness = 0.6;
constexpr int kRankRanges = 2;  // n <= 4, n >= 5
const DType kReduceTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
const double kReduceMeasured[4][3][2] = {  // [FP32, FP16, BF16, FP64][sum, avg, prod][max, min over cells]
    {{0.497, 0.246}, {0.394, 0.212}, {0.525, 0.442}},
    {{0.493, 0.149}, {0.473, 0.196}, {0.596, 0.193}},
    {{0.493, 0.174}, {0.376, 0.218}, {0.602, 0.195}},
    {{0.207, 0}, {0.342, 0.166}, {0.394, 0}},
};

// ElementStats::Merge: elements split at random between two stats, each filled in index order, then merged, give
// every field that one stats filled with all of them in index order gives. Ratios repeat (bounds from a few values,
// errors on a grid) so that the worst element is decided by its index; violations, Inf/NaN and zero bounds included.
TEST(ElementStatsTest, MergeIsAddingInIndexOrder) {
  std::mt19937_64 rng(11);
  const double kNaN = std::nan(""), kInf = HUGE_VAL;
  for (int trial = 0; trial < 400; ++trial) {
    ElementStats all, even, odd;
    const int count = static_cast<int>(rng() % 40);
    for (int x = 0; x < count; ++x) {
      const double ref = static_cast<double>(rng() % 5) - 2;
      double got = ref + 0.25 * static_cast<double>(rng() % 5) - 0.5;
      const double bound = std::array<double, 4>{0, 0.25, 0.5, 1}[rng() % 4];
      if (rng() % 25 == 0) got = rng() % 2 ? kNaN : kInf;
      const bool overflow = rng() % 3 == 0;
      const uint64_t index = static_cast<uint64_t>(x) * 3 + 100;
      all.Add(index, got, ref, bound, overflow);
      (rng() % 2 ? odd : even).Add(index, got, ref, bound, overflow);
    }
    ElementStats merged = even;
    merged.Merge(odd);
    const std::string what = "trial " + std::to_string(trial);
    EXPECT_EQ(merged.elements, all.elements) << what;
    EXPECT_EQ(merged.violations, all.violations) << what;
    EXPECT_EQ(merged.nonfinite_violations, all.nonfinite_violations) << what;
    EXPECT_EQ(merged.max_abs_err, all.max_abs_err) << what;
    EXPECT_EQ(merged.max_rel_err, all.max_rel_err) << what;
    EXPECT_EQ(merged.worst_ratio, all.worst_ratio) << what;
    EXPECT_EQ(merged.worst_bound, all.worst_bound) << what;
    EXPECT_EQ(merged.worst_index, all.worst_index) << what;
    EXPECT_EQ(merged.has_violation, all.has_violation) << what;
    EXPECT_EQ(merged.first_index, all.first_index) << what;
    EXPECT_EQ(merged.first_bound, all.first_bound) << what;
    EXPECT_EQ(merged.first_ref, all.first_ref) << what;
    EXPECT_TRUE(merged.first_got == all.first_got || (std::isnan(merged.first_got) && std::isnan(all.first_got)))
        << what;
  }
}

TEST(ReduceBoundTest, NeverExceededByMeasuredErrorAndNotLooserThanMeasured) {
  std::mt19937_64 rng(11);
  for (int ti = 0; ti < 4; ++ti) {
    const DType dt = kReduceTypes[ti];
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin}) {
      double max_ratio = 0;
      double cell[static_cast<int>(Way::kCount)][kRankRanges] = {};
      int reductions = 0;
      for (int trial = 0; trial < 60; ++trial) {
        const int n = 2 + static_cast<int>(rng() % 15);
        const ReduceBound bound(FormatOf(dt), op, n);
        std::uniform_real_distribution<double> u(-1, 1), g(0.5, 2);
        for (uint64_t e = 0; e < 256; ++e) {
          std::vector<double> x(static_cast<size_t>(n));
          const int scale = static_cast<int>(rng() % 9) - 4;
          for (double& v : x) {
            v = op == ReduceOp::kProd ? (rng() % 2 ? -1 : 1) * g(rng) : std::ldexp(u(rng), scale);
            if (e % 64 == 3) v = std::ldexp(u(rng), dt == DType::kF16 ? -20 : -130);  // underflow
            v = RoundTo(dt, v);
          }
          const Way way = static_cast<Way>(rng() % static_cast<int>(Way::kCount));
          const double got = Reduce(op, dt, x, way, rng() % 2, rng);
          const ReduceElementTerms t = ReduceReference(op, x);
          ElementStats st;
          if (st.Add(e, got, t.ref, bound.Bound(t), bound.OverflowPossible(t)))
            ADD_FAILURE() << FormatOf(dt).name << " " << ReduceOpName(op) << " n=" << n << " way=" << kWayNames[int(way)]
                          << " got " << got << " ref " << t.ref << " bound " << bound.Bound(t);
          ++reductions;
          if (!std::isfinite(st.worst_ratio)) continue;
          max_ratio = std::max(max_ratio, st.worst_ratio);
          double& c = cell[int(way)][n <= 4 ? 0 : 1];
          c = std::max(c, st.worst_ratio);
        }
      }
      double lowest = HUGE_VAL;
      for (auto& way_cells : cell)
        for (double c : way_cells) lowest = std::min(lowest, c);
      printf("[tightness] allreduce %-5s %-4s %5d elements: max err/bound %.3g, min over (way, n range) %.3g\n",
             FormatOf(dt).name, ReduceOpName(op), reductions, max_ratio, lowest);
      EXPECT_LE(max_ratio, 1.0);
      const int oi = op == ReduceOp::kSum ? 0 : op == ReduceOp::kAvg ? 1 : op == ReduceOp::kProd ? 2 : -1;
      if (oi < 0) continue;
      EXPECT_GE(max_ratio, kReduceTightness * kReduceMeasured[ti][oi][0])
          << FormatOf(dt).name << " " << ReduceOpName(op) << ": the bound is looser than measured";
      for (int w = 0; w < static_cast<int>(Way::kCount); ++w)
        for (int nr = 0; nr < kRankRanges; ++nr)
          EXPECT_GE(cell[w][nr], kReduceTightness * kReduceMeasured[ti][oi][1])
              << FormatOf(dt).name << " " << ReduceOpName(op) << " " << kWayNames[w] << (nr ? " n>=5" : " n<=4")
              << ": the bound is looser than measured";
    }
  }
}

TEST(ReduceBoundTest, BoundBeyondRangeIsInfiniteNotNaN) {
  // E5M2 sum over 7000 ranks: θ_{n-1}(2^-3) overflows to +Inf; all-zero inputs must not make Inf·0 = NaN.
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kProd}) {
    const ReduceBound bound(FormatOf(DType::kE5M2), op, 7000);
    const double b = bound.Bound(ReduceReference(op, std::vector<double>(7000, 0.0)));
    EXPECT_EQ(b, HUGE_VAL) << ReduceOpName(op);
  }
}

}  // namespace
}  // namespace ttrace::analyzer

namespace ttrace::analyzer {
namespace {

// gemm.probabilistic's λ and γ̃ (Higham & Mary 2019) against values worked out by hand: λ = √(2·ln(2n/2^-40))/(1-u),
// and the √k bound replaces θ_k only where it is smaller (k above about λ² ≈ 70).
TEST(GemmProbabilisticBound, LambdaAndGammaTilde) {
  const double u = 0x1p-24;
  EXPECT_NEAR(ProbabilisticLambda(66, u, kProbabilisticFailure), 8.07, 0.01);
  EXPECT_NEAR(ProbabilisticLambda(4098, u, kProbabilisticFailure), 8.57, 0.01);
  EXPECT_NEAR(ProbabilisticLambda(16386, u, kProbabilisticFailure), 8.73, 0.01);
  EXPECT_NEAR(GammaTilde(4098, u, 8.57) / (8.57 * 64.0156 * u), 1.0, 1e-4);
  auto prec = ResolveGemmPrecision(static_cast<uint16_t>(format::ApiId::kCublasGemmEx), 68, 0, format::DType::kF32,
                                   format::DType::kF32, format::DType::kF32);
  ASSERT_TRUE(prec.ok());
  GemmElementTerms t;
  t.abs_ab = 1;
  for (int64_t k : {16, 64, 4096, 16384}) {
    const double det = GemmBound(*prec, k, 1, 0).Bound(t), prob = GemmBound(*prec, k, 1, 0, BoundKind::kProbabilistic).Bound(t);
    const double n = static_cast<double>(k + 2), lambda = ProbabilisticLambda(n, u, kProbabilisticFailure);
    EXPECT_NEAR(prob / det, std::min(1.0, lambda / std::sqrt(n)), 0.01) << "k=" << k;
  }
}

}  // namespace
}  // namespace ttrace::analyzer
