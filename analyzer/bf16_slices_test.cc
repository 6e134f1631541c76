// The vdpbf16ps slices kernel (analyzer/bf16_slices.h) against the arithmetic the GEMM check's model assumes of it:
// on normal-range data, every element's ref and abs bit for bit the documented order (per slice an FP32 accumulator
// from 0 adding the odd term's exact product, then the even one's, each rounded to nearest even; the slices summed in
// order), over shapes that pad rows, columns and slices of odd length; on data whose products and sums underflow,
// every element one of the two readings of the documented flush-to-zero (a product flushed before its addition or
// not; the sum flushed) and within the model's allowance θ_{k_s}(2^-24)·P_g + 2k_s·2^-126 — the data does flush
// (a reading without flushes differs). Packing refuses values that are not BF16 numbers. Skipped where the CPU has no
// AVX512-BF16 (the check uses SGEMM there).
#include "analyzer/bf16_slices.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

float ToBf16(float x) {  // truncated: a BF16 number
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

bool Same(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

float Flush(float x) { return std::fabs(x) < 0x1p-126f ? std::copysign(0.0f, x) : x; }

// The documented order for element (i, j): reading 0 adds each exact product with one rounding (no flush), 1 the
// same with subnormal sums flushed, 2 with the products flushed too. Returns ref and abs; *worst_excess the largest
// |ŝ_g − s_g| / (θ_{k_s}(2^-24)·P_g + 2k_s·2^-126) over the slices (the model's allowance).
struct Sums {
  float ref = 0, abs = 0;
};
Sums Documented(const std::vector<float>& a, const std::vector<float>& b, int64_t i, int64_t j, int64_t k, int64_t ks,
                int reading, double* worst_excess = nullptr) {
  Sums out;
  for (int64_t l0 = 0; l0 < k; l0 += ks) {
    const int64_t end = std::min(k, l0 + ks);
    float acc = 0;
    double exact = 0, mag = 0;
    auto add = [&](int64_t l) {
      const double p = static_cast<double>(a[i * k + l]) * static_cast<double>(b[j * k + l]);  // exact
      exact += p, mag += std::fabs(p);
      const float x = a[i * k + l], y = b[j * k + l];
      // One rounding of acc + x·y (fused), or of acc + the product flushed (an FP32 product, exact unless subnormal).
      const float sum = reading == 2 ? acc + Flush(x * y) : std::fma(x, y, acc);
      acc = reading == 0 ? sum : Flush(sum);
    };
    for (int64_t l = l0; l < end; l += 2) {
      if (l + 1 < end) add(l + 1);
      add(l);
    }
    if (worst_excess != nullptr) {
      const double n = static_cast<double>(end - l0);
      const double allow = (std::pow(1 + 0x1p-24, n) - 1) * mag + 2 * n * 0x1p-126;
      *worst_excess = std::max(*worst_excess, std::fabs(static_cast<double>(acc) - exact) / allow);
    }
    out.ref = l0 == 0 ? acc : out.ref + acc;
    out.abs = l0 == 0 ? std::fabs(acc) : out.abs + std::fabs(acc);
  }
  return out;
}

struct Result {
  std::vector<float> ref, abs;
};
Result RunKernel(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t n, int64_t k, int64_t ks) {
  Bf16Packed pa, pb;
  EXPECT_TRUE(PackBf16(a.data(), m, k, k, ks, kBf16RowBlock, &pa));
  EXPECT_TRUE(PackBf16(b.data(), n, k, k, ks, kBf16ColBlock, &pb));
  // Room around the output: the kernel writes only the m x n elements (ldc m + 3).
  const int64_t ldc = m + 3;
  Result r{std::vector<float>(static_cast<size_t>(ldc * n), -7.0f), std::vector<float>(static_cast<size_t>(ldc * n), -7.0f)};
  Bf16Slices(pa, pb, r.ref.data(), r.abs.data(), ldc);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = m; i < ldc; ++i) EXPECT_EQ(r.ref[static_cast<size_t>(i + j * ldc)], -7.0f) << "written outside";
  return r;
}

TEST(Bf16SlicesTest, NormalRangeIsTheDocumentedOrderBitForBit) {
  if (!Bf16DotAvailable()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(1, 2);
  std::uniform_int_distribution<int> e(-20, 20);
  struct Shape {
    int64_t m, n, k, ks;
  };
  int checked = 0;
  for (const Shape& s : {Shape{1, 1, 1, 1}, Shape{32, 12, 256, 64}, Shape{33, 13, 301, 19}, Shape{31, 25, 7, 3},
                         Shape{70, 11, 128, 128}, Shape{5, 40, 1000, 63}}) {
    std::vector<float> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.n * s.k));
    for (auto* v : {&a, &b})
      for (float& x : *v) x = ToBf16((rng() % 2 ? -1 : 1) * std::ldexp(u(rng), e(rng)));
    const Result r = RunKernel(a, b, s.m, s.n, s.k, s.ks);
    const int64_t ldc = s.m + 3;
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t i = 0; i < s.m; ++i) {
        const Sums d = Documented(a, b, i, j, s.k, s.ks, 0);
        const size_t x = static_cast<size_t>(i + j * ldc);
        ASSERT_TRUE(Same(r.ref[x], d.ref) && Same(r.abs[x], d.abs))
            << s.m << "x" << s.n << "x" << s.k << " ks " << s.ks << " at " << i << "," << j << ": " << r.ref[x]
            << " vs " << d.ref;
        ++checked;
      }
  }
  EXPECT_EQ(checked, 1 + 384 + 429 + 775 + 770 + 200);
}

TEST(Bf16SlicesTest, UnderflowIsFlushedWithinTheModel) {
  if (!Bf16DotAvailable()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<float> u(1, 2);
  std::uniform_int_distribution<int> e(-75, -52);  // products 2^-150 .. 2^-102: many subnormal in FP32
  const int64_t m = 40, n = 14, k = 24, ks = 5;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
  for (auto* v : {&a, &b})
    for (float& x : *v) x = ToBf16((rng() % 2 ? -1 : 1) * std::ldexp(u(rng), e(rng)));
  const Result r = RunKernel(a, b, m, n, k, ks);
  int flushed = 0;
  double worst = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const size_t x = static_cast<size_t>(i + j * (m + 3));
      const Sums plain = Documented(a, b, i, j, k, ks, 0);
      bool matched = false;
      for (int reading : {1, 2}) {
        const Sums d = Documented(a, b, i, j, k, ks, reading);
        if (!Same(r.ref[x], d.ref) || !Same(r.abs[x], d.abs)) continue;
        matched = true;
        double excess = 0;
        Documented(a, b, i, j, k, ks, reading, &excess);
        worst = std::max(worst, excess);
        break;
      }
      EXPECT_TRUE(matched) << i << "," << j << ": " << r.ref[x];
      flushed += !Same(r.ref[x], plain.ref);
    }
  EXPECT_GT(flushed, 50) << "the data must exercise flush-to-zero";
  EXPECT_LE(worst, 1.0) << "a slice beyond θ_{k_s}(2^-24)·P_g + 2k_s·2^-126";
  EXPECT_GT(worst, 0.01) << "the allowance's flush term matters on this data";
}

TEST(Bf16SlicesTest, PackingRefusesValuesThatAreNotBf16) {
  std::vector<float> v(64 * 10, 1.5f);
  Bf16Packed p;
  EXPECT_TRUE(PackBf16(v.data(), 10, 64, 64, 16, kBf16ColBlock, &p));
  EXPECT_EQ(p.pairs, 32);
  v[9 * 64 + 63] = 1 + 0x1p-10;  // 11 significant bits: the last row's last term
  EXPECT_FALSE(PackBf16(v.data(), 10, 64, 64, 16, kBf16ColBlock, &p));
  v[9 * 64 + 63] = 1.5f;
  v[3] = 1 + 0x1p-8f;  // 9 significant bits: not a BF16 number either
  EXPECT_FALSE(PackBf16(v.data(), 10, 64, 64, 16, kBf16RowBlock, &p));
}

}  // namespace
}  // namespace ttrace::analyzer
