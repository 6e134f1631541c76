#include "analyzer/bf16_slices.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TTRACE_BF16_KERNEL 1
#define TTRACE_BF16_TARGET __attribute__((target("avx512f,avx512bf16,avx512vl,avx512bw,avx512dq")))
#endif

namespace ttrace::analyzer {

void Bf16Packed::Free::operator()(uint32_t* p) const { std::free(p); }

bool Bf16DotAvailable() {
#ifdef TTRACE_BF16_KERNEL
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512dq");
  return ok;
#else
  return false;
#endif
}

namespace {

// out's slices, pairs and room for `rows` vectors in blocks of `block`.
void Layout(int64_t rows, int64_t k, int64_t ks, int block, Bf16Packed* out) {
  out->rows = rows, out->k = k, out->ks = ks;
  out->slice_pairs.clear();
  out->pairs = 0;
  for (int64_t l0 = 0; l0 < k; l0 += ks) {
    out->slice_pairs.push_back((std::min(ks, k - l0) + 1) / 2);
    out->pairs += out->slice_pairs.back();
  }
  const int64_t blocks = (rows + block - 1) / block;
  const size_t need = static_cast<size_t>(blocks * out->pairs * block);
  if (need > out->capacity) {
    constexpr size_t kHuge = size_t{1} << 21;
    const size_t bytes = (need * 4 + kHuge - 1) / kHuge * kHuge;
    out->words.reset(static_cast<uint32_t*>(std::aligned_alloc(kHuge, bytes)));  // not zeroed: every word is written
    if (out->words == nullptr) throw std::bad_alloc();
    madvise(out->words.get(), bytes, MADV_HUGEPAGE);  // advice only: its failure changes nothing but speed
    out->capacity = need;
  }
}

}  // namespace

bool PackBf16(const float* v, int64_t rows, int64_t k, int64_t ld, int64_t ks, int block, Bf16Packed* out) {
  Layout(rows, k, ks, block, out);
  uint64_t low_bits = 0;
  uint32_t* w = out->words.get();
  const float* row[64];
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t valid = std::min<int64_t>(block, rows - r0);
    for (int64_t r = 0; r < valid; ++r) row[r] = v + (r0 + r) * ld;
    for (int64_t l0 = 0; l0 < k; l0 += ks) {
      const int64_t end = std::min(k, l0 + ks);
      int64_t l = l0;
      // Whole pairs: the two FP32 values as one 64-bit word (the even term in its low half), their upper halves kept.
      for (; l + 2 <= end; l += 2) {
        for (int64_t r = 0; r < valid; ++r) {
          uint64_t two;
          std::memcpy(&two, row[r] + l, 8);
          low_bits |= two;
          w[r] = static_cast<uint32_t>(((two >> 16) & 0xffffu) | ((two >> 32) & 0xffff0000u));
        }
        for (int64_t r = valid; r < block; ++r) w[r] = 0;
        w += block;
      }
      if (l < end) {  // a slice of odd length: its last term with a zero
        for (int64_t r = 0; r < valid; ++r) {
          uint32_t even;
          std::memcpy(&even, row[r] + l, 4);
          low_bits |= even;
          w[r] = even >> 16;
        }
        for (int64_t r = valid; r < block; ++r) w[r] = 0;
        w += block;
      }
    }
    if ((low_bits & 0x0000ffff0000ffffu) != 0) return false;
  }
  return true;
}

namespace {

// w[r] = even[r] | odd[r] << 16 for 32 rows (AVX-512: the compiler does not vectorize the may_alias loop).
#ifdef TTRACE_BF16_KERNEL
TTRACE_BF16_TARGET void InterleaveRows32(const void* even, const void* odd, uint32_t* w) {
  for (int h = 0; h < 2; ++h) {
    const __m512i e = _mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(even) + h));
    const __m512i o = _mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(odd) + h));
    _mm512_storeu_si512(w + 16 * h, _mm512_or_si512(e, _mm512_slli_epi32(o, 16)));
  }
}
#else
void InterleaveRows32(const void*, const void*, uint32_t*) {}
#endif

}  // namespace

void PackBf16Stored(const char* bytes, uint64_t first, int64_t rows, int64_t k, int64_t step_r, int64_t step_l,
                    int64_t ks, int block, Bf16Packed* out) {
  typedef uint16_t __attribute__((may_alias)) Bits;  // the captured bytes read as 16-bit values
  const Bits* s = reinterpret_cast<const Bits*>(bytes) + first;
  Layout(rows, k, ks, block, out);
  uint32_t* w = out->words.get();
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t valid = std::min<int64_t>(block, rows - r0);
    const Bits* base = s + r0 * step_r;
    for (int64_t l0 = 0; l0 < k; l0 += ks) {
      const int64_t end = std::min(k, l0 + ks);
      for (int64_t l = l0; l < end; l += 2) {
        const Bits* even = base + l * step_l;
        if (l + 1 < end) {
          const Bits* odd = even + step_l;
          if (step_r == 1 && valid == kBf16RowBlock && block == kBf16RowBlock && Bf16DotAvailable()) {
            InterleaveRows32(even, odd, w);
          } else if (step_r == 1) {  // the block's values of one term contiguous
            for (int64_t r = 0; r < valid; ++r) w[r] = even[r] | static_cast<uint32_t>(odd[r]) << 16;
          } else if (step_l == 1) {  // a vector's terms contiguous: the pair is one 32-bit word
            for (int64_t r = 0; r < valid; ++r) std::memcpy(&w[r], even + r * step_r, 4);
          } else {
            for (int64_t r = 0; r < valid; ++r)
              w[r] = even[r * step_r] | static_cast<uint32_t>(odd[r * step_r]) << 16;
          }
        } else {
          for (int64_t r = 0; r < valid; ++r) w[r] = even[r * step_r];
        }
        for (int64_t r = valid; r < block; ++r) w[r] = 0;
        w += block;
      }
    }
  }
}

bool PackedSums(const Bf16Packed& p, int block, double* abs_sum, double* norm, double* max, double* max_all) {
  uint32_t bad = 0, mx_all = 0;
  const uint32_t* w = p.words.get();
  double s[64], q[64], mx[64];
  for (int64_t r0 = 0; r0 < p.rows; r0 += block) {
    const int64_t valid = std::min<int64_t>(block, p.rows - r0);
    for (int r = 0; r < block; ++r) s[r] = q[r] = mx[r] = 0;
    for (int64_t t = 0; t < p.pairs; ++t, w += block) {
      for (int r = 0; r < block; ++r) {
        const uint32_t lo = w[r] & 0x7fffu, hi = (w[r] >> 16) & 0x7fffu;
        bad |= static_cast<uint32_t>(lo >= 0x7f80u) | static_cast<uint32_t>(lo != 0 && lo < 0x80u) |
               static_cast<uint32_t>(hi >= 0x7f80u) | static_cast<uint32_t>(hi != 0 && hi < 0x80u);
        mx_all = std::max(mx_all, std::max(lo, hi));
        float f0, f1;
        const uint32_t u0 = lo << 16, u1 = hi << 16;
        std::memcpy(&f0, &u0, 4);
        std::memcpy(&f1, &u1, 4);
        // Terms in order (a padding zero adds nothing).
        const double a0 = f0, a1 = f1;
        s[r] += a0, q[r] += a0 * a0, mx[r] = std::max(mx[r], a0);
        s[r] += a1, q[r] += a1 * a1, mx[r] = std::max(mx[r], a1);
      }
    }
    for (int64_t r = 0; r < valid; ++r) abs_sum[r0 + r] = s[r], norm[r0 + r] = std::sqrt(q[r]), max[r0 + r] = mx[r];
  }
  const uint32_t u = mx_all << 16;
  float f;
  std::memcpy(&f, &u, 4);
  *max_all = f;
  return bad == 0;
}

#ifdef TTRACE_BF16_KERNEL
namespace {

// One tile of 32 rows x 12 columns over every slice: 24 accumulators of 16 lanes, op(A)'s pair of terms for 32 rows
// in two registers, op(B)'s pair for a column broadcast. Each slice's sums are added to the tile's ref and abs (held
// in `ref` and `abs`, [column][row]) after it, in slice order.
TTRACE_BF16_TARGET void Tile(const uint32_t* ap, const uint32_t* bp, const int64_t* slice_pairs, size_t slices,
                             float* ref, float* abs) {
  const __m512 no_sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  for (size_t g = 0; g < slices; ++g) {
    __m512 lo[kBf16ColBlock], hi[kBf16ColBlock];
#pragma GCC unroll 12
    for (int j = 0; j < kBf16ColBlock; ++j) lo[j] = hi[j] = _mm512_setzero_ps();
    for (int64_t q = slice_pairs[g]; q > 0; --q) {
      const __m512bh a0 = (__m512bh)_mm512_loadu_si512(ap);
      const __m512bh a1 = (__m512bh)_mm512_loadu_si512(ap + 16);
#pragma GCC unroll 12
      for (int j = 0; j < kBf16ColBlock; ++j) {
        const __m512bh b = (__m512bh)_mm512_set1_epi32(static_cast<int>(bp[j]));
        lo[j] = _mm512_dpbf16_ps(lo[j], a0, b);
        hi[j] = _mm512_dpbf16_ps(hi[j], a1, b);
      }
      ap += kBf16RowBlock;
      bp += kBf16ColBlock;
    }
#pragma GCC unroll 12
    for (int j = 0; j < kBf16ColBlock; ++j) {
      float* r = ref + j * kBf16RowBlock;
      float* s = abs + j * kBf16RowBlock;
      const __m512 alo = _mm512_and_ps(lo[j], no_sign), ahi = _mm512_and_ps(hi[j], no_sign);
      if (g == 0) {
        _mm512_storeu_ps(r, lo[j]);
        _mm512_storeu_ps(r + 16, hi[j]);
        _mm512_storeu_ps(s, alo);
        _mm512_storeu_ps(s + 16, ahi);
      } else {
        _mm512_storeu_ps(r, _mm512_add_ps(_mm512_loadu_ps(r), lo[j]));
        _mm512_storeu_ps(r + 16, _mm512_add_ps(_mm512_loadu_ps(r + 16), hi[j]));
        _mm512_storeu_ps(s, _mm512_add_ps(_mm512_loadu_ps(s), alo));
        _mm512_storeu_ps(s + 16, _mm512_add_ps(_mm512_loadu_ps(s + 16), ahi));
      }
    }
  }
}

}  // namespace
#endif

void Bf16Slices(const Bf16Packed& a, const Bf16Packed& b, float* ref, float* abs, int64_t ldc) {
#ifdef TTRACE_BF16_KERNEL
  alignas(64) float tr[kBf16ColBlock * kBf16RowBlock], ta[kBf16ColBlock * kBf16RowBlock];
  for (int64_t i0 = 0; i0 < a.rows; i0 += kBf16RowBlock) {
    const uint32_t* ap = a.words.get() + i0 * a.pairs;
    const int64_t rows = std::min<int64_t>(kBf16RowBlock, a.rows - i0);
    for (int64_t j0 = 0; j0 < b.rows; j0 += kBf16ColBlock) {
      Tile(ap, b.words.get() + j0 * b.pairs, a.slice_pairs.data(), a.slice_pairs.size(), tr, ta);
      const int64_t cols = std::min<int64_t>(kBf16ColBlock, b.rows - j0);
      for (int64_t j = 0; j < cols; ++j) {
        std::memcpy(ref + i0 + (j0 + j) * ldc, tr + j * kBf16RowBlock, static_cast<size_t>(rows) * 4);
        std::memcpy(abs + i0 + (j0 + j) * ldc, ta + j * kBf16RowBlock, static_cast<size_t>(rows) * 4);
      }
    }
  }
#else
  (void)a, (void)b, (void)ref, (void)abs, (void)ldc;
#endif
}

}  // namespace ttrace::analyzer
