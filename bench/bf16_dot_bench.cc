// BF16 dot products on the CPU (AVX512-BF16 vdpbf16ps), measured as a candidate for the FP32 slices of the 16-bit
// GEMM check (analyzer/gemm_check.cc, docs/error-models.md "Overheads cut"): not used by the analyzer. Usage:
//   bf16_dot_bench semantics [LANES]   vdpbf16ps against its documented order (Intel SDM: per FP32 lane,
//       acc = (acc + a[2i+1]·b[2i+1]) + a[2i]·b[2i], each addition rounded to nearest even, the BF16 products exact),
//       on random normal-range lanes; counts also the lanes matching other orders. Exit 1 when a lane differs from the
//       documented order (then the slices' θ_{k_s}(2^-24) model would not be known to hold).
//   bf16_dot_bench slices M N K       ref = Σ_g ŝ_g and abs = Σ_g |ŝ_g| over G = 32 slices of k (the check's FP32
//       slices) by a plain vdpbf16ps kernel (32 x 12 register tile, op(A) packed by pairs of k) and by OpenBLAS SGEMM
//       slices (what the check runs), CPU seconds each; 2,000 elements of the kernel's result compared bit for bit
//       with the documented order summed in FP32. M a multiple of 32, N of 12, K of 64.
// Exit 2 when the CPU has no AVX512-BF16.
#include <immintrin.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

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

constexpr int kMr = 32, kNr = 12;

// One 32 x 12 tile of ref and abs (column-major, ld ldc) over all k in slices of ks: ap = op(A)'s 32 rows packed as
// [pair of k][32 rows][2], b = op(B)'s 12 columns (column j at j·k).
TTRACE_BF16_TARGET void Tile(const uint16_t* ap, const uint16_t* b, int k, int ks, float* ref, float* abs, int ldc) {
  __m512 lo[kNr], hi[kNr];
  const __m512 no_sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  for (int g0 = 0; g0 < k; g0 += ks) {
    for (int j = 0; j < kNr; ++j) lo[j] = hi[j] = _mm512_setzero_ps();
    for (int p = g0 / 2; p < (g0 + ks) / 2; ++p) {
      const __m512bh a0 = (__m512bh)_mm512_loadu_si512(ap + p * 64);
      const __m512bh a1 = (__m512bh)_mm512_loadu_si512(ap + p * 64 + 32);
#pragma GCC unroll 12
      for (int j = 0; j < kNr; ++j) {
        float w;
        std::memcpy(&w, b + static_cast<size_t>(j) * k + 2 * p, 4);
        const __m512bh bb = (__m512bh)_mm512_castps_si512(_mm512_set1_ps(w));
        lo[j] = _mm512_dpbf16_ps(lo[j], a0, bb);
        hi[j] = _mm512_dpbf16_ps(hi[j], a1, bb);
      }
    }
    for (int j = 0; j < kNr; ++j) {
      float* r = ref + static_cast<size_t>(j) * ldc;
      float* s = abs + static_cast<size_t>(j) * ldc;
      const __m512 alo = _mm512_and_ps(lo[j], no_sign), ahi = _mm512_and_ps(hi[j], no_sign);
      if (g0 != 0) {
        lo[j] = _mm512_add_ps(_mm512_loadu_ps(r), lo[j]);
        hi[j] = _mm512_add_ps(_mm512_loadu_ps(r + 16), hi[j]);
      }
      _mm512_storeu_ps(r, lo[j]);
      _mm512_storeu_ps(r + 16, hi[j]);
      _mm512_storeu_ps(s, g0 != 0 ? _mm512_add_ps(_mm512_loadu_ps(s), alo) : alo);
      _mm512_storeu_ps(s + 16, g0 != 0 ? _mm512_add_ps(_mm512_loadu_ps(s + 16), ahi) : ahi);
    }
  }
}

int Slices(int m, int n, int k) {
  constexpr int kSlices = 32;
  const int ks = k / kSlices;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> at(static_cast<size_t>(m) * k), bc(static_cast<size_t>(k) * n);  // op(A) by rows, op(B) by cols
  for (auto* v : {&at, &bc})
    for (auto& x : *v) {
      const float f = u(rng);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      x = static_cast<uint16_t>(bits >> 16);
    }
  const double t0 = Cpu();
  std::vector<uint16_t> ap(at.size());
  for (int i0 = 0; i0 < m; i0 += kMr)
    for (int p = 0; p < k / 2; ++p)
      for (int r = 0; r < kMr; ++r)
        for (int h = 0; h < 2; ++h)
          ap[static_cast<size_t>(i0) * k + static_cast<size_t>(p) * 64 + r * 2 + h] =
              at[static_cast<size_t>(i0 + r) * k + 2 * p + h];
  std::vector<float> ref(static_cast<size_t>(m) * n), abs(ref.size());
  for (int j0 = 0; j0 < n; j0 += kNr)
    for (int i0 = 0; i0 < m; i0 += kMr)
      Tile(ap.data() + static_cast<size_t>(i0) * k, bc.data() + static_cast<size_t>(j0) * k, k, ks,
           ref.data() + static_cast<size_t>(j0) * m + i0, abs.data() + static_cast<size_t>(j0) * m + i0, m);
  const double t_dot = Cpu() - t0;
  int differ = 0;
  for (int t = 0; t < 2000; ++t) {
    const size_t i = rng() % m, j = rng() % n;
    float r = 0, s = 0;
    for (int g0 = 0; g0 < k; g0 += ks) {
      float acc = 0;
      for (int l = g0; l < g0 + ks; l += 2) {
        acc = acc + Bf(at[i * k + l + 1]) * Bf(bc[j * k + l + 1]);
        acc = acc + Bf(at[i * k + l]) * Bf(bc[j * k + l]);
      }
      r = g0 == 0 ? acc : r + acc;
      s = g0 == 0 ? std::fabs(acc) : s + std::fabs(acc);
    }
    differ += std::memcmp(&r, &ref[j * m + i], 4) != 0 || std::memcmp(&s, &abs[j * m + i], 4) != 0;
  }
  std::vector<float> af(at.size()), bf(bc.size()), tmp(static_cast<size_t>(m) * 256), r2(tmp.size()), a2(tmp.size());
  for (size_t x = 0; x < af.size(); ++x) af[x] = Bf(at[x]);
  for (size_t x = 0; x < bf.size(); ++x) bf[x] = Bf(bc[x]);
  const double t1 = Cpu();
  for (int j0 = 0; j0 < n; j0 += 256) {
    const int w = std::min(256, n - j0);
    for (int g = 0; g < kSlices; ++g) {
      ttrace::analyzer::MatMulF32(true, false, m, w, ks, af.data() + g * ks, k, bf.data() + static_cast<size_t>(j0) * k + g * ks,
                                  k, tmp.data(), m);
      for (size_t x = 0; x < static_cast<size_t>(m) * w; ++x)
        r2[x] = g ? r2[x] + tmp[x] : tmp[x], a2[x] = g ? a2[x] + std::fabs(tmp[x]) : std::fabs(tmp[x]);
    }
  }
  const double t_sgemm = Cpu() - t1;
  printf("%dx%dx%d, %d slices: vdpbf16ps kernel %.3f CPU s (packing included; %d of 2000 elements differ from the "
         "documented order), SGEMM slices %.3f CPU s\n", m, n, k, kSlices, t_dot, differ, t_sgemm);
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
    if (m > 0 && n > 0 && k > 0 && m % kMr == 0 && n % kNr == 0 && k % 64 == 0) return Slices(m, n, k);
  }
  fprintf(stderr, "usage: bf16_dot_bench semantics [LANES] | slices M N K (M %% 32, N %% 12, K %% 64 zero)\n");
  return 2;
}
