// Test-only: an independent re-implementation of accumulate.h's orders and accumulators, written from the
// header's text in a different form (recursive balanced trees, _Float16 arithmetic, frexp/ldexp truncation), used
// by the tests of the accumulation module and of every simgpu library that sums products through it. Compile its
// users with -ffp-contract=off.
#ifndef TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_REFERENCE_H_
#define TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tools/simgpu/common/accumulate.h"

namespace simgpu::testing_ref {

struct RefSpec {
  AccumConfig config;
  AccumPrecision precision = AccumPrecision::kFp32;
  int fp8_bits = 0;
  int64_t interval = 128;
  int64_t call = 0;
};

// Values are carried as double; each precision rounds them its own way.
inline double RoundTo(AccumPrecision p, double v) {
  switch (p) {
    case AccumPrecision::kFp64: return v;
    case AccumPrecision::kFp16: return static_cast<double>(static_cast<_Float16>(static_cast<float>(v)));
    default: return static_cast<double>(static_cast<float>(v));
  }
}

inline double Add(AccumPrecision p, double s, double x) {
  if (p == AccumPrecision::kFp64) return s + x;
  if (p == AccumPrecision::kFp16) {
    // The operands are binary16 values, so their FP32 sum is exact enough: one conversion rounds correctly.
    return static_cast<double>(static_cast<_Float16>(static_cast<float>(s) + static_cast<float>(x)));
  }
  return static_cast<double>(static_cast<float>(s) + static_cast<float>(x));
}

// Balanced tree over a power-of-two count: (left half) + (right half).
inline double Tree(AccumPrecision p, const std::vector<double>& x, size_t lo, size_t n) {
  if (n == 1) return x[lo];
  return Add(p, Tree(p, x, lo, n / 2), Tree(p, x, lo + n / 2, n / 2));
}

// Pairwise via the binary expansion of k: blocks of 2^a1 > 2^a2 > ... products in order, each a balanced tree;
// then s = last block, s = block_i + s backwards (the binary-counter stack of the header, restated).
inline double RefPairwise(AccumPrecision p, const std::vector<double>& x) {
  std::vector<double> blocks;
  size_t lo = 0;
  for (int bit = 62; bit >= 0; --bit) {
    size_t size = size_t{1} << bit;
    if (x.size() & size) {
      blocks.push_back(Tree(p, x, lo, size));
      lo += size;
    }
  }
  if (blocks.empty()) return 0.0;
  double s = blocks.back();
  for (int i = static_cast<int>(blocks.size()) - 2; i >= 0; --i) s = Add(p, blocks[i], s);
  return s;
}

// sign * floor(|v| / q) * q with q = 2^(e-1-B), where 2^(e-1) <= |v| < 2^e (frexp).
inline double TruncBits(double v, int bits) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e;
  std::frexp(v, &e);  // |v| = f * 2^e, f in [0.5, 1)
  double quantum = std::ldexp(1.0, e - 1 - bits);
  return std::copysign(std::floor(std::fabs(v) / quantum) * quantum, v);
}

inline double RefRun(const RefSpec& s, const std::vector<double>& xs) {
  if (s.precision == AccumPrecision::kFp8 && s.fp8_bits > 0) {
    float total = 0.0f;
    double partial = 0.0;
    int64_t count = 0;
    for (double x : xs) {
      partial = TruncBits(partial + x, s.fp8_bits);
      if (s.interval > 0 && ++count == s.interval) {
        total += static_cast<float>(partial);
        partial = 0.0;
        count = 0;
      }
    }
    total += static_cast<float>(partial);
    return total;
  }
  double t = 0.0;
  for (double x : xs) t = Add(s.precision, t, x);
  return t;
}

inline uint64_t SplitMix(uint64_t* z) {
  *z += 0x9E3779B97F4A7C15ull;
  uint64_t r = *z;
  r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
  r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
  return r ^ (r >> 31);
}

inline double RefSum(const RefSpec& s, std::vector<double> x) {
  const AccumPrecision acc = s.precision == AccumPrecision::kFp8 ? AccumPrecision::kFp32 : s.precision;
  for (double& v : x) v = RoundTo(acc, v);
  const int64_t k = static_cast<int64_t>(x.size());
  std::vector<std::vector<double>> runs;
  switch (s.config.order) {
    case AccumOrder::kPairwise:
      return RefPairwise(acc, x);
    case AccumOrder::kBlocked:
      for (int64_t b = 0; b < k; b += s.config.param) {
        runs.emplace_back(x.begin() + b, x.begin() + std::min(k, b + s.config.param));
      }
      break;
    case AccumOrder::kSplitK:
      for (int64_t i = 0; i < s.config.param; ++i) {
        runs.emplace_back(x.begin() + i * k / s.config.param, x.begin() + (i + 1) * k / s.config.param);
      }
      break;
    case AccumOrder::kRandom: {
      std::vector<size_t> pi(k);
      for (int64_t q = 0; q < k; ++q) pi[q] = q;
      uint64_t z = s.config.seed ^ (static_cast<uint64_t>(s.call) * 0x9E3779B97F4A7C15ull);
      for (int64_t q = k - 1; q >= 1; --q) {
        size_t j = SplitMix(&z) % static_cast<uint64_t>(q + 1);
        std::swap(pi[q], pi[j]);
      }
      std::vector<double> permuted;
      for (size_t i : pi) permuted.push_back(x[i]);
      runs.push_back(permuted);
      break;
    }
    default:
      runs.push_back(x);
      break;
  }
  double total = 0.0;
  for (const auto& run : runs) total = Add(acc, total, RefRun(s, run));
  return total;
}

}  // namespace simgpu::testing_ref

#endif  // TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_REFERENCE_H_
