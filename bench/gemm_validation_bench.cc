// GEMM error-model validation and detection, as a benchmark (not a unit test; a 300-GEMM sample runs in ctest as
// gemm_validation_sample). Usage:
//   gemm_validation_bench validate [GEMMS] [SEED]   random GEMMs computed as devices compute them, judged under
//       gemm.deterministic and gemm.probabilistic: false positives (exit 1 on any under the deterministic bound, or
//       over the probabilistic bound's stated rate) and the tightness table (median, p99, max of clean err/bound).
//       GEMMs of 16-bit inputs are also judged by full replay in FP32 slices with P bounded only, the slices by SGEMM
//       and by the vdpbf16ps kernel (where the CPU has it; BF16 inputs): exit 1 on a false positive or a verdict
//       unlike full replay's.
//   gemm_validation_bench detect N [TRIALS] [K] [f32|bf16]  detection rate by bit position: single-bit flips of one output
//       element of an N x N x N GEMM (FP32 and BF16): full replay, projection and the default (auto) side by side.
// Shapes: m, n in 1..8, k log-uniform in 1..16384 (plus the detection sizes); dtypes FP32, BF16 -> FP32, FP16 ->
// FP32, BF16, FP16 with FP32 accumulation; inputs normal, uniform, heavy-tailed (log-normal magnitudes, σ = 2) or
// cancelling (pairs x, -x·(1 + 2^-10·r)); orders sequential, reversed, pairwise, blocked (32), split-k (4 parts
// summed sequentially), each product and sum rounded to FP32, the output rounded to its type. The reference
// orders are this program's own, independent of simgpu and of the analyzer's arithmetic.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "analyzer/blas.h"
#include "analyzer/error_model.h"
#include "analyzer/gemm_check.h"
#include "analyzer/test_util.h"

namespace {

using ttrace::analyzer::BoundKind;
using ttrace::analyzer::GemmCheckOptions;
using ttrace::analyzer::GemmMethod;
using ttrace::analyzer::GemmPrecision;
using ttrace::analyzer::GemmProblem;
using ttrace::format::DType;
namespace testing = ttrace::analyzer::testing;

constexpr uint16_t kGemmEx = static_cast<uint16_t>(ttrace::format::ApiId::kCublasGemmEx);

struct Type {
  const char* name;
  DType in, out;
};
const Type kTypes[] = {{"f32", DType::kF32, DType::kF32},
                       {"bf16->f32", DType::kBF16, DType::kF32},
                       {"f16->f32", DType::kF16, DType::kF32},
                       {"bf16", DType::kBF16, DType::kBF16},
                       {"f16", DType::kF16, DType::kF16}};
const char* kDists[] = {"normal", "uniform", "heavy", "cancel"};
const char* kOrders[] = {"sequential", "reversed", "pairwise", "blocked32", "splitk4"};

GemmPrecision Precision(const Type& t) {
  auto p = ttrace::analyzer::ResolveGemmPrecision(kGemmEx, 68, 0, t.in, t.in, t.out);
  if (!p.ok()) abort();
  return *p;
}

float Sum(const std::vector<float>& v, size_t lo, size_t hi, int order) {
  float s = 0;
  if (order == 1) {
    for (size_t l = hi; l > lo; --l) s += v[l - 1];
  } else if (order == 2) {
    if (hi - lo <= 2) {
      for (size_t l = lo; l < hi; ++l) s += v[l];
    } else {
      const size_t mid = lo + (hi - lo) / 2;
      s = Sum(v, lo, mid, 2) + Sum(v, mid, hi, 2);
    }
  } else if (order == 3) {
    for (size_t b = lo; b < hi; b += 32) s += Sum(v, b, std::min(hi, b + 32), 0);
  } else if (order == 4) {
    const size_t part = (hi - lo + 3) / 4;
    for (size_t b = lo; b < hi; b += std::max<size_t>(part, 1)) s += Sum(v, b, std::min(hi, b + part), 0);
  } else {
    for (size_t l = lo; l < hi; ++l) s += v[l];
  }
  return s;
}

double Draw(std::mt19937_64& rng, int dist) {
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> u(-1, 1);
  if (dist == 0) return normal(rng);
  if (dist == 1) return u(rng);
  if (dist == 2) return (rng() & 1 ? 1 : -1) * std::exp(2 * normal(rng));
  return u(rng);
}

// op(A) m x k and op(B) k x n (no transposes), C = A·B computed in `order`, rounded to the output type.
GemmProblem Device(std::mt19937_64& rng, int64_t m, int64_t n, int64_t k, const Type& t, int dist, int order) {
  GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.alpha = 1, p.beta = 0;
  p.a.resize(static_cast<size_t>(m * k));
  p.b.resize(static_cast<size_t>(k * n));
  for (auto& v : p.a) v = testing::RoundTo(t.in, Draw(rng, dist));
  for (auto& v : p.b) v = testing::RoundTo(t.in, Draw(rng, dist));
  if (dist == 3) {  // cancellation: B's rows in pairs x, -x·(1 + 2^-10·r), A's in pairs y, y
    std::uniform_real_distribution<double> u(-1, 1);
    for (int64_t l = 0; l + 1 < k; l += 2) {
      for (int64_t j = 0; j < n; ++j)
        p.b[l + 1 + j * k] = testing::RoundTo(t.in, -p.b[l + j * k] * (1 + 0x1p-10 * u(rng)));
      for (int64_t i = 0; i < m; ++i) p.a[i + (l + 1) * m] = p.a[i + l * m];
    }
  }
  p.c_out.resize(static_cast<size_t>(m * n));
  std::vector<float> prod(static_cast<size_t>(k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t l = 0; l < k; ++l)
        prod[l] = static_cast<float>(p.a[i + l * m]) * static_cast<float>(p.b[l + j * k]);
      p.c_out[i + j * m] = testing::RoundTo(t.out, Sum(prod, 0, prod.size(), order));
    }
  return p;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

int Validate(int gemms, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> logk(0, std::log(16384.0));
  // [type][bound]: per-GEMM max err/bound of clean GEMMs, false positives, elements.
  std::vector<double> ratios[std::size(kTypes)][2], large_k[std::size(kTypes)][2];  // all k; k >= 1024
  uint64_t false_pos[std::size(kTypes)][2] = {}, elements[std::size(kTypes)] = {};
  // Full replay in FP32 slices with P only bounded (16-bit inputs): false positives, GEMMs whose violation count
  // differs from FP64 full replay's (the method's claim: the same verdicts), elements recomputed in FP64, and the
  // largest reported err/bound (at P's lower end).
  // [dtypes][0: the slices by SGEMM, 1: by the vdpbf16ps kernel where the CPU has it and the values are BF16]
  uint64_t slices_gemms[std::size(kTypes)][2] = {}, slices_fp[std::size(kTypes)][2] = {},
           slices_diff[std::size(kTypes)][2] = {}, slices_recomputed[std::size(kTypes)][2] = {},
           slices_dot[std::size(kTypes)][2] = {};
  double slices_max[std::size(kTypes)][2] = {};
  const auto start = std::chrono::steady_clock::now();
  for (int g = 0; g < gemms; ++g) {
    const size_t ti = static_cast<size_t>(g) % std::size(kTypes);
    const Type& t = kTypes[ti];
    const int dist = static_cast<int>((g / std::size(kTypes)) % 4), order = static_cast<int>(rng() % 5);
    const int64_t m = 1 + static_cast<int64_t>(rng() % 8), n = 1 + static_cast<int64_t>(rng() % 8);
    const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(std::exp(logk(rng))));
    const GemmProblem p = Device(rng, m, n, k, t, dist, order);
    elements[ti] += static_cast<uint64_t>(m * n);
    for (int b = 0; b < 2; ++b) {
      const auto s = ttrace::analyzer::ReplayGemm(p, Precision(t), b == 0 ? BoundKind::kDeterministic
                                                                          : BoundKind::kProbabilistic);
      if (s.violations > 0) {
        false_pos[ti][b] += s.violations;
        fprintf(stderr, "false positive: %s %s bound, %s inputs, %s order, m=%lld n=%lld k=%lld: err/bound %.3g\n",
                t.name, b == 0 ? "deterministic" : "probabilistic", kDists[dist], kOrders[order],
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), s.worst_ratio);
      } else if (std::isfinite(s.worst_ratio)) {
        ratios[ti][b].push_back(s.worst_ratio);
        if (k >= 1024) large_k[ti][b].push_back(s.worst_ratio);
      }
      if (b == 0 && t.in != DType::kF32) {
        for (int kr = 0; kr < 2; ++kr) {
          GemmCheckOptions o;
          o.method = GemmMethod::kFullFp32;
          o.fp32_p = ttrace::analyzer::Fp32P::kNever;
          o.slice_kernel = kr == 0 ? ttrace::analyzer::SliceKernel::kSgemm : ttrace::analyzer::SliceKernel::kBf16Dot;
          const auto v = ttrace::analyzer::VerifyGemm(p, Precision(t), o);
          ++slices_gemms[ti][kr];
          slices_fp[ti][kr] += v.stats.violations;
          slices_diff[ti][kr] += v.stats.violations != s.violations || v.method != GemmMethod::kFullFp32;
          slices_recomputed[ti][kr] += v.recomputed;
          slices_dot[ti][kr] += v.bf16_dot_panels > 0;
          if (std::isfinite(v.stats.worst_ratio))
            slices_max[ti][kr] = std::max(slices_max[ti][kr], v.stats.worst_ratio);
        }
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("%d GEMMs (m, n <= 8, k log-uniform to 16384; %s; %s; %s orders), %.1f s\n", gemms,
         "f32, bf16->f32, f16->f32, bf16, f16", "normal, uniform, heavy-tailed, cancelling inputs", "5", secs);
  printf("| dtypes | bound | GEMMs | elements | false positives | median | p99 | max | k >= 1024: median | max |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n");
  int rc = 0;
  for (size_t ti = 0; ti < std::size(kTypes); ++ti)
    for (int b = 0; b < 2; ++b) {
      const auto& r = ratios[ti][b];
      const auto& big = large_k[ti][b];
      printf("| %s | %s | %zu | %llu | %llu | %.3g | %.3g | %.3g | %.3g | %.3g |\n", kTypes[ti].name,
             b == 0 ? "deterministic" : "probabilistic", r.size() + (false_pos[ti][b] > 0),
             static_cast<unsigned long long>(elements[ti]), static_cast<unsigned long long>(false_pos[ti][b]),
             Quantile(r, 0.5), Quantile(r, 0.99), r.empty() ? 0.0 : *std::max_element(r.begin(), r.end()),
             Quantile(big, 0.5), big.empty() ? 0.0 : *std::max_element(big.begin(), big.end()));
      // Deterministic: none allowed. Probabilistic: each element fails with probability <= 2^-40; more than one
      // false positive in fewer than 2^30 elements is beyond that rate at any reasonable confidence.
      if (b == 0 ? false_pos[ti][b] > 0 : false_pos[ti][b] > 1) rc = 1;
    }
  printf("\nfull replay in FP32 slices, P bounded only (deterministic bound); slices by SGEMM, or by the vdpbf16ps "
         "kernel where the CPU has it and the values are BF16 numbers (GEMMs it ran):\n"
         "| dtypes | slices | GEMMs | on vdpbf16ps | elements | false positives | verdicts unlike full replay's | "
         "recomputed | max reported err/bound |\n"
         "|---|---|---|---|---|---|---|---|---|\n");
  for (size_t ti = 0; ti < std::size(kTypes); ++ti) {
    for (int kr = 0; kr < 2; ++kr) {
      if (slices_gemms[ti][kr] == 0) continue;
      printf("| %s | %s | %llu | %llu | %llu | %llu | %llu | %llu | %.3g |\n", kTypes[ti].name,
             kr == 0 ? "SGEMM" : "vdpbf16ps", static_cast<unsigned long long>(slices_gemms[ti][kr]),
             static_cast<unsigned long long>(slices_dot[ti][kr]), static_cast<unsigned long long>(elements[ti]),
             static_cast<unsigned long long>(slices_fp[ti][kr]), static_cast<unsigned long long>(slices_diff[ti][kr]),
             static_cast<unsigned long long>(slices_recomputed[ti][kr]), slices_max[ti][kr]);
      if (slices_fp[ti][kr] > 0 || slices_diff[ti][kr] > 0) rc = 1;
    }
  }
  return rc;
}

// A device's output computed by OpenBLAS's SGEMM (FP32 products, exact for 16-bit inputs, summed in FP32 in its own
// order), rounded to the output type: for sizes where Device's scalar loop is too slow.
GemmProblem BlasDevice(std::mt19937_64& rng, int64_t m, int64_t n, int64_t k, const Type& t) {
  GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.alpha = 1, p.beta = 0;
  p.a.resize(static_cast<size_t>(m * k));
  p.b.resize(static_cast<size_t>(k * n));
  for (auto& v : p.a) v = testing::RoundTo(t.in, Draw(rng, 1));
  for (auto& v : p.b) v = testing::RoundTo(t.in, Draw(rng, 1));
  std::vector<float> a(p.a.begin(), p.a.end()), b(p.b.begin(), p.b.end()), c(static_cast<size_t>(m * n));
  ttrace::analyzer::MatMulF32(false, false, m, n, k, a.data(), m, b.data(), k, c.data(), m);
  p.c_out.resize(c.size());
  for (size_t x = 0; x < c.size(); ++x) p.c_out[x] = testing::RoundTo(t.out, c[x]);
  return p;
}

// n x n x k (k = n by default); `only`: "f32" or "bf16" for one table.
int Detect(int64_t n, int trials, int64_t k, const std::string& only) {
  std::mt19937_64 rng(5);
  printf("single-bit flips of one output element, %lldx%lldx%lld GEMM, %d trials per bit (fraction detected)\n",
         static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(k), trials);
  for (const Type& t : {kTypes[0], kTypes[3]}) {
    if (!only.empty() && only != (t.out == DType::kF32 ? "f32" : "bf16")) continue;
    GemmProblem p = n * n * k > (int64_t{1} << 28) ? BlasDevice(rng, n, n, k, t) : Device(rng, n, n, k, t, 1, 2);
    const int bits = t.out == DType::kF32 ? 32 : 16;
    GemmCheckOptions full, projection, def;  // def: the defaults (auto)
    full.method = GemmMethod::kFull;
    full.max_work = def.max_work = UINT64_MAX;
    projection.method = GemmMethod::kProjection;  // what auto chooses above its full-replay budget
    const auto clean_start = std::chrono::steady_clock::now();
    const auto clean = ttrace::analyzer::VerifyGemm(p, Precision(t), def);
    const GemmMethod chosen = clean.method;
    printf("%s clean: default %s, %llu violations, %llu of %llu elements recomputed in FP64, P computed in %llu panels, "
           "max err/bound %.4g, %.2f s\n",
           t.name, ttrace::analyzer::GemmMethodName(chosen), static_cast<unsigned long long>(clean.stats.violations),
           static_cast<unsigned long long>(clean.recomputed), static_cast<unsigned long long>(clean.stats.elements),
           static_cast<unsigned long long>(clean.p_gemm_panels),
           clean.stats.worst_ratio,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - clean_start).count());
    printf("%s: | bit | full replay | projection | default (auto: %s at this size) |\n", t.name,
           ttrace::analyzer::GemmMethodName(chosen));
    for (int bit = 0; bit < bits && trials > 0; ++bit) {
      int found[3] = {0, 0, 0};
      for (int x = 0; x < trials; ++x) {
        GemmProblem bad = p;
        const uint64_t e = rng() % bad.c_out.size();
        std::string bytes = testing::Encode(t.out, {bad.c_out[e]});
        testing::FlipBit(&bytes, t.out, 0, bit);
        double v;
        if (t.out == DType::kF32) {
          float f;
          memcpy(&f, bytes.data(), 4);
          v = f;
        } else {
          uint16_t h;
          memcpy(&h, bytes.data(), 2);
          uint32_t w = static_cast<uint32_t>(h) << 16;
          float f;
          memcpy(&f, &w, 4);
          v = f;
        }
        bad.c_out[e] = v;
        for (int mth = 0; mth < 3; ++mth) {
          const auto verdict = ttrace::analyzer::VerifyGemm(bad, Precision(t), mth == 0 ? full : mth == 1 ? projection : def);
          found[mth] += verdict.stats.violations > 0 || verdict.proven_rows + verdict.proven_cols > 0;
        }
      }
      printf("| %d | %.2f | %.2f | %.2f |\n", bit, found[0] / static_cast<double>(trials),
             found[1] / static_cast<double>(trials), found[2] / static_cast<double>(trials));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "validate") return Validate(argc > 2 ? atoi(argv[2]) : 10000, argc > 3 ? strtoull(argv[3], nullptr, 0) : 1);
  if (mode == "detect" && argc > 2)
    return Detect(atoll(argv[2]), argc > 3 ? atoi(argv[3]) : 20, argc > 4 ? atoll(argv[4]) : atoll(argv[2]),
                  argc > 5 ? argv[5] : "");
  fprintf(stderr, "usage: gemm_validation_bench validate [GEMMS] [SEED] | detect N [TRIALS] [K] [f32|bf16]\n");
  return 2;
}
