// BF16 dot products on the CPU (AVX512-BF16 vdpbf16ps), as the FP32 slices of the 16-bit GEMM check use them
// (analyzer/bf16_slices.h, docs/error-models.md "The slices by vdpbf16ps"). Usage:
//   bf16_dot_bench semantics [LANES]   vdpbf16ps against its documented order (Intel SDM: per FP32 lane,
//       acc = (acc + a[2i+1]·b[2i+1]) + a[2i]·b[2i], each addition rounded to nearest even, the BF16 products exact),
//       on random normal-range lanes; counts also the lanes matching other orders. Exit 1 when a lane differs from the
//       documented order (then the slices' θ_{k_s}(2^-24) model would not be known to hold).
//   bf16_dot_bench slices M N K       ref = Σ_g ŝ_g and abs = Σ_g |ŝ_g| over the check's G = 2·∛k slices of k, by
//       the analyzer's kernel (Bf16Slices: op(A) packed once, op(B) per panel of 2^20 / M columns) and by OpenBLAS
//       SGEMM slices plus their sums (what the check runs without it), CPU seconds each; 2,000 elements of the
//       kernel's result compared bit for bit with the documented order summed in FP32.
// Exit 2 when the CPU has no AVX512-BF16.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "analyzer/bf16_slices.h"
#include "analyzer/blas.h"

namespace {

float Bf(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

double Cpu() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

#define TTRACE_BF16_TARGET __attribute__((target("avx512f,avx512bf16,avx512vl,avx512bw,avx512dq")))

TTRACE_BF16_TARGET void Dot16(const float* acc, const uint16_t* a, const uint16_t* b, float* out) {
  __m512bh x, y;
  std::memcpy(&x, a, 64);
  std::memcpy(&y, b, 64);
  _mm512_storeu_ps(out, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), x, y));
}

int Semantics(long lanes) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> ex(-20, 20);
  long n = 0, documented = 0, reversed = 0, one_rounding = 0;
  while (n < lanes) {
    float acc[16], out[16];
    uint16_t a[32], b[32];
    for (int i = 0; i < 32; ++i) {
      a[i] = static_cast<uint16_t>(((rng() & 1) << 15) | ((127 + ex(rng)) << 7) | (rng() & 0x7f));
      b[i] = static_cast<uint16_t>(((rng() & 1) << 15) | ((127 + ex(rng)) << 7) | (rng() & 0x7f));
    }
    for (float& v : acc)
      v = (rng() & 1 ? 1.0f : -1.0f) * std::ldexp(static_cast<float>(rng() % (1 << 24)) / (1 << 24), 2 * ex(rng));
    Dot16(acc, a, b, out);
    for (int i = 0; i < 16; ++i, ++n) {
      const float p1 = Bf(a[2 * i + 1]) * Bf(b[2 * i + 1]), p0 = Bf(a[2 * i]) * Bf(b[2 * i]);  // exact
      const float d = (acc[i] + p1) + p0, r = (acc[i] + p0) + p1;
      const float once = static_cast<float>(static_cast<long double>(acc[i]) + p0 + p1);
      documented += std::memcmp(&d, &out[i], 4) == 0;
      reversed += std::memcmp(&r, &out[i], 4) == 0;
      one_rounding += std::memcmp(&once, &out[i], 4) == 0;
    }
  }
  printf("%ld lanes: the documented order (acc + p1) + p0 %ld, (acc + p0) + p1 %ld, one rounding of the sum %ld\n", n,
         documented, reversed, one_rounding);
  return documented == n ? 0 : 1;
}

// The analyzer's kernel (analyzer/bf16_slices.h) on m x n x k uniform BF16 data in panels of 2^20 / m columns (as
// the check runs it), against OpenBLAS SGEMM slices plus their sums (what the check runs without it).
int Slices(int m, int n, int k) {
  const int slices = static_cast<int>(std::clamp<long>(std::lround(2 * std::cbrt(static_cast<double>(k))), 4, 64));
  const int ks = (k + slices - 1) / slices;
  const int w = std::clamp((1 << 20) / m, 1, n);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> af(static_cast<size_t>(m) * k), bf(static_cast<size_t>(k) * n);  // op(A) by rows, op(B) by cols
  for (auto* v : {&af, &bf})
    for (auto& x : *v) {
      const float f = u(rng);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      bits &= 0xffff0000u;
      std::memcpy(&x, &bits, 4);
    }
  std::vector<float> ref(static_cast<size_t>(m) * n), abs(ref.size());
  const double t0 = Cpu();
  ttrace::analyzer::Bf16Packed pa, pb;
  if (!ttrace::analyzer::PackBf16(af.data(), m, k, k, ks, ttrace::analyzer::kBf16RowBlock, &pa)) return 1;
  for (int j0 = 0; j0 < n; j0 += w) {
    const int cols = std::min(w, n - j0);
    if (!ttrace::analyzer::PackBf16(bf.data() + static_cast<size_t>(j0) * k, cols, k, k, ks,
                                    ttrace::analyzer::kBf16ColBlock, &pb))
      return 1;
    ttrace::analyzer::Bf16Slices(pa, pb, ref.data() + static_cast<size_t>(j0) * m, abs.data() + static_cast<size_t>(j0) * m, m);
  }
  const double t_dot = Cpu() - t0;
  int differ = 0;
  for (int t = 0; t < 2000; ++t) {
    const size_t i = rng() % m, j = rng() % n;
    float r = 0, s = 0;
    for (int g0 = 0; g0 < k; g0 += ks) {
      float acc = 0;
      const int end = std::min(k, g0 + ks);
      for (int l = g0; l < end; l += 2) {
        if (l + 1 < end) acc = acc + af[i * k + l + 1] * bf[j * k + l + 1];
        acc = acc + af[i * k + l] * bf[j * k + l];
      }
      r = g0 == 0 ? acc : r + acc;
      s = g0 == 0 ? std::fabs(acc) : s + std::fabs(acc);
    }
    differ += std::memcmp(&r, &ref[j * m + i], 4) != 0 || std::memcmp(&s, &abs[j * m + i], 4) != 0;
  }
  std::vector<float> tmp(static_cast<size_t>(m) * w), r2(tmp.size()), a2(tmp.size());
  const double t1 = Cpu();
  for (int j0 = 0; j0 < n; j0 += w) {
    const int cols = std::min(w, n - j0);
    for (int g = 0; g * ks < k; ++g) {
      ttrace::analyzer::MatMulF32(true, false, m, cols, std::min(ks, k - g * ks), af.data() + g * ks, k,
                                  bf.data() + static_cast<size_t>(j0) * k + g * ks, k, tmp.data(), m);
      for (size_t x = 0; x < static_cast<size_t>(m) * cols; ++x)
        r2[x] = g ? r2[x] + tmp[x] : tmp[x], a2[x] = g ? a2[x] + std::fabs(tmp[x]) : std::fabs(tmp[x]);
    }
  }
  const double t_sgemm = Cpu() - t1;
  printf("%dx%dx%d, %d slices of %d: vdpbf16ps kernel %.3f CPU s (packing included; %d of 2000 elements differ from "
         "the documented order), SGEMM slices %.3f CPU s\n", m, n, k, (k + ks - 1) / ks, ks, t_dot, differ, t_sgemm);
  return differ == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512bf16")) {
    fprintf(stderr, "this CPU has no AVX512-BF16\n");
    return 2;
  }
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "semantics") return Semantics(argc > 2 ? atol(argv[2]) : 1600000);
  if (mode == "slices" && argc > 4) {
    const int m = atoi(argv[2]), n = atoi(argv[3]), k = atoi(argv[4]);
    if (m > 0 && n > 0 && k > 0) return Slices(m, n, k);
  }
  fprintf(stderr, "usage: bf16_dot_bench semantics [LANES] | slices M N K\n");
  return 2;
}
