// Why this shape: zstd's entropy stage works on literals it finds after match search, and tensor bytes have few
// matches, so most of its time goes into finding none; the byte shuffle helps it see the exponent bytes' skew but
// zstd-1 still lands ~3% short of their entropy. Splitting by plane and Huffman-coding the planes that are skewed
// costs a pass over each block to code it (its histogram is sampled: a quarter of the block, read-modify-writes
// being what a histogram costs) and reaches the entropy within the Huffman redundancy. Four
// interleaved bit streams per plane keep the encoder's and decoder's dependency chains (bit position, table
// lookup) four wide. Code lengths are limited to 12 bits so a decoder table is 8 KiB and four symbols fit in one
// 64-bit refill. Blocks of 2^16 elements keep a block's working set in L2 and adapt the code along a tensor.
#include "store/float_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__) && !defined(TTRACE_FLOAT_CODEC_SCALAR)
#include <immintrin.h>
#define TTRACE_FLOAT_CODEC_SSE2 1
#endif

namespace ttrace::store {
namespace {

constexpr int kMaxLen = 12;
constexpr uint32_t kTableSize = 1u << kMaxLen;
constexpr int kBlockLog2 = 16;
constexpr int kMinBlockLog2 = 8, kMaxBlockLog2 = 24;
constexpr int kStreams = 4;        // a kHuffman plane's streams
constexpr int kWideStreams = 8;    // a kHuffman8 plane's (codec version 2)
constexpr int kMaxStreams = kWideStreams;
// The encoder codes a plane in kWideStreams streams when it has at least this many symbols and fewer than 7/8 of
// its code's 12-bit windows hold two codes (PairWindows): 16 bytes more of stream sizes, at most 0.1% of such a
// plane. Where 7/8 or more do (exponent planes of BF16 and FP32 weights), four streams decoded two symbols a lookup
// take fewer instructions (Gaussian BF16 82.9M against 87.6M); where fewer do (FP8, FP16, E5M2), eight chains of
// one symbol a lookup decode faster than four of pairs or of single symbols (docs/codec.md, "Eight streams"). A
// plane whose neighbours repeat (NeighboursRepeat: smooth data) keeps four streams of consecutive elements.
constexpr size_t kWideStreamsMinSymbols = 16384;
constexpr size_t kDecodeScratch = 4;  // planes not raw that a block decodes into scratch blocks, then composes
constexpr size_t kPairsMinSymbols = 4 * kTableSize;  // a plane with fewer is decoded without the multi-symbol table
constexpr size_t kSample = 4096;  // bytes sampled to decide whether a lower plane is worth a full histogram
// kHuffmanDelta (codec version 3): a four-stream Huffman plane of the bytes' differences from their predecessors
// (DeltaInPlace), the plane's first byte in its header: smooth data, whose neighbours differ by little.
enum PlaneMode : uint8_t { kRaw = 0, kConst = 1, kHuffman = 2, kHuffman8 = 3, kHuffmanDelta = 4 };
inline bool IsHuffman(uint8_t mode) { return mode == kHuffman || mode == kHuffman8 || mode == kHuffmanDelta; }

template <typename T>
inline T Load(const uint8_t* p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
inline void Store(uint8_t* p, T v) {
  memcpy(p, &v, sizeof v);
}
inline uint32_t Load32(const uint8_t* p) { return Load<uint32_t>(p); }

template <typename T>
inline T Rotate(T x) {  // sign bit to bit 0
  return static_cast<T>((x << 1) | (x >> (8 * sizeof(T) - 1)));
}
template <typename T>
inline T Unrotate(T r) {
  return static_cast<T>((r >> 1) | (r << (8 * sizeof(T) - 1)));
}
template <typename T>
inline uint8_t PlaneByte(const uint8_t* in, size_t i, int plane) {
  return static_cast<uint8_t>(Rotate(Load<T>(in + i * sizeof(T))) >> (8 * plane));
}

// Stream s of a kHuffman plane (four streams) holds elements [s * q, min(n, (s + 1) * q)), q = ceil(n / 4).
inline void StreamRange(size_t n, int s, size_t* begin, size_t* end) {
  const size_t q = (n + kStreams - 1) / kStreams;
  *begin = std::min(n, s * q);
  *end = std::min(n, *begin + q);
}

// Stream s of a kHuffman8 plane (eight streams) holds elements s, s + 8, s + 16, ...: this many.
inline size_t WideCount(size_t n, int s) {
  return n > static_cast<size_t>(s) ? (n - static_cast<size_t>(s) + kWideStreams - 1) / kWideStreams : 0;
}

// Huffman code lengths for the symbols with nonzero freq (at least two), at most kMaxLen: a two-queue Huffman
// build over the sorted frequencies; when the tree is deeper than kMaxLen, the lengths are limited by counts (as
// deflate encoders do): every leaf deeper than kMaxLen is put at kMaxLen, which overfills the code space, and each
// unit of 2^-kMaxLen over it is given back by moving one kMaxLen leaf and the deepest shorter leaf one level below
// that leaf's level (a net -1 unit), until the code is complete again (Kraft sum exactly 1); the lengths are then
// dealt out by frequency, the rarest symbols the longest. One build instead of rebuilding after halving the
// frequencies (up to 5 builds and re-sorts a block on FP8 data: 2 instructions a byte).
void BuildLengths(const uint32_t freq_in[256], uint8_t len[256]) {
  uint64_t key[256];  // f << 8 | symbol: sorted by frequency, then symbol
  int n = 0;
  for (int s = 0; s < 256; ++s)
    if (freq_in[s]) key[n++] = static_cast<uint64_t>(freq_in[s]) << 8 | static_cast<uint64_t>(s);
  std::sort(key, key + n);
  uint64_t w[511];
  uint16_t parent[511];
  uint8_t depth[511];
  for (int i = 0; i < n; ++i) w[i] = key[i] >> 8;
  int leaf = 0, node = n;
  for (int k = n; k < 2 * n - 1; ++k) {
    int pick[2];
    for (int& p : pick) p = (leaf < n && (node >= k || w[leaf] <= w[node])) ? leaf++ : node++;
    w[k] = w[pick[0]] + w[pick[1]];
    parent[pick[0]] = parent[pick[1]] = static_cast<uint16_t>(k);
  }
  depth[2 * n - 2] = 0;
  int max_depth = 0;
  for (int k = 2 * n - 3; k >= 0; --k) {
    depth[k] = static_cast<uint8_t>(depth[parent[k]] + 1);
    max_depth = std::max<int>(max_depth, depth[k]);
  }
  memset(len, 0, 256);
  if (max_depth <= kMaxLen) {
    for (int i = 0; i < n; ++i) len[key[i] & 0xff] = depth[i];
    return;
  }
  uint32_t count[kMaxLen + 1] = {};
  for (int i = 0; i < n; ++i) ++count[std::min<int>(depth[i], kMaxLen)];
  uint32_t kraft = 0;  // in units of 2^-kMaxLen
  for (int l = 1; l <= kMaxLen; ++l) kraft += count[l] << (kMaxLen - l);
  for (; kraft > kTableSize; --kraft) {
    --count[kMaxLen];
    for (int l = kMaxLen - 1; l > 0; --l) {
      if (count[l]) {
        --count[l];
        count[l + 1] += 2;
        break;
      }
    }
  }
  // The leaves in key order are the rarest first: they take the longest lengths.
  int i = 0;
  for (int l = kMaxLen; l > 0; --l)
    for (uint32_t c = 0; c < count[l]; ++c) len[key[i++] & 0xff] = static_cast<uint8_t>(l);
}

// Each byte's bits in reverse order.
constexpr struct Reverse8 {
  uint8_t v[256];
  constexpr Reverse8() : v() {
    for (int x = 0; x < 256; ++x)
      for (int b = 0; b < 8; ++b) v[x] |= static_cast<uint8_t>(((x >> b) & 1) << (7 - b));
  }
  constexpr uint32_t operator[](uint32_t x) const { return v[x]; }
} kReverse8;

// Canonical codes (deflate's assignment), bit-reversed for LSB-first streams.
void CanonicalCodes(const uint8_t len[256], uint16_t code[256]) {
  uint32_t count[kMaxLen + 1] = {}, next[kMaxLen + 1] = {};
  for (int s = 0; s < 256; ++s) ++count[len[s]];
  count[0] = 0;
  uint32_t c = 0;
  for (int l = 1; l <= kMaxLen; ++l) next[l] = c = (c + count[l - 1]) << 1;
  for (int s = 0; s < 256; ++s) {
    if (!len[s]) continue;
    const uint32_t v = next[len[s]]++;
    code[s] = static_cast<uint16_t>((kReverse8[v & 0xff] << 8 | kReverse8[v >> 8]) >> (16 - len[s]));
  }
}


// ---- planes -----------------------------------------------------------------------------------------------------
//
// Both directions work on byte planes: the encoder first splits a block's rotated elements into its planes (the
// lower ones straight into their raw places in the output, the top one into a scratch buffer), then histograms and
// codes plain bytes; the decoder decodes the top plane into the scratch buffer and composes each element from its
// planes in one pass. Split and compose are SSE2 (x86-64's baseline, so no dispatch) for 1, 2 and 4-byte elements,
// scalar for 8-byte elements, for the elements after the last whole vector, and where TTRACE_FLOAT_CODEC_SCALAR is
// defined (float_codec_scalar_test builds the codec so and checks it against the SSE2 build's bytes).

// Rotated elements [i, n) to their planes: byte q (q < W - 1) to lower[q], the top byte to top.
template <typename T>
void SplitScalar(const uint8_t* in, size_t i, size_t n, uint8_t* const* lower, uint8_t* top) {
  constexpr size_t W = sizeof(T);
  for (; i < n; ++i) {
    const T r = Rotate(Load<T>(in + i * W));
    for (size_t q = 0; q + 1 < W; ++q) lower[q][i] = static_cast<uint8_t>(r >> (8 * q));
    top[i] = static_cast<uint8_t>(r >> (8 * (W - 1)));
  }
}

// Elements [i, n) from their planes, unrotated.
template <typename T>
void MergeScalar(const uint8_t* const* lower, const uint8_t* top, size_t i, size_t n, uint8_t* out) {
  constexpr size_t W = sizeof(T);
  for (; i < n; ++i) {
    T r = static_cast<T>(static_cast<T>(top[i]) << (8 * (W - 1)));
    for (size_t q = 0; q + 1 < W; ++q) r = static_cast<T>(r | static_cast<T>(lower[q][i]) << (8 * q));
    Store<T>(out + i * W, Unrotate(r));
  }
}

#ifdef TTRACE_FLOAT_CODEC_SSE2
inline __m128i LoadV(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline void StoreV(uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

// The bytes at 8 * q of each 32-bit lane of a, b, c, d, in order (16 bytes).
template <int kShift>
inline __m128i Plane32(__m128i a, __m128i b, __m128i c, __m128i d) {
  const __m128i m = _mm_set1_epi32(0xff);
  const __m128i ab = _mm_packs_epi32(_mm_and_si128(_mm_srli_epi32(a, kShift), m), _mm_and_si128(_mm_srli_epi32(b, kShift), m));
  const __m128i cd = _mm_packs_epi32(_mm_and_si128(_mm_srli_epi32(c, kShift), m), _mm_and_si128(_mm_srli_epi32(d, kShift), m));
  return _mm_packus_epi16(ab, cd);
}
#endif

// Returns the first element not split.
template <typename T>
size_t SplitVector(const uint8_t* in, size_t n, uint8_t* const* lower, uint8_t* top) {
  size_t i = 0;
#ifdef TTRACE_FLOAT_CODEC_SSE2
  constexpr size_t W = sizeof(T);
  if constexpr (W == 1) {
    const __m128i hi = _mm_set1_epi8(static_cast<char>(0xfe)), lo = _mm_set1_epi8(1);
    for (; i + 16 <= n; i += 16) {
      const __m128i x = LoadV(in + i);
      StoreV(top + i, _mm_or_si128(_mm_and_si128(_mm_slli_epi16(x, 1), hi), _mm_and_si128(_mm_srli_epi16(x, 7), lo)));
    }
  } else if constexpr (W == 2) {
    const __m128i m = _mm_set1_epi16(0xff);
    for (; i + 16 <= n; i += 16) {
      __m128i a = LoadV(in + 2 * i), b = LoadV(in + 2 * i + 16);
      a = _mm_or_si128(_mm_slli_epi16(a, 1), _mm_srli_epi16(a, 15));
      b = _mm_or_si128(_mm_slli_epi16(b, 1), _mm_srli_epi16(b, 15));
      StoreV(lower[0] + i, _mm_packus_epi16(_mm_and_si128(a, m), _mm_and_si128(b, m)));
      StoreV(top + i, _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8)));
    }
  } else if constexpr (W == 4) {
    auto rot = [](__m128i x) { return _mm_or_si128(_mm_slli_epi32(x, 1), _mm_srli_epi32(x, 31)); };
    for (; i + 16 <= n; i += 16) {
      const __m128i a = rot(LoadV(in + 4 * i)), b = rot(LoadV(in + 4 * i + 16)), c = rot(LoadV(in + 4 * i + 32)),
                    d = rot(LoadV(in + 4 * i + 48));
      StoreV(lower[0] + i, Plane32<0>(a, b, c, d));
      StoreV(lower[1] + i, Plane32<8>(a, b, c, d));
      StoreV(lower[2] + i, Plane32<16>(a, b, c, d));
      StoreV(top + i, Plane32<24>(a, b, c, d));
    }
  }
#else
  (void)in, (void)n, (void)lower, (void)top;
#endif
  return i;
}

template <typename T>
void SplitPlanes(const uint8_t* in, size_t n, uint8_t* const* lower, uint8_t* top) {
  SplitScalar<T>(in, SplitVector<T>(in, n, lower, top), n, lower, top);
}

#ifdef TTRACE_FLOAT_CODEC_SSE2
const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

// MergeVector's FP16/BF16 and FP32 elements [0, returned) with AVX2, 32 elements a step, chosen at run time (codec29:
// the compose pass was a tenth of an FP16 plane's decoding). AVX2's byte and word unpacks work within each 16-byte
// lane: FP16's planes have their 8-byte quarters reordered first (0, 2, 1, 3) so that each lane's unpack gives 16
// consecutive elements; FP32's four results, each a lane of elements 0-15 and a lane of 16-31, are paired by lane.
__attribute__((target("avx2"))) inline __m256i Load256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
__attribute__((target("avx2"))) inline void Store256(uint8_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
__attribute__((target("avx2"))) inline __m256i Unrotate16x16(__m256i r) {
  return _mm256_or_si256(_mm256_srli_epi16(r, 1), _mm256_slli_epi16(r, 15));
}
__attribute__((target("avx2"))) inline __m256i Unrotate32x8(__m256i r) {
  return _mm256_or_si256(_mm256_srli_epi32(r, 1), _mm256_slli_epi32(r, 31));
}

template <size_t W>
__attribute__((target("avx2"))) size_t MergeAvx2(const uint8_t* const* lower, const uint8_t* top, size_t n,
                                                 uint8_t* out) {
  size_t i = 0;
  if constexpr (W == 2) {
    for (; i + 32 <= n; i += 32) {
      const __m256i l = _mm256_permute4x64_epi64(Load256(lower[0] + i), 0xd8);
      const __m256i h = _mm256_permute4x64_epi64(Load256(top + i), 0xd8);
      Store256(out + 2 * i, Unrotate16x16(_mm256_unpacklo_epi8(l, h)));
      Store256(out + 2 * i + 32, Unrotate16x16(_mm256_unpackhi_epi8(l, h)));
    }
  } else if constexpr (W == 4) {
    for (; i + 32 <= n; i += 32) {
      const __m256i p0 = Load256(lower[0] + i), p1 = Load256(lower[1] + i), p2 = Load256(lower[2] + i),
                    p3 = Load256(top + i);
      const __m256i l01 = _mm256_unpacklo_epi8(p0, p1), h01 = _mm256_unpackhi_epi8(p0, p1);
      const __m256i l23 = _mm256_unpacklo_epi8(p2, p3), h23 = _mm256_unpackhi_epi8(p2, p3);
      const __m256i r0 = Unrotate32x8(_mm256_unpacklo_epi16(l01, l23));
      const __m256i r1 = Unrotate32x8(_mm256_unpackhi_epi16(l01, l23));
      const __m256i r2 = Unrotate32x8(_mm256_unpacklo_epi16(h01, h23));
      const __m256i r3 = Unrotate32x8(_mm256_unpackhi_epi16(h01, h23));
      Store256(out + 4 * i, _mm256_permute2x128_si256(r0, r1, 0x20));       // elements 0-7
      Store256(out + 4 * i + 32, _mm256_permute2x128_si256(r2, r3, 0x20));  // 8-15
      Store256(out + 4 * i + 64, _mm256_permute2x128_si256(r0, r1, 0x31));  // 16-23
      Store256(out + 4 * i + 96, _mm256_permute2x128_si256(r2, r3, 0x31));  // 24-31
    }
  }
  return i;
}
#endif

// Returns the first element not merged.
template <typename T>
size_t MergeVector(const uint8_t* const* lower, const uint8_t* top, size_t n, uint8_t* out) {
  size_t i = 0;
#ifdef TTRACE_FLOAT_CODEC_SSE2
  constexpr size_t W = sizeof(T);
  if constexpr (W == 2 || W == 4) {
    if (kHaveAvx2) i = MergeAvx2<W>(lower, top, n, out);
  }
  if constexpr (W == 1) {
    const __m128i hi = _mm_set1_epi8(static_cast<char>(0x80)), lo = _mm_set1_epi8(0x7f);
    for (; i + 16 <= n; i += 16) {
      const __m128i r = LoadV(top + i);
      StoreV(out + i, _mm_or_si128(_mm_and_si128(_mm_srli_epi16(r, 1), lo), _mm_and_si128(_mm_slli_epi16(r, 7), hi)));
    }
  } else if constexpr (W == 2) {
    auto unrot = [](__m128i r) { return _mm_or_si128(_mm_srli_epi16(r, 1), _mm_slli_epi16(r, 15)); };
    for (; i + 16 <= n; i += 16) {  // after AVX2's
      const __m128i l = LoadV(lower[0] + i), h = LoadV(top + i);
      StoreV(out + 2 * i, unrot(_mm_unpacklo_epi8(l, h)));
      StoreV(out + 2 * i + 16, unrot(_mm_unpackhi_epi8(l, h)));
    }
  } else if constexpr (W == 4) {
    auto unrot = [](__m128i r) { return _mm_or_si128(_mm_srli_epi32(r, 1), _mm_slli_epi32(r, 31)); };
    for (; i + 16 <= n; i += 16) {
      const __m128i p0 = LoadV(lower[0] + i), p1 = LoadV(lower[1] + i), p2 = LoadV(lower[2] + i), p3 = LoadV(top + i);
      const __m128i l01 = _mm_unpacklo_epi8(p0, p1), h01 = _mm_unpackhi_epi8(p0, p1);
      const __m128i l23 = _mm_unpacklo_epi8(p2, p3), h23 = _mm_unpackhi_epi8(p2, p3);
      StoreV(out + 4 * i, unrot(_mm_unpacklo_epi16(l01, l23)));
      StoreV(out + 4 * i + 16, unrot(_mm_unpackhi_epi16(l01, l23)));
      StoreV(out + 4 * i + 32, unrot(_mm_unpacklo_epi16(h01, h23)));
      StoreV(out + 4 * i + 48, unrot(_mm_unpackhi_epi16(h01, h23)));
    }
  }
#else
  (void)lower, (void)top, (void)n, (void)out;
#endif
  return i;
}

template <typename T>
void MergePlanes(const uint8_t* const* lower, const uint8_t* top, size_t n, uint8_t* out) {
  MergeScalar<T>(lower, top, MergeVector<T>(lower, top, n, out), n, out);
}

// ---- deltas (kHuffmanDelta planes) -------------------------------------------------------------------------------
//
// A delta plane holds d[i] = s[i] - s[i-1] + 0x80 (mod 256) for i >= 1 and d[0] = 0x80 (the plane's first byte is
// stored in its header): neighbours a few units apart (smooth data: a random walk's mantissa bytes, its exponents
// changing at carries) give differences clustered at 0x80, which a Huffman code of a narrow range codes in a bit
// or two. Subtraction, not XOR: a carry into the byte moves it by one unit, not by a power of two. Adding 0x80 mod
// 256 flips the top bit (XOR 0x80), so the vector code uses XOR.
constexpr uint8_t kDeltaBias = 0x80;

// s -> d in place (from the end, so each predecessor is read before it is written over).
void DeltaInPlace(uint8_t* sym, size_t n) {
  size_t i = n;
#ifdef TTRACE_FLOAT_CODEC_SSE2
  const __m128i bias = _mm_set1_epi8(static_cast<char>(kDeltaBias));
  while (i >= 17) {  // the bytes [i - 16, i) and their predecessors [i - 17, i - 1)
    i -= 16;
    const __m128i x = LoadV(sym + i), p = LoadV(sym + i - 1);
    StoreV(sym + i, _mm_xor_si128(_mm_sub_epi8(x, p), bias));
  }
#endif
  for (; i > 1; --i) sym[i - 1] = static_cast<uint8_t>(sym[i - 1] - sym[i - 2] + kDeltaBias);
  if (n) sym[0] = kDeltaBias;
}

#ifdef TTRACE_FLOAT_CODEC_SSE2
// UndeltaInPlace's bytes [0, returned) with AVX2 (32 bytes a step: the four shifted adds work within each 16-byte
// lane, then the low lane's last byte is added to the high lane, and the previous vector's last byte to both): half
// of SSE2's instructions a byte, chosen at run time. `*prev` is the last byte summed.
__attribute__((target("avx2"))) size_t UndeltaAvx2(uint8_t* sym, size_t n, uint8_t* prev) {
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(kDeltaBias)), last = _mm256_set1_epi8(15);
  __m256i carry = _mm256_set1_epi8(static_cast<char>(*prev));
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i x = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sym + i)), bias);
    x = _mm256_add_epi8(x, _mm256_slli_si256(x, 1));
    x = _mm256_add_epi8(x, _mm256_slli_si256(x, 2));
    x = _mm256_add_epi8(x, _mm256_slli_si256(x, 4));
    x = _mm256_add_epi8(x, _mm256_slli_si256(x, 8));
    const __m256i lane_last = _mm256_shuffle_epi8(x, last);  // each lane's byte 15 in all its bytes
    x = _mm256_add_epi8(x, _mm256_permute2x128_si256(lane_last, lane_last, 0x08));  // low lane's to the high lane
    x = _mm256_add_epi8(x, carry);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sym + i), x);
    carry = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(x, last), 0xff);  // byte 31 in every byte
  }
  if (i) *prev = sym[i - 1];
  return i;
}
#endif

// d -> s in place: s[i] = s[i-1] + d[i] - 0x80 with s[-1] = first (a prefix sum; SSE2: four shifted adds a vector,
// then the previous vector's last byte added to every byte; AVX2 where the CPU has it).
void UndeltaInPlace(uint8_t* sym, size_t n, uint8_t first) {
  size_t i = 0;
  uint8_t prev = first;
#ifdef TTRACE_FLOAT_CODEC_SSE2
  if (kHaveAvx2) i = UndeltaAvx2(sym, n, &prev);
  const __m128i bias = _mm_set1_epi8(static_cast<char>(kDeltaBias));
  __m128i carry = _mm_set1_epi8(static_cast<char>(prev));
  for (; i + 16 <= n; i += 16) {
    __m128i x = _mm_xor_si128(LoadV(sym + i), bias);
    x = _mm_add_epi8(x, _mm_slli_si128(x, 1));
    x = _mm_add_epi8(x, _mm_slli_si128(x, 2));
    x = _mm_add_epi8(x, _mm_slli_si128(x, 4));
    x = _mm_add_epi8(x, _mm_slli_si128(x, 8));
    x = _mm_add_epi8(x, carry);
    StoreV(sym + i, x);
    const __m128i hi = _mm_unpackhi_epi8(x, x);  // bytes 8..15, each twice
    carry = _mm_shuffle_epi32(_mm_unpackhi_epi16(hi, hi), 0xff);  // byte 15 in every byte
  }
  if (i) prev = sym[i - 1];
#endif
  for (; i < n; ++i) prev = sym[i] = static_cast<uint8_t>(prev + sym[i] - kDeltaBias);
}

// ---- encoder ----------------------------------------------------------------------------------------------------
//
// A plane is planned from its exact byte range and a sampled histogram, then coded into a scratch region of bounded
// streams, so each stream's exact size is known only after coding; the header and the streams are then written to
// the plane's place, or the plane is stored raw when the code turned out no smaller (the sample can mislead).

// Planes of at most this many bytes are histogrammed exactly (their code is the one of the full histogram); larger
// ones from a sample of one kSampleChunk-byte chunk out of every kSampleGroup bytes (a quarter: sampling half of
// them measured no better ratio on any row).
constexpr size_t kExactHistogramBytes = 4096;
constexpr size_t kSampleChunk = 16, kSampleGroup = 64;
// A sampled code of at most this many bytes is a narrow one: see WritePlane.
constexpr int kNarrowCode = 48;

// The smallest and largest byte of sym[0, n), n >= 1.
void ByteRange(const uint8_t* sym, size_t n, int* lo, int* hi) {
  uint8_t mn = 0xff, mx = 0;
  size_t i = 0;
#ifdef TTRACE_FLOAT_CODEC_SSE2
  if (n >= 64) {
    __m128i a = LoadV(sym), b = a, c = a, d = a, ma = a, mb = a, mc = a, md = a;
    for (; i + 64 <= n; i += 64) {
      const __m128i x0 = LoadV(sym + i), x1 = LoadV(sym + i + 16), x2 = LoadV(sym + i + 32), x3 = LoadV(sym + i + 48);
      a = _mm_min_epu8(a, x0), b = _mm_min_epu8(b, x1), c = _mm_min_epu8(c, x2), d = _mm_min_epu8(d, x3);
      ma = _mm_max_epu8(ma, x0), mb = _mm_max_epu8(mb, x1), mc = _mm_max_epu8(mc, x2), md = _mm_max_epu8(md, x3);
    }
    alignas(16) uint8_t lo_v[16], hi_v[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(lo_v), _mm_min_epu8(_mm_min_epu8(a, b), _mm_min_epu8(c, d)));
    _mm_store_si128(reinterpret_cast<__m128i*>(hi_v), _mm_max_epu8(_mm_max_epu8(ma, mb), _mm_max_epu8(mc, md)));
    for (int k = 0; k < 16; ++k) mn = std::min(mn, lo_v[k]), mx = std::max(mx, hi_v[k]);
  }
#endif
  for (; i < n; ++i) mn = std::min(mn, sym[i]), mx = std::max(mx, sym[i]);
  *lo = mn;
  *hi = mx;
}

// The histogram f of sym[0, n) (n <= kExactHistogramBytes) or of a sample of it: from each group of kSampleGroup
// bytes one chunk of kSampleChunk, at an offset that varies from group to group (a hash of the group's index), so a
// tensor whose rows or columns repeat with a period of 64 or 128 elements is not sampled at one phase of it. Returns
// the bytes counted. Four tables, summed after, so a repeated byte's increments do not wait on each other.
size_t SampleHistogram(const uint8_t* sym, size_t n, bool exact, uint32_t f[256]) {
  uint32_t t[4][256];
  memset(t, 0, sizeof t);
  size_t count = 0;
  if (exact || n <= kExactHistogramBytes) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) ++t[0][sym[i]], ++t[1][sym[i + 1]], ++t[2][sym[i + 2]], ++t[3][sym[i + 3]];
    for (; i < n; ++i) ++t[0][sym[i]];
    count = n;
  } else {
    constexpr uint32_t kPhases = kSampleGroup / kSampleChunk;
    const size_t groups = n / kSampleGroup;
    for (size_t g = 0; g < groups; ++g) {
      static_assert(kPhases == 4, "the phase is the hash's top 2 bits");
      const uint32_t phase = (static_cast<uint32_t>(g) * 0x9e3779b1u) >> 30;
      const uint8_t* c = sym + g * kSampleGroup + phase * kSampleChunk;
#pragma GCC unroll 4
      for (size_t k = 0; k < kSampleChunk; k += 4) ++t[0][c[k]], ++t[1][c[k + 1]], ++t[2][c[k + 2]], ++t[3][c[k + 3]];
    }
    count = groups * kSampleChunk;
  }
  for (int s = 0; s < 256; ++s) f[s] = t[0][s] + t[1][s] + t[2][s] + t[3][s];
  return count;
}

#ifdef TTRACE_FLOAT_CODEC_SSE2
// MarkPresent's bytes [0, returned) with AVX2 (codec32): a plane that needs the pass holds few distinct bytes, most
// of them marked already (the sample's), so 32 bytes are tested against the marked set at once, as a bitmap looked
// up by nibbles: entry l of `bits[0]` has bit h set when byte h << 4 | l is marked (h < 8), `bits[1]` the same for h
// >= 8, both repeated in each 16-byte lane; the byte's top bit picks the table. Only a byte not yet marked is stored
// (and added to the tables), instead of a store for every byte (2.75 instructions a byte: 36M of the 737M the BF16
// run's FP32 gradients took to encode).
__attribute__((target("avx2"))) size_t MarkPresentAvx2(const uint8_t* sym, size_t n, uint8_t present[256]) {
  alignas(32) uint8_t bits[2][32] = {};
  auto mark = [&](uint8_t c) {
    present[c] = 1;
    const uint8_t bit = static_cast<uint8_t>(1u << (c >> 4 & 7));
    bits[c >> 7][c & 15] |= bit;
    bits[c >> 7][16 + (c & 15)] |= bit;
  };
  for (int c = 0; c < 256; ++c)
    if (present[c]) mark(static_cast<uint8_t>(c));
  __m256i lo_table = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits[0]));
  __m256i hi_table = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits[1]));
  const __m256i select = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128,  //
                                          1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  const __m256i nibble = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i x = Load256(sym + i);
    const __m256i low = _mm256_and_si256(x, nibble), high = _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble);
    const __m256i row = _mm256_blendv_epi8(_mm256_shuffle_epi8(lo_table, low), _mm256_shuffle_epi8(hi_table, low), x);
    const __m256i absent = _mm256_cmpeq_epi8(_mm256_and_si256(row, _mm256_shuffle_epi8(select, high)), zero);
    uint32_t m = static_cast<uint32_t>(_mm256_movemask_epi8(absent));
    if (m == 0) continue;
    for (; m; m &= m - 1) mark(sym[i + static_cast<size_t>(__builtin_ctz(m))]);
    lo_table = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits[0]));
    hi_table = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits[1]));
  }
  return i;
}
#endif

// Sets present[b] for every byte b of sym[0, n) (present may hold other bytes already: they stay).
void MarkPresent(const uint8_t* sym, size_t n, uint8_t present[256]) {
  size_t i = 0;
#ifdef TTRACE_FLOAT_CODEC_SSE2
  if (kHaveAvx2) i = MarkPresentAvx2(sym, n, present);
#endif
  for (; i + 4 <= n; i += 4) present[sym[i]] = present[sym[i + 1]] = present[sym[i + 2]] = present[sym[i + 3]] = 1;
  for (; i < n; ++i) present[sym[i]] = 1;
}

// A Huffman plane's header (mode, a delta plane's first byte, range, lengths, the `streams` stream sizes); returns
// where its streams start.
uint8_t* WriteHuffmanHeader(bool delta, uint8_t first, int lo, int hi, const uint8_t len[256], int streams,
                            const uint32_t bytes[], uint8_t* o) {
  *o++ = delta ? kHuffmanDelta : streams == kWideStreams ? kHuffman8 : kHuffman;
  if (delta) *o++ = first;
  *o++ = static_cast<uint8_t>(lo);
  *o++ = static_cast<uint8_t>(hi);
  for (int a = lo; a <= hi; a += 2) *o++ = static_cast<uint8_t>(len[a] | (a + 1 <= hi ? len[a + 1] << 4 : 0));
  for (int s = 0; s < streams; ++s) {
    memcpy(o, &bytes[s], 4);
    o += 4;
  }
  return o;
}

// One stream's bit writer. The pending bits sit at the top of acc, the oldest lowest: a symbol's entry holds its code
// at the top (code << (64 - len)) and its length in the low bits, so `acc = acc >> len | entry` appends it with one
// table load, and `bits += entry` counts it: bits' low 6 bits are the pending count (at most 55), the codes added
// above them are never read, and the lengths ORed into acc's low bits lie below the pending bits, where they are
// shifted out. A flush stores the pending bits from bit 0 of the next byte and keeps acc as it is.
struct BitWriter {
  uint64_t acc = 0, bits = 0;
  uint8_t* o;
};

__attribute__((always_inline)) inline void PutSymbol(uint64_t entry, uint64_t& acc, uint64_t& bits) {
  acc = (acc >> (entry & 63)) | entry;
  bits += entry;
}

// Writes the whole pending bytes with one 8-byte store (the bytes after them are written again later).
__attribute__((always_inline)) inline void Flush8(uint8_t*& o, uint64_t acc, uint64_t& bits) {
  const uint64_t n = bits & 63;  // >= 1: called after a symbol
  const uint64_t v = acc >> ((64 - n) & 63);
  memcpy(o, &v, 8);
  o += n >> 3;
  bits = n & 7;
}

// Codes symbols [i, last) of two streams (symbol j of a stream at sa[j * kStep], sb[j * kStep]), four symbols per
// stream (<= 48 bits + 7 pending)
// between 8-byte stores; the caller has checked that every store stays inside its stream. Two streams, not four, at
// a time: four streams' state, symbols and codes do not fit in x86-64's registers, and two independent chains
// (a shift and an OR a symbol) already keep the core busy.
template <size_t kStep>
__attribute__((always_inline)) inline void EncodeTwo(const uint64_t* entry, const uint8_t* sa, const uint8_t* sb,
                                                     size_t i, size_t last, BitWriter* wa, BitWriter* wb) {
  uint64_t a0 = wa->acc, a1 = wb->acc, n0 = wa->bits, n1 = wb->bits;
  uint8_t *o0 = wa->o, *o1 = wb->o;
  // Pointers, not an index: with an index, the two streams' state, pointers and bound took one register more than
  // x86-64 has, and the eight-stream loop kept its second output pointer on the stack (codec32). Interleaved
  // streams' symbols are neighbours: stream s + 1's at stream s's plus one.
  const ptrdiff_t b_at = kStep == kWideStreams ? 1 : sb - sa;
  const uint8_t* p = sa + i * kStep;
  const uint8_t* const stop = sa + last * kStep;
  for (; p < stop; p += 4 * kStep) {
    PutSymbol(entry[p[0]], a0, n0);
    PutSymbol(entry[p[b_at]], a1, n1);
    PutSymbol(entry[p[kStep]], a0, n0);
    PutSymbol(entry[p[b_at + kStep]], a1, n1);
    PutSymbol(entry[p[2 * kStep]], a0, n0);
    PutSymbol(entry[p[b_at + 2 * kStep]], a1, n1);
    PutSymbol(entry[p[3 * kStep]], a0, n0);
    PutSymbol(entry[p[b_at + 3 * kStep]], a1, n1);
    Flush8(o0, a0, n0);
    Flush8(o1, a1, n1);
  }
  *wa = {a0, n0, o0};
  *wb = {a1, n1, o1};
}

// Two symbols a lookup (codec30): a four-stream plane whose bytes all lie in [lo, lo + kPairRange) (a smooth plane's
// differences: a few values around 0x80) is coded a pair of neighbours at a time, one 16-bit load of both bytes, one
// table load (the pair's two codes as one: the first one's bits first) and one append, instead of two of each; the
// bytes written are the same. Pair (a, b) is entry (a - lo) + 256 (b - lo): the 16-bit load less 257 lo, so the
// table has (kPairRange - 1) 256 + kPairRange entries, of which the kPairRange^2 in range are filled.
constexpr int kPairRange = 16;
constexpr size_t kPairEntries = (kPairRange - 1) * 256 + kPairRange;
// A round of pairs holds 48 bits: at least two pairs of codes of kMaxLen bits (EncodeStreamsBody has no case of one).
static_assert(24 / kMaxLen >= 2, "two pairs of the longest codes a round");

// EncodeTwo for pairs: kPairs pairs a stream between 8-byte stores, their codes at most 48 bits together (a pair of
// codes of at most 48 / (2 kPairs) bits each), so the pending bits stay at most 55 as in EncodeTwo. `off` is 257 lo.
template <int kPairs>
__attribute__((always_inline)) inline void EncodeTwoPairs(const uint64_t* pair, size_t off, const uint8_t* sa,
                                                          const uint8_t* sb, size_t i, size_t last, BitWriter* wa,
                                                          BitWriter* wb) {
  uint64_t a0 = wa->acc, a1 = wb->acc, n0 = wa->bits, n1 = wb->bits;
  uint8_t *o0 = wa->o, *o1 = wb->o;
  for (; i < last; i += 2 * kPairs) {
#pragma GCC unroll 8
    for (int k = 0; k < kPairs; ++k) {
      PutSymbol(pair[Load<uint16_t>(sa + i + 2 * k) - off], a0, n0);
      PutSymbol(pair[Load<uint16_t>(sb + i + 2 * k) - off], a1, n1);
    }
    Flush8(o0, a0, n0);
    Flush8(o1, a1, n1);
  }
  *wa = {a0, n0, o0};
  *wb = {a1, n1, o1};
}

// Sixteen bytes two lookups (codec32): a four-stream plane that is mostly two bytes a and b (the low planes of FP32
// sums of BF16 values: the sign bit and zeros, or zeros and one other byte), whose codes are at most kRunMaxLen
// bits, is coded 16 bytes at a time where all 16 are a or b: two SSE2 compares find it, the mask of the b bytes, 8
// bits at a time, picks an entry of a table of the 256 runs of 8 such bytes (their codes joined, the first byte's
// bits first, as the stream has them), and the two entries are appended as two symbols; 16 bytes that hold another
// byte are coded one by one. The bytes written are the same. (The two codes are 1 and 1 to 3 bits in every such
// plane of codec_bench's rows: a second byte with a longer code is one of several rare ones, not worth a run.)
struct Runs {
  int a = -1, b = -1;  // a < 0: not coded by runs
};
#ifdef TTRACE_FLOAT_CODEC_SSE2
constexpr bool kRunsCompiled = true;
#else
constexpr bool kRunsCompiled = false;  // the compares are SSE2's
#endif
constexpr int kRunMaxLen = 3;  // a round's 16 codes in 48 bits: one 8-byte store after them
constexpr size_t kRunBytes = 16;
// Codes a stream's bytes [i, last) in rounds of kRunBytes: a round that holds other bytes than a and b stores after
// every four bytes, as EncodeTwo. The caller has checked that every store stays inside the stream.
#ifdef TTRACE_FLOAT_CODEC_SSE2
__attribute__((always_inline)) inline void EncodeRuns(const uint64_t* entry, const uint64_t* run, __m128i va,
                                                      __m128i vb, const uint8_t* sym, size_t i, size_t last,
                                                      BitWriter* w) {
  uint64_t acc = w->acc, bits = w->bits;
  uint8_t* o = w->o;
  for (; i < last; i += kRunBytes) {
    const __m128i x = LoadV(sym + i), is_b = _mm_cmpeq_epi8(x, vb);
    const uint32_t both = static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, va), is_b)));
    if (__builtin_expect(both == 0xffff, 1)) {
      const uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(is_b));
      PutSymbol(run[m & 255], acc, bits);
      PutSymbol(run[m >> 8], acc, bits);
      Flush8(o, acc, bits);
    } else {
#pragma GCC unroll 4
      for (size_t k = i; k < i + kRunBytes; k += 4) {
        PutSymbol(entry[sym[k]], acc, bits);
        PutSymbol(entry[sym[k + 1]], acc, bits);
        PutSymbol(entry[sym[k + 2]], acc, bits);
        PutSymbol(entry[sym[k + 3]], acc, bits);
        Flush8(o, acc, bits);
      }
    }
  }
  *w = {acc, bits, o};
}
#endif

// Bytes of scratch a stream of a plane of n bytes in S streams may take: its symbols at kMaxLen bits, and room for
// the last 8-byte store.
constexpr size_t StreamRegion(size_t n, int S) { return ((n + S - 1) / S * kMaxLen + 7) / 8 + 8; }
// Scratch for a block's streams, in either count.
constexpr size_t kStreamScratch = std::max(kStreams * StreamRegion(size_t{1} << kBlockLog2, kStreams),
                                           kWideStreams * StreamRegion(size_t{1} << kBlockLog2, kWideStreams));

// Codes a plane's n bytes into its S streams, stream s at region + s * StreamRegion(n, S); sets each stream's size.
// Four streams hold consecutive ranges (StreamRange), eight interleave (DecodeWideBody). 8-byte stores happen only
// while they stay inside their region, the rest byte by byte.
template <int S>
__attribute__((always_inline)) inline void EncodeStreamsBody(const uint8_t* sym, size_t n, const uint8_t len[256],
                                                             int lo, int hi, Runs runs, uint8_t* region,
                                                             uint32_t bytes[]) {
  uint64_t entry[256];
  uint16_t code16[256];
  CanonicalCodes(len, code16);
  for (int s = 0; s < 256; ++s) entry[s] = len[s] ? static_cast<uint64_t>(code16[s]) << (64 - len[s]) | len[s] : 0;
  // Pairs where the plane's bytes are narrow (four streams of consecutive bytes only): as many pairs between 8-byte
  // stores as keep them within 48 bits at the longest code in range, 8, 6, 4, 3 or 2 (0: symbol by symbol).
  int longest = 1;
  for (int c = lo; c <= hi; ++c) longest = std::max<int>(longest, len[c]);
  const bool use_runs = S == kStreams && kRunsCompiled && runs.a >= 0;  // runs first: 16 bytes two lookups
  const int pairs = !use_runs && S == kStreams && hi - lo < kPairRange ? std::min(8, 24 / longest) : 0;
  uint64_t pair[S == kStreams ? kPairEntries : 1];
  const size_t off = 257 * static_cast<size_t>(lo);
  if (pairs) {
    for (int b = lo; b <= hi; ++b)
      for (int a = lo; a <= hi; ++a) {
        const uint32_t l = len[a] + len[b];
        const uint64_t code = code16[a] | static_cast<uint64_t>(code16[b]) << len[a];
        pair[(a - lo) + 256 * (b - lo)] = l ? code << (64 - l) | l : 0;
      }
  }
  constexpr size_t kStep = S == kWideStreams ? kWideStreams : 1;
  size_t first[S], count[S];  // stream s's symbol j is sym[first[s] + j * kStep]
  for (int s = 0; s < S; ++s) {
    if constexpr (S == kWideStreams) {
      first[s] = static_cast<size_t>(s);
      count[s] = WideCount(n, s);
    } else {
      size_t e;
      StreamRange(n, s, &first[s], &e);
      count[s] = e - first[s];
    }
  }
  BitWriter w[S];
  uint8_t *start[S], *end[S];
  for (int s = 0; s < S; ++s) {
    w[s].o = start[s] = region + s * StreamRegion(n, S);
    end[s] = start[s] + StreamRegion(n, S);
  }
  const size_t common = count[S - 1];
  // A round (four symbols) advances a stream by at most 6 bytes, so the rounds that keep every 8-byte store inside
  // its region are counted once per batch, not checked per round.
  auto room = [](const uint8_t* o, const uint8_t* stop) {
    return o + 8 <= stop ? static_cast<size_t>(stop - o - 8) / 6 + 1 : 0;
  };
  size_t done[S];
  if (use_runs) {
#ifdef TTRACE_FLOAT_CODEC_SSE2
    // The runs of 4 bytes (bit k of m: byte k is b), then of 8 as two of 4.
    uint64_t code4[16], len4[16], run[256];
    for (uint32_t m = 0; m < 16; ++m) {
      code4[m] = len4[m] = 0;
      for (int k = 0; k < 4; ++k) {
        const int c = m >> k & 1 ? runs.b : runs.a;
        code4[m] |= static_cast<uint64_t>(code16[c]) << len4[m];
        len4[m] += len[c];
      }
    }
    for (uint32_t m = 0; m < 256; ++m) {
      const uint64_t l = len4[m & 15] + len4[m >> 4];
      run[m] = (code4[m & 15] | code4[m >> 4] << len4[m & 15]) << (64 - l) | l;
    }
    const __m128i va = _mm_set1_epi8(static_cast<char>(runs.a)), vb = _mm_set1_epi8(static_cast<char>(runs.b));
    // A round of 16 bytes coded one by one advances a stream by at most 4 stores of 6 bytes.
    auto run_room = [](const uint8_t* o, const uint8_t* stop) {
      return o + 8 <= stop ? static_cast<size_t>(stop - o - 8) / 24 + 1 : 0;
    };
    for (int s = 0; s < S; ++s) {
      size_t i = 0;
      for (;;) {
        const size_t rounds = std::min((count[s] - i) / kRunBytes, run_room(w[s].o, end[s]));
        if (rounds == 0) break;
        const size_t last = i + kRunBytes * rounds;
        EncodeRuns(entry, run, va, vb, sym + first[s], i, last, &w[s]);
        i = last;
      }
      done[s] = i;
    }
#endif
  } else {
    for (int s = 0; s < S; s += 2) {
      size_t i = 0;
      // A round: four symbols, or kPairs pairs, a stream (at most 48 bits: 6 bytes).
      const size_t per_round = pairs ? 2 * static_cast<size_t>(pairs) : 4;
      for (;;) {
        const size_t rounds = std::min({(common - i) / per_round, room(w[s].o, end[s]), room(w[s + 1].o, end[s + 1])});
        if (rounds == 0) break;
        const size_t last = i + per_round * rounds;
        const uint8_t *sa = sym + first[s], *sb = sym + first[s + 1];
        switch (pairs) {
          case 8: EncodeTwoPairs<8>(pair, off, sa, sb, i, last, &w[s], &w[s + 1]); break;
          case 6: EncodeTwoPairs<6>(pair, off, sa, sb, i, last, &w[s], &w[s + 1]); break;
          case 4: EncodeTwoPairs<4>(pair, off, sa, sb, i, last, &w[s], &w[s + 1]); break;
          case 3: EncodeTwoPairs<3>(pair, off, sa, sb, i, last, &w[s], &w[s + 1]); break;
          case 2: EncodeTwoPairs<2>(pair, off, sa, sb, i, last, &w[s], &w[s + 1]); break;
          default: EncodeTwo<kStep>(entry, sa, sb, i, last, &w[s], &w[s + 1]);
        }
        i = last;
      }
      done[s] = done[s + 1] = i;
    }
  }
  for (int s = 0; s < S; ++s) {
    uint64_t acc = w[s].acc, bits = w[s].bits & 63;
    uint8_t* o = w[s].o;
    for (size_t j = done[s]; j < count[s]; ++j) {
      PutSymbol(entry[sym[first[s] + j * kStep]], acc, bits);
      for (bits &= 63; bits >= 8; bits -= 8) *o++ = static_cast<uint8_t>(acc >> (64 - bits));
    }
    if (bits) *o++ = static_cast<uint8_t>(acc >> (64 - bits));
    bytes[s] = static_cast<uint32_t>(o - start[s]);
  }
}

#ifdef TTRACE_FLOAT_CODEC_SSE2
// With BMI2 a variable shift is one instruction on any register (shlx) instead of three micro-ops through cl, which
// also frees cl for the register allocator: the same code compiled for it, chosen at run time.
template <int S>
__attribute__((target("bmi2"))) void EncodeStreamsBmi2(const uint8_t* sym, size_t n, const uint8_t len[256], int lo,
                                                       int hi, Runs runs, uint8_t* region, uint32_t bytes[]) {
  EncodeStreamsBody<S>(sym, n, len, lo, hi, runs, region, bytes);
}
const bool kHaveBmi2 = __builtin_cpu_supports("bmi2");
#endif

// sym's bytes all lie in [lo, hi].
template <int S>
void EncodeStreams(const uint8_t* sym, size_t n, const uint8_t len[256], int lo, int hi, Runs runs, uint8_t* region,
                   uint32_t bytes[]) {
#ifdef TTRACE_FLOAT_CODEC_SSE2
  if (kHaveBmi2) return EncodeStreamsBmi2<S>(sym, n, len, lo, hi, runs, region, bytes);
#endif
  EncodeStreamsBody<S>(sym, n, len, lo, hi, runs, region, bytes);
}

// The two bytes a four-stream plane is coded by runs of (EncodeRuns), or none: its two most frequent sampled bytes
// (f over `count`), when both have codes of at most kRunMaxLen bits and they are at least 24/25 of the sample, so
// that ~half of the 16-byte rounds or more hold only them (0.96^16 = 0.52 where bytes are independent).
Runs PlanRuns(const uint32_t f[256], size_t count, const uint8_t len[256], int lo, int hi) {
  Runs r;
  if (!kRunsCompiled) return r;
  int a = -1, b = -1;
  for (int c = lo; c <= hi; ++c) {
    if (a < 0 || f[c] > f[a]) {
      b = a;
      a = c;
    } else if (b < 0 || f[c] > f[b]) {
      b = c;
    }
  }
  if (b < 0 || len[a] == 0 || len[b] == 0 || len[a] > kRunMaxLen || len[b] > kRunMaxLen) return r;
  if ((static_cast<uint64_t>(f[a]) + f[b]) * 25 < static_cast<uint64_t>(count) * 24) return r;
  r.a = a;
  r.b = b;
  return r;
}

// How a lower plane is histogrammed, from a sample of it: not at all (stored raw: a Huffman code of the sample saves
// less than 1/16, or one value), exactly (a code saves less than 1/4: with so little skew, a sampled histogram's noise
// costs a tenth of the gain), or from a sample.
enum class LowerPlan { kRaw, kExact, kSampled };
struct Plan {
  LowerPlan lower;
  bool delta;  // code the plane's differences (kHuffmanDelta)
};

// x log2 x for the counts a sample holds (at most 8191 a byte: a plane's sample takes at most 4096 bytes, or every
// byte of a plane of fewer than 8192), filled once (the same double as computed in place): the planning's entropies
// took ~40 instructions a present byte in log2.
constexpr uint32_t kXLog2XTable = 8192;
double XLog2X(uint32_t x) {
  static const struct Table {
    double v[kXLog2XTable];
    Table() {
      for (uint32_t i = 0; i < kXLog2XTable; ++i) v[i] = i ? i * std::log2(static_cast<double>(i)) : 0;
    }
  } table;
  return x < kXLog2XTable ? table.v[x] : x * std::log2(static_cast<double>(x));
}

// Shannon entropy, in bits, of `count` symbols with the histogram f.
double EntropyBits(const uint32_t f[256], size_t count) {
  double sum = 0;
  for (int c = 0; c < 256; ++c)
    if (f[c]) sum += XLog2X(f[c]);
  return static_cast<double>(count) * std::log2(static_cast<double>(count)) - sum;
}

// A sample of a plane: the histogram of the `count` bytes 0, step, 2 step, ... (f); the `dcount` differences from
// their predecessors (as DeltaInPlace writes them) of bytes dstep, 2 dstep, ..., how many of them lie within +-16
// (`small`), and, only when that is at least a quarter of them (DeltaPays needs them then), their histogram (fd).
struct PlaneSample {
  uint32_t f[256], fd[256];
  size_t count, dcount, small;
};
void SamplePlane(const uint8_t* sym, size_t n, size_t step, size_t dstep, PlaneSample* ps) {
  // Four tables, summed after, so that a repeated byte's increments do not wait on each other (a plane of one
  // common byte chained them: ~5 cycles a sample).
  uint32_t t[4][256];
  memset(t, 0, sizeof t);
  size_t i = 0, count = 0;
  for (; i + 3 * step < n; i += 4 * step, count += 4)
    ++t[0][sym[i]], ++t[1][sym[i + step]], ++t[2][sym[i + 2 * step]], ++t[3][sym[i + 3 * step]];
  for (; i < n; i += step, ++count) ++t[0][sym[i]];
  for (int c = 0; c < 256; ++c) ps->f[c] = t[0][c] + t[1][c] + t[2][c] + t[3][c];
  ps->count = count;
  ps->dcount = ps->small = 0;
  for (size_t i = dstep; i < n; i += dstep, ++ps->dcount)
    ps->small += static_cast<uint8_t>(sym[i] - sym[i - 1] + 16) <= 32;
  if (ps->small * 4 < ps->dcount) return;
  memset(ps->fd, 0, sizeof ps->fd);
  for (size_t i = dstep; i < n; i += dstep) ++ps->fd[static_cast<uint8_t>(sym[i] - sym[i - 1] + kDeltaBias)];
}

// Whether the sampled differences' entropy is at most 7/8 of the bytes' (hv): a delta plane then codes smaller
// by more than what its prefix sum costs the decoder. The entropy of the differences is computed only when at
// least a quarter of them are small (+-16): smooth data's are; a plane of independent uniform bytes has 13% such.
// hv and hd are per sampled byte.
bool DeltaPays(const PlaneSample& ps, double hv, double* hd) {
  if (ps.dcount == 0 || ps.small * 4 < ps.dcount) return false;
  *hd = EntropyBits(ps.fd, ps.dcount) / static_cast<double>(ps.dcount);
  return *hd * 8 < hv * 7;
}

// The top plane (always coded when that pays): a smaller sample decides only whether its differences code smaller.
constexpr size_t kTopDeltaSample = 512;
bool PlanTopDelta(const uint8_t* sym, size_t n) {
  if (n < 2) return false;
  PlaneSample ps;
  const size_t step = std::max<size_t>(1, n / kTopDeltaSample);
  SamplePlane(sym, n, step, step, &ps);
  double hd;
  return DeltaPays(ps, EntropyBits(ps.f, ps.count) / static_cast<double>(ps.count), &hd);
}

Plan PlanLower(const uint8_t* sym, size_t n, bool allow_delta) {
  if (n < 2) return {LowerPlan::kSampled, false};
  // The differences at an eighth of the bytes sampled (kTopDeltaSample of a block): enough to see a gain of 1/8.
  PlaneSample ps;
  const size_t step = std::max<size_t>(1, n / kSample);
  SamplePlane(sym, n, step, allow_delta ? 8 * step : n, &ps);
  int used = 0;
  for (uint32_t x : ps.f) used += x != 0;
  if (used < 2) return {LowerPlan::kSampled, false};
  // No prefix code beats the entropy: when it alone misses the 1/16, skip the code's build.
  double entropy_bits = EntropyBits(ps.f, ps.count), hd = 0;
  const bool delta = allow_delta && DeltaPays(ps, entropy_bits / static_cast<double>(ps.count), &hd);
  const uint32_t* f = delta ? ps.fd : ps.f;
  const size_t count = delta ? ps.dcount : ps.count;
  if (delta) entropy_bits = hd * static_cast<double>(count);
  if (entropy_bits * 16 > static_cast<double>(count) * 8 * 15 * (1 + 1e-9)) return {LowerPlan::kRaw, false};
  uint8_t len[256];
  BuildLengths(f, len);
  uint64_t bits = 0;
  for (int s = 0; s < 256; ++s) bits += static_cast<uint64_t>(f[s]) * len[s];
  if (bits * 16 > count * 8 * 15) return {LowerPlan::kRaw, false};
  return {bits * 4 > count * 8 * 3 ? LowerPlan::kExact : LowerPlan::kSampled, delta};
}

uint32_t PairWindows(const uint8_t len[256]);

// Whether a plane's neighbours repeat: sampled adjacent pairs (one every kNeighbourStep symbols) are equal more than
// twice as often as two independent draws from the plane's sampled histogram (f, over `count` symbols) would be
// (Σ p²). That is local structure (smooth data: a random walk's neighbours share their exponent) which a
// general-purpose compressor over the coded bytes finds only while neighbours' codes stay neighbours, so such a
// plane keeps four streams of consecutive elements instead of eight interleaved (docs/codec.md, "Eight streams").
constexpr size_t kNeighbourStep = 16;
bool NeighboursRepeat(const uint8_t* sym, size_t n, const uint32_t f[256], size_t count) {
  uint64_t equal = 0, pairs = 0, sum_sq = 0;
  for (size_t i = 0; i + 1 < n; i += kNeighbourStep, ++pairs) equal += sym[i] == sym[i + 1];
  for (int c = 0; c < 256; ++c) sum_sq += static_cast<uint64_t>(f[c]) * f[c];
  return pairs > 0 && equal * count * count > 2 * pairs * sum_sq;
}

// Writes a plane's n bytes at `out` as the smallest of raw, constant and Huffman (raw unless `try_code`); returns
// the bytes written, at most 1 + n. `sym` is either outside [out, out + 1 + n) or at or after out + 1 (a lower
// plane in its raw place: a raw plane moves down, and a coded one is read before it is written over). `streams`
// holds kStreamScratch bytes. The code is built from the plane's exact range and its sampled histogram,
// every byte of the range the sample missed counted once (so every byte that occurs has a code); it is chosen only
// when it comes out smaller than raw, in eight streams when the plane has at least `wide_min` symbols and its code
// is too long for two symbols a lookup (kWideStreamsMinSymbols). With `delta` the code is of the plane's
// differences (kHuffmanDelta, four streams; DeltaInPlace rewrites `sym`, and UndeltaInPlace restores it when the
// plane is stored raw after all).
size_t WritePlane(uint8_t* sym, size_t n, bool try_code, bool exact, size_t wide_min, bool delta, uint8_t* out,
                  uint8_t* streams) {
  const uint8_t first = n ? sym[0] : 0;
  bool in_delta = false;
  auto raw = [&] {
    if (in_delta) UndeltaInPlace(sym, n, first);
    out[0] = kRaw;
    if (out + 1 != sym) memmove(out + 1, sym, n);
    return 1 + n;
  };
  if (n == 0 || !try_code) return raw();
  int lo, hi;
  ByteRange(sym, n, &lo, &hi);
  if (lo == hi) {
    out[0] = kConst;
    out[1] = static_cast<uint8_t>(lo);
    return 2;
  }
  if (delta) {  // not constant, so its differences are not all 0x80 either
    DeltaInPlace(sym, n);
    in_delta = true;
    ByteRange(sym, n, &lo, &hi);
  }
  uint32_t f[256];
  const size_t count = SampleHistogram(sym, n, exact, f);
  uint8_t len[256];
  if (count == n) {
    BuildLengths(f, len);
  } else {
    // Every byte of the range that occurs needs a code, also those the sample missed: each is counted once. That
    // costs little in a wide code; in a narrow one (few bytes, some of them common: smooth data) a byte that does
    // not occur can lengthen a common byte's code, so when counting the missed bytes costs more than 1/256 of the
    // sample's coded size, a pass that only marks the bytes present (stores, no read-modify-write) keeps the
    // absent ones out of the code.
    uint32_t floored[256];
    int missing = 0, sampled = 0;
    for (int c = 0; c < 256; ++c) {
      floored[c] = f[c] + (c >= lo && c <= hi && f[c] == 0);
      missing += floored[c] != f[c];
      sampled += f[c] != 0;
    }
    BuildLengths(floored, len);
    if (missing && sampled <= kNarrowCode) {
      uint8_t len0[256];
      BuildLengths(f, len0);
      uint64_t bits0 = 0, bits1 = 0;
      for (int c = lo; c <= hi; ++c) bits0 += static_cast<uint64_t>(f[c]) * len0[c], bits1 += static_cast<uint64_t>(f[c]) * len[c];
      if (bits1 * 256 > bits0 * 257) {
        uint8_t present[256];
        for (int c = 0; c < 256; ++c) present[c] = f[c] != 0;
        MarkPresent(sym, n, present);
        for (int c = lo; c <= hi; ++c) floored[c] = f[c] + (f[c] == 0 && present[c]);
        BuildLengths(floored, len);
      }
    }
  }
  const int stream_count = !delta && n >= wide_min && PairWindows(len) * 8 < kTableSize * 7 &&
                                   !NeighboursRepeat(sym, n, f, count)
                               ? kWideStreams
                               : kStreams;
  const size_t header = 3 + (delta ? 1 : 0) + static_cast<size_t>(hi - lo + 2) / 2 + 4 * stream_count;
  uint64_t bits = 0;
  for (int c = lo; c <= hi; ++c) bits += static_cast<uint64_t>(f[c]) * len[c];
  // The sample's estimate of the coded size; when it is not below raw, the code is not tried. (For an exact
  // histogram this is the exact size less the streams' padding bits.)
  if (header * 8 * count + bits * n >= (1 + n) * 8 * count) return raw();
  uint32_t bytes[kMaxStreams];
  if (stream_count == kWideStreams)
    EncodeStreams<kWideStreams>(sym, n, len, lo, hi, Runs{}, streams, bytes);
  else
    EncodeStreams<kStreams>(sym, n, len, lo, hi, PlanRuns(f, count, len, lo, hi), streams, bytes);
  size_t total = header;
  for (int s = 0; s < stream_count; ++s) total += bytes[s];
  if (total >= 1 + n) return raw();
  uint8_t* o = WriteHuffmanHeader(delta, first, lo, hi, len, stream_count, bytes, out);
  for (int s = 0; s < stream_count; ++s) {
    memcpy(o, streams + s * StreamRegion(n, stream_count), bytes[s]);
    o += bytes[s];
  }
  return total;
}

// The top plane is always coded if that pays; a lower plane only when a sample says it may. One split writes the
// lower planes in place and the top plane to `scratch` (2^kBlockLog2 bytes); the planes are then written one after
// another, each at or before its raw place (planes before q end before q's raw place, never in q + 1's), their
// streams coded into `streams` (kStreamScratch bytes) first.
// What a codec version's encoder may write: eight-stream planes (version 2) of at least wide_min symbols, delta
// planes (version 3).
struct EncodeOptions {
  size_t wide_min;
  bool delta;
};

template <typename T>
size_t EncodeBlock(const uint8_t* in, size_t n, EncodeOptions opt, uint8_t* out, uint8_t* scratch, uint8_t* streams) {
  constexpr int W = sizeof(T);
  uint8_t* lower[W > 1 ? W - 1 : 1];
  for (int plane = 0; plane + 1 < W; ++plane) lower[plane] = out + plane * (1 + n) + 1;
  SplitPlanes<T>(in, n, lower, scratch);
  size_t pos = 0;
  for (int plane = 0; plane + 1 < W; ++plane) {
    const Plan plan = PlanLower(lower[plane], n, opt.delta);
    pos += WritePlane(lower[plane], n, plan.lower != LowerPlan::kRaw, plan.lower == LowerPlan::kExact, opt.wide_min,
                      plan.delta, out + pos, streams);
  }
  const bool top_delta = opt.delta && PlanTopDelta(scratch, n);
  return pos + WritePlane(scratch, n, true, false, opt.wide_min, top_delta, out + pos, streams);
}

// ---- decoder ----------------------------------------------------------------------------------------------------

// Up to 8 bytes of a stream of `size` bytes from byte `at`, zero past its end.
inline uint64_t LoadTail(const uint8_t* p, size_t size, size_t at) {
  uint64_t v = 0;
  if (at < size) memcpy(&v, p + at, std::min<size_t>(8, size - at));
  return v;
}

// A decoder's kMaxLen-bit window of w: with BMI2 (kBmi2: the code compiled for it) one bzhi by `k12` (kMaxLen in a
// register) instead of a register copy and an and.
template <bool kBmi2>
__attribute__((always_inline)) inline uint64_t Window(uint64_t w, uint64_t k12) {
  if constexpr (kBmi2) {
    uint64_t x;
    asm("bzhi %2, %1, %0" : "=r"(x) : "r"(w), "r"(k12));  // bits 0 to kMaxLen - 1 of w
    return x;
  } else {
    (void)k12;
    return w & (kTableSize - 1);
  }
}

// Decodes one four-stream Huffman plane's symbols to dst[idx * kStride] (kStride 1: a plane of bytes; W: byte `plane` of
// each element of the output, for the caller to unrotate after the last plane).
template <size_t kStride, bool kBmi2>
__attribute__((always_inline)) inline const char* DecodeStreamsBody(const uint8_t* data, const uint32_t bytes[kStreams],
                                                                    size_t n, const uint16_t table[kTableSize],
                                                                    uint8_t* dst) {
  auto put = [&](size_t idx, uint16_t entry) __attribute__((always_inline)) {
    dst[idx * kStride] = static_cast<uint8_t>(entry >> 8);
  };
  size_t b[kStreams], e[kStreams];
  const uint8_t* p[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    StreamRange(n, s, &b[s], &e[s]);
    p[s] = data;
    data += bytes[s];
  }
  const uint8_t *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
  uint64_t q0 = 0, q1 = 0, q2 = 0, q3 = 0;  // bits consumed
  const size_t common = e[3] - b[3];
  // The outputs advance together: one pointer and the streams' distances from it.
  uint8_t* d = dst + b[0] * kStride;
  const size_t d1 = (b[1] - b[0]) * kStride, d2 = (b[2] - b[0]) * kStride, d3 = (b[3] - b[0]) * kStride;
  // A round (four symbols a stream) reads 8 bytes at each stream's position and advances it by at most 6 bytes (4
  // codes of at most 12 bits), so the rounds whose loads stay inside every stream are counted once per batch.
  auto room = [](uint64_t q, uint32_t size) -> size_t {
    return size >= 8 && (q >> 3) <= size - 8 ? static_cast<size_t>((size - 8 - (q >> 3)) / 6 + 1) : 0;
  };
  size_t i = 0;
  for (;;) {
    const size_t rounds =
        std::min({(common - i) / 4, room(q0, bytes[0]), room(q1, bytes[1]), room(q2, bytes[2]), room(q3, bytes[3])});
    if (rounds == 0) break;
    // One stream's four symbols after another: the out-of-order core overlaps the four streams' chains (table load,
    // shift) across a round all the same, and one stream's state at a time leaves the rest in registers.
    uint64_t k12 = kMaxLen;  // Window's (as in DecodeWideBody)
    asm("" : "+r"(k12));
    auto four = [table, k12](const uint8_t* ps, uint64_t& qs, uint8_t* ds) __attribute__((always_inline)) {
      uint64_t w = Load<uint64_t>(ps + (qs >> 3)) >> (qs & 7);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const uint64_t t = table[Window<kBmi2>(w, k12)];
        w >>= t & 63;  // the length: one shift on the chain from one symbol's table load to the next one's
        ds[k * kStride] = static_cast<uint8_t>(t >> 8);
        qs += t & 15;
      }
    };
    for (const size_t stop = i + 4 * rounds; i < stop; i += 4, d += 4 * kStride) {
      four(p0, q0, d);
      four(p1, q1, d + d1);
      four(p2, q2, d + d2);
      four(p3, q3, d + d3);
    }
  }
  uint64_t q[kStreams] = {q0, q1, q2, q3};
  for (int s = 0; s < kStreams; ++s) {
    for (size_t idx = b[s] + i; idx < e[s]; ++idx) {
      const uint16_t t = table[(LoadTail(p[s], bytes[s], q[s] >> 3) >> (q[s] & 7)) & (kTableSize - 1)];
      put(idx, t);
      q[s] += t & 15;
      if (q[s] > static_cast<uint64_t>(bytes[s]) * 8) return "a Huffman stream ends inside a code";
    }
    if ((q[s] + 7) / 8 != bytes[s]) return "a Huffman stream has trailing bytes";
  }
  return nullptr;
}

// A kHuffman8 plane's eight streams interleave the symbols: stream s holds symbols s, s + 8, s + 16, ... (that is
// (n - s + 7) / 8 of them when s < n, none otherwise). A round decodes four symbols of every stream, 32 consecutive
// symbols, so the outputs are one pointer and constant offsets, and the streams' positions are bit offsets from
// the plane's first stream: the state of the eight chains (table load, shift) fits x86-64's registers.

template <size_t kStride, bool kBmi2>
__attribute__((always_inline)) inline const char* DecodeWideBody(const uint8_t* data, const uint32_t bytes[], size_t n,
                                                                 const uint16_t table[kTableSize], uint8_t* dst) {
  constexpr int S = kWideStreams;
  uint64_t q[S];      // bit position in `data`
  uint64_t stop[S];   // byte where the stream ends
  uint64_t at = 0;
  for (int s = 0; s < S; ++s) {
    q[s] = at * 8;
    at += bytes[s];
    stop[s] = at;
  }
  // A round reads 8 bytes at each stream's position and advances it by at most 6 (four codes of at most 12 bits):
  // the rounds whose loads stay inside every stream are counted once per batch.
  size_t j = 0;  // symbols decoded of every stream
  const size_t common = WideCount(n, S - 1);
  uint8_t* d = dst;
  for (;;) {
    size_t rounds = (common - j) / 4;
    for (int s = 0; s < S; ++s) {
      const uint64_t byte = q[s] >> 3;
      rounds = std::min<size_t>(rounds, stop[s] >= 8 && byte <= stop[s] - 8 ? (stop[s] - 8 - byte) / 6 + 1 : 0);
    }
    if (rounds == 0) break;
    uint64_t q0 = q[0], q1 = q[1], q2 = q[2], q3 = q[3], q4 = q[4], q5 = q[5], q6 = q[6], q7 = q[7];
    // Four symbols of one stream: its lengths summed with the symbols (entries are symbol << 8 | length, four
    // lengths stay below 256) and masked once. The entry zero-extended to 64 bits by its load (no copy for the
    // shift), the window one bzhi with BMI2 (Window).
    uint64_t k12 = kMaxLen;
    asm("" : "+r"(k12));
    auto four = [table, data, k12](uint64_t& qs, uint8_t* ds) __attribute__((always_inline)) {
      uint64_t w = Load<uint64_t>(data + (qs >> 3)) >> (qs & 7);
      uint64_t sum = 0;
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const uint64_t t = table[Window<kBmi2>(w, k12)];
        w >>= t & 63;
        ds[k * S * kStride] = static_cast<uint8_t>(t >> 8);
        sum += t;
      }
      qs += sum & 0xff;
    };
    for (const uint8_t* end = d + rounds * 4 * S * kStride; d < end; d += 4 * S * kStride) {
      four(q0, d);
      four(q1, d + 1 * kStride);
      four(q2, d + 2 * kStride);
      four(q3, d + 3 * kStride);
      four(q4, d + 4 * kStride);
      four(q5, d + 5 * kStride);
      four(q6, d + 6 * kStride);
      four(q7, d + 7 * kStride);
    }
    j += 4 * rounds;
    q[0] = q0, q[1] = q1, q[2] = q2, q[3] = q3, q[4] = q4, q[5] = q5, q[6] = q6, q[7] = q7;
  }
  const uint64_t first[S + 1] = {0, stop[0], stop[1], stop[2], stop[3], stop[4], stop[5], stop[6], stop[7]};
  for (int s = 0; s < S; ++s) {
    const uint8_t* p = data + first[s];
    uint64_t qs = q[s] - first[s] * 8;
    for (size_t idx = s + j * S; idx < n; idx += S) {
      const uint16_t t = table[(LoadTail(p, bytes[s], qs >> 3) >> (qs & 7)) & (kTableSize - 1)];
      dst[idx * kStride] = static_cast<uint8_t>(t >> 8);
      qs += t & 15;
      if (qs > static_cast<uint64_t>(bytes[s]) * 8) return "a Huffman stream ends inside a code";
    }
    if ((qs + 7) / 8 != bytes[s]) return "a Huffman stream has trailing bytes";
  }
  return nullptr;
}

template <size_t kStride, int S, bool kBmi2>
__attribute__((always_inline)) inline const char* DecodeAnyBody(const uint8_t* data, const uint32_t bytes[], size_t n,
                                                                const uint16_t table[kTableSize], uint8_t* dst) {
  if constexpr (S == kWideStreams)
    return DecodeWideBody<kStride, kBmi2>(data, bytes, n, table, dst);
  else
    return DecodeStreamsBody<kStride, kBmi2>(data, bytes, n, table, dst);
}

#ifdef TTRACE_FLOAT_CODEC_SSE2
template <size_t kStride, int S>
__attribute__((target("bmi2"))) const char* DecodeStreamsBmi2(const uint8_t* data, const uint32_t bytes[], size_t n,
                                                              const uint16_t table[kTableSize], uint8_t* dst) {
  return DecodeAnyBody<kStride, S, true>(data, bytes, n, table, dst);
}
#endif

// A plane of S (kStreams or kWideStreams) streams.
template <size_t kStride, int S>
const char* DecodeStreams(const uint8_t* data, const uint32_t bytes[], size_t n, const uint16_t table[kTableSize],
                          uint8_t* dst) {
#ifdef TTRACE_FLOAT_CODEC_SSE2
  if (kHaveBmi2) return DecodeStreamsBmi2<kStride, S>(data, bytes, n, table, dst);
#endif
  return DecodeAnyBody<kStride, S, false>(data, bytes, n, table, dst);
}

// ---- up to three symbols a lookup -------------------------------------------------------------------------------
//
// A plane's decoding is bound by one chain a stream: window, table load, shift by the length, next table load. Where
// most codes are short (an exponent plane: ~2.5 bits a symbol; a smooth plane's differences: ~1), one kMaxLen-bit
// window holds two or three whole codes most of the time, and a table of them decodes them with one step of that
// chain (codec27: up to three; codec25's table held two).

// How many kMaxLen-bit windows hold two whole codes, from the lengths of a complete code (what decides whether a
// plane is decoded with the multi-symbol table, without building it): the windows that start with a code of length l are count[l] * 2^(kMaxLen - l), and
// the bits after it start with a code no longer than kMaxLen - l in a share of them of sum over l2 <= kMaxLen - l
// of count[l2] * 2^-l2.
uint32_t PairWindows(const uint8_t len[256]) {
  uint32_t count[kMaxLen + 1] = {}, cum[kMaxLen + 1] = {};
  for (int s = 0; s < 256; ++s) ++count[len[s]];
  for (int l = 1; l <= kMaxLen; ++l) cum[l] = cum[l - 1] + (count[l] << (kMaxLen - l));
  uint64_t windows = 0;
  for (int l = 1; l < kMaxLen; ++l) windows += static_cast<uint64_t>(count[l] << (kMaxLen - l)) * cum[kMaxLen - l];
  return static_cast<uint32_t>(windows >> kMaxLen);
}

// A complete code's symbols by code length, shortest first (canonical order), with their LSB-first codes: what
// BuildMultiTable walks.
struct CodeList {
  int n = 0;
  uint8_t sym[256], len[256];
  uint16_t code[256];
  uint16_t first[kMaxLen + 2];  // the codes of length l are [first[l], first[l + 1])
};

// Decoder table: entry = symbol << 8 | len for every kMaxLen-bit window, and the code's symbols by length (`codes`).
// False unless the lengths form a complete code of at least two symbols (then every window decodes). `unrotate`: the
// table's and codes' symbols are the bytes unrotated (Unrotate<uint8_t>: an FP8 block's plane, decoded straight to
// the output, codec29); the code itself is the same.
bool BuildTable(const uint8_t len[256], bool unrotate, uint16_t table[kTableSize], CodeList* codes) {
  uint32_t kraft = 0, count[kMaxLen + 1] = {};
  int used = 0;
  for (int s = 0; s < 256; ++s)
    if (len[s]) kraft += kTableSize >> len[s], ++used, ++count[len[s]];
  if (used < 2 || kraft != kTableSize) return false;
  uint16_t code[256];
  CanonicalCodes(len, code);
  uint32_t at[kMaxLen + 1] = {};
  for (int l = 2; l <= kMaxLen; ++l) at[l] = at[l - 1] + count[l - 1];
  for (int l = 1; l <= kMaxLen; ++l) codes->first[l] = static_cast<uint16_t>(at[l]);
  codes->first[kMaxLen + 1] = static_cast<uint16_t>(used);
  for (int s = 0; s < 256; ++s) {
    if (!len[s]) continue;
    const uint32_t k = at[len[s]]++;
    codes->sym[k] = unrotate ? Unrotate(static_cast<uint8_t>(s)) : static_cast<uint8_t>(s);
    codes->len[k] = len[s];
    codes->code[k] = code[s];
  }
  codes->n = used;
  // The table by doubling, shortest codes first (codec29; before, each symbol's entries were stored one by one, 2^(12 -
  // len) strided stores: ~22K instructions a plane): once table[0, 2^(l - 1)) holds every window whose first code has
  // at most l - 1 bits, its copy to [2^(l - 1), 2^l) does too (those windows repeat with period 2^(l - 1)), and the
  // codes of length l, each one window of [0, 2^l), are stored. The windows whose first code is longer are left as
  // they were until their code's length; a complete code leaves none at kMaxLen.
  int k = 0;
  for (uint32_t l = 1; l <= kMaxLen; ++l) {
    if (l > 1) memcpy(table + (1u << (l - 1)), table, sizeof(uint16_t) << (l - 1));
    for (; k < used && codes->len[k] == l; ++k) table[codes->code[k]] = static_cast<uint16_t>(codes->sym[k] << 8 | l);
  }
  return true;
}

// For every kMaxLen-bit window, the one to three symbols whose codes lie whole in it (the complete code `codes`): bits
// 0-3 the bits they take, 12-19, 20-27, 28-35 the symbols, 56-63 how many (bits 4-11 zero, so a shift by the entry
// shifts by the bits; the symbols from bit kMaxLen on, a shift by the count the decoder's window takes too; the count
// above the carries of four entries' symbols summed; a 32 KiB table, but the windows a skewed code's data hits are
// few).
//
// Built by doubling, as BuildTable builds its table (codec29): the table of L-bit windows (the codes that lie whole
// in L bits) is the table of L - 1 bits copied to [2^(L - 1), 2^L) (a window's codes within L - 1 bits do not
// depend on bit L), with the windows where a code ends at bit L stored anew: for every one, two or three codes of
// lengths summing to L, the window of their bits (unique: a prefix code). A window's last store is its most codes,
// and the doublings after it copy it to every window it starts; windows with no code yet hold what the last block
// left until their first code's length, and a complete code gives every window one by kMaxLen. Stores: one per
// code, pair and triple of codes that fit, and 32 KiB copied (uniform E5M2: ~14K instructions a plane, from ~55K
// walking every code's windows and every pair's: codec27's build).
__attribute__((always_inline)) inline void BuildMultiTable(const CodeList& codes, uint64_t multi[kTableSize]) {
  constexpr uint64_t kOne = uint64_t{1} << 56;  // the count's unit
  const uint16_t* const first = codes.first;
  const uint32_t shortest = codes.len[0];
  for (uint32_t L = 1; L <= kMaxLen; ++L) {
    if (L > 1) memcpy(multi + (1u << (L - 1)), multi, sizeof(uint64_t) << (L - 1));
    for (int i = first[L]; i < first[L + 1]; ++i)
      multi[codes.code[i]] = kOne | L | static_cast<uint64_t>(codes.sym[i]) << kMaxLen;
    // Two codes, lengths l1 + l2 = L.
    for (uint32_t l1 = shortest; l1 + shortest <= L; ++l1) {
      const uint32_t l2 = L - l1;
      for (int i = first[l1]; i < first[l1 + 1]; ++i) {
        const uint64_t one = kOne | l1 | static_cast<uint64_t>(codes.sym[i]) << kMaxLen;
        const uint32_t c1 = codes.code[i];
        for (int j = first[l2]; j < first[l2 + 1]; ++j)
          multi[c1 | static_cast<uint32_t>(codes.code[j]) << l1] =
              one + (kOne | l2 | static_cast<uint64_t>(codes.sym[j]) << (kMaxLen + 8));
      }
    }
    // Three codes, lengths l1 + l2 + l3 = L.
    for (uint32_t l1 = shortest; l1 + 2 * shortest <= L; ++l1) {
      for (uint32_t l2 = shortest; l1 + l2 + shortest <= L; ++l2) {
        const uint32_t l12 = l1 + l2, l3 = L - l12;
        if (first[l3] == first[l3 + 1] || first[l2] == first[l2 + 1]) continue;
        for (int i = first[l1]; i < first[l1 + 1]; ++i) {
          const uint64_t one = kOne | l1 | static_cast<uint64_t>(codes.sym[i]) << kMaxLen;
          const uint32_t c1 = codes.code[i];
          for (int j = first[l2]; j < first[l2 + 1]; ++j) {
            const uint64_t two = one + (kOne | l2 | static_cast<uint64_t>(codes.sym[j]) << (kMaxLen + 8));
            const uint32_t c12 = c1 | static_cast<uint32_t>(codes.code[j]) << l1;
            for (int k = first[l3]; k < first[l3 + 1]; ++k)
              multi[c12 | static_cast<uint32_t>(codes.code[k]) << l12] =
                  two + (kOne | l3 | static_cast<uint64_t>(codes.sym[k]) << (kMaxLen + 16));
          }
        }
      }
    }
  }
}

// A round of DecodeMultiBody's: four lookups of one stream. A lookup's symbols go to ds plus the counts of the
// lookups before it, read from the running sum of the entries (bits 56-63, above the carries of the symbols' sum: at
// most 12): an indexed store, no pointer update a lookup. `k12`: kMaxLen in a register (with BMI2, one
// non-destructive shrx for the symbols and the window one bzhi by it: Window). `qs`: the stream's position as an
// absolute bit address (the byte's address times 8: below 2^60), so no base pointer takes a register.
template <bool kBmi2>
__attribute__((always_inline)) inline void MultiRound(const uint64_t multi[kTableSize], uint64_t k12, uint64_t& qs,
                                                      uint8_t*& ds) {
  uint64_t w = Load<uint64_t>(reinterpret_cast<const uint8_t*>(qs >> 3)) >> (qs & 7);
  uint64_t sum = 0;
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const uint64_t t = multi[Window<kBmi2>(w, k12)];
    w >>= t & 63;  // bits 4-11 of an entry are zero: the shift count is the length
    Store<uint32_t>(ds + (sum >> 56), static_cast<uint32_t>(t >> k12));
    sum += t;
  }
  ds += sum >> 56;
  qs += sum & 0xff;  // four lengths, at most 48
}

// DecodeStreamsBody<1> with the multi-symbol table: each stream's output advances by one to three symbols a lookup,
// so the streams advance apart. A lookup stores its three symbol bytes and one more with one 32-bit store (those
// past the symbols it decoded are written again by the next lookup); a round (four lookups a stream: at most 12
// symbols and 48 bits, 6 bytes) runs only while every stream has at least 13 symbols left a round (the last
// lookup's store ends at most 9 + 4 symbols past the round's start: none is written past the stream's last), and
// while every stream's 8-byte loads stay inside it; then each stream's rounds alone (codec31), the rest symbol by
// symbol.
template <bool kBmi2>  // bzhi: compiled for BMI2 (DecodeMultiBmi2)
__attribute__((always_inline)) inline const char* DecodeMultiBody(const uint8_t* data, const uint32_t bytes[kStreams],
                                                                  size_t n, const uint16_t table[kTableSize],
                                                                  const CodeList& codes, uint64_t multi[kTableSize],
                                                                  uint8_t* dst) {
  BuildMultiTable(codes, multi);
  size_t b[kStreams], e[kStreams];
  const uint8_t* p[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    StreamRange(n, s, &b[s], &e[s]);
    p[s] = data;
    data += bytes[s];
  }
  // Bit positions as absolute bit addresses (MultiRound): four streams' positions and output pointers, the table,
  // kMaxLen's register, the round count and a lookup's bit buffer, entry, sum, window and store address are 16 values
  // for x86-64's 15 registers; a base pointer and a register for the count's shift by 56 (codec28) more made GCC
  // spill the bit buffer inside the chain that bounds the loop (window, table load, shift): 24 stack accesses a round
  // of 16 lookups, now 8 (the four positions' updates, once a round each; codec31).
  const uint64_t start0 = reinterpret_cast<uintptr_t>(p[0]), start1 = reinterpret_cast<uintptr_t>(p[1]),
                 start2 = reinterpret_cast<uintptr_t>(p[2]), start3 = reinterpret_cast<uintptr_t>(p[3]);
  uint64_t q0 = start0 * 8, q1 = start1 * 8, q2 = start2 * 8, q3 = start3 * 8;
  uint8_t *d0 = dst + b[0], *d1 = dst + b[1], *d2 = dst + b[2], *d3 = dst + b[3];
  uint8_t *const e0 = dst + e[0], *const e1 = dst + e[1], *const e2 = dst + e[2], *const e3 = dst + e[3];
  auto room = [](uint64_t q, uint64_t start, uint32_t size) -> size_t {
    const uint64_t at = (q >> 3) - start;
    return size >= 8 && at <= size - 8 ? static_cast<size_t>((size - 8 - at) / 6 + 1) : 0;
  };
  auto left = [](const uint8_t* d, const uint8_t* end) -> size_t {  // rounds r with 12 r + 1 <= end - d
    return d < end ? static_cast<size_t>(end - d - 1) / 12 : 0;
  };
  for (;;) {
    const size_t rounds = std::min({left(d0, e0), left(d1, e1), left(d2, e2), left(d3, e3), room(q0, start0, bytes[0]),
                                    room(q1, start1, bytes[1]), room(q2, start2, bytes[2]), room(q3, start3, bytes[3])});
    if (rounds == 0) break;
    uint64_t k12 = kMaxLen;  // a count the compiler does not see as a constant (MultiRound)
    asm("" : "+r"(k12));
    for (size_t r = 0; r < rounds; ++r) {
      MultiRound<kBmi2>(multi, k12, q0, d0);
      MultiRound<kBmi2>(multi, k12, q1, d1);
      MultiRound<kBmi2>(multi, k12, q2, d2);
      MultiRound<kBmi2>(multi, k12, q3, d3);
    }
  }
  // The streams run apart (their symbols a lookup differ), so the first one near its end stops the rounds above
  // with hundreds of symbols left in the others (gpt_fp32's collectives cast to FP16: 2.8% of a plane's symbols,
  // which took 23% of its decoding's cycles symbol by symbol below, codec31): each stream's rounds go on alone.
  auto alone = [&](uint64_t& qs, uint8_t*& ds, const uint8_t* es, uint64_t start, uint32_t size)
                   __attribute__((always_inline)) {
    for (;;) {
      const size_t rounds = std::min(left(ds, es), room(qs, start, size));
      if (rounds == 0) break;
      uint64_t k12 = kMaxLen;
      asm("" : "+r"(k12));
      for (size_t r = 0; r < rounds; ++r) MultiRound<kBmi2>(multi, k12, qs, ds);
    }
  };
  alone(q0, d0, e0, start0, bytes[0]);
  alone(q1, d1, e1, start1, bytes[1]);
  alone(q2, d2, e2, start2, bytes[2]);
  alone(q3, d3, e3, start3, bytes[3]);
  uint64_t q[kStreams] = {q0 - start0 * 8, q1 - start1 * 8, q2 - start2 * 8, q3 - start3 * 8};
  const uint8_t* d[kStreams] = {d0, d1, d2, d3};
  for (int s = 0; s < kStreams; ++s) {
    for (size_t idx = static_cast<size_t>(d[s] - dst); idx < e[s]; ++idx) {
      const uint16_t t = table[(LoadTail(p[s], bytes[s], q[s] >> 3) >> (q[s] & 7)) & (kTableSize - 1)];
      dst[idx] = static_cast<uint8_t>(t >> 8);
      q[s] += t & 15;
      if (q[s] > static_cast<uint64_t>(bytes[s]) * 8) return "a Huffman stream ends inside a code";
    }
    if ((q[s] + 7) / 8 != bytes[s]) return "a Huffman stream has trailing bytes";
  }
  return nullptr;
}

#ifdef TTRACE_FLOAT_CODEC_SSE2
__attribute__((target("bmi2"))) const char* DecodeMultiBmi2(const uint8_t* data, const uint32_t bytes[kStreams],
                                                            size_t n, const uint16_t table[kTableSize],
                                                            const CodeList& codes, uint64_t multi[kTableSize],
                                                            uint8_t* dst) {
  return DecodeMultiBody<true>(data, bytes, n, table, codes, multi, dst);
}
#endif

// Decodes a Huffman plane's n symbols to dst[0, n): a plane of four streams with the multi-symbol table where at
// least 3/4 of the windows hold two codes (`pair_windows`, PairWindows; `multi`: kTableSize entries of scratch),
// else one symbol a lookup. (At half, FP8 E4M3 decoded 9% slower with codec25's pairs.) A plane of eight streams one
// symbol a lookup.
const char* DecodePlane(const uint8_t* data, int streams, const uint32_t bytes[], size_t n,
                        const uint16_t table[kTableSize], const CodeList& codes, uint32_t pair_windows,
                        uint64_t multi[kTableSize], uint8_t* dst) {
  if (streams == kWideStreams) return DecodeStreams<1, kWideStreams>(data, bytes, n, table, dst);
  if (n >= kPairsMinSymbols && pair_windows * 4 >= kTableSize * 3) {
#ifdef TTRACE_FLOAT_CODEC_SSE2
    if (kHaveBmi2) return DecodeMultiBmi2(data, bytes, n, table, codes, multi, dst);
#endif
    return DecodeMultiBody<false>(data, bytes, n, table, codes, multi, dst);
  }
  return DecodeStreams<1, kStreams>(data, bytes, n, table, dst);
}

// A plane's header as read: where its bytes are and, for Huffman, its decoder table.
struct ParsedPlane {
  PlaneMode mode;
  const uint8_t* data;  // kRaw: n bytes; kConst: the byte; kHuffman, kHuffman8: the streams
  int streams;          // kHuffman, kHuffmanDelta: kStreams; kHuffman8: kWideStreams
  uint8_t first;        // kHuffmanDelta: the plane's first byte
  uint32_t bytes[kMaxStreams];
  uint32_t pair_windows;  // kHuffman: PairWindows
  bool unrotated;         // the table's symbols are the bytes unrotated (BuildTable)
  uint16_t table[kTableSize];
  CodeList codes;
};

// `version`: the payload's codec version (kHuffman8 planes are version 2's, kHuffmanDelta version 3's). `unrotate`:
// a kHuffman or kHuffman8 plane's table gets the bytes unrotated (an FP8 block's plane, its bytes the elements);
// a delta plane's symbols are differences, summed before they are unrotated.
const char* ParsePlane(const uint8_t* in, size_t size, size_t* pos, size_t n, int version, bool unrotate,
                       ParsedPlane* pp) {
  if (size - *pos < 1) return "a block ends before its planes";
  const uint8_t mode = in[(*pos)++];
  pp->unrotated = false;
  if (mode == kHuffman8 && version < 2) return "an eight-stream Huffman plane in a version 1 payload";
  if (mode == kHuffmanDelta && version < 3) return "a delta Huffman plane in a version 1 or 2 payload";
  if (mode == kRaw) {
    if (size - *pos < n) return "a raw plane runs past the end";
    pp->data = in + *pos;
    *pos += n;
  } else if (mode == kConst) {
    if (size - *pos < 1) return "a constant plane runs past the end";
    pp->data = in + (*pos)++;
  } else if (IsHuffman(mode)) {
    const int streams = mode == kHuffman8 ? kWideStreams : kStreams;
    pp->first = 0;
    if (mode == kHuffmanDelta) {
      if (size - *pos < 1) return "a Huffman plane header runs past the end";
      pp->first = in[(*pos)++];
    }
    if (size - *pos < 2) return "a Huffman plane header runs past the end";
    const int lo = in[*pos], hi = in[*pos + 1];
    *pos += 2;
    if (lo >= hi) return "a Huffman plane's symbol range is empty";
    const size_t table_bytes = static_cast<size_t>(hi - lo + 2) / 2;
    if (size - *pos < table_bytes + 4 * static_cast<size_t>(streams)) return "a Huffman plane header runs past the end";
    uint8_t len[256] = {};
    for (size_t k = 0; k < table_bytes; ++k) {
      const uint8_t v = in[*pos + k];
      const int a = lo + 2 * static_cast<int>(k);
      len[a] = v & 15;
      if (a + 1 <= hi)
        len[a + 1] = v >> 4;
      else if (v >> 4)
        return "a Huffman plane's length padding is not zero";
    }
    *pos += table_bytes;
    for (int s = 0; s < 256; ++s)
      if (len[s] > kMaxLen) return "a Huffman code length exceeds 12";
    pp->unrotated = unrotate && mode != kHuffmanDelta;
    if (!BuildTable(len, pp->unrotated, pp->table, &pp->codes)) return "a Huffman code is not complete";
    pp->pair_windows = PairWindows(len);
    size_t total = 0;
    pp->streams = streams;
    for (int s = 0; s < streams; ++s) {
      pp->bytes[s] = Load32(in + *pos + 4 * s);
      total += pp->bytes[s];
    }
    *pos += 4 * static_cast<size_t>(streams);
    if (total > size - *pos) return "a Huffman plane runs past the end";
    if (n == 0) return "a Huffman plane of an empty block";
    pp->data = in + *pos;
    *pos += total;
  } else {
    return "unknown plane mode";
  }
  pp->mode = static_cast<PlaneMode>(mode);
  return nullptr;
}

// In a block no larger than the encoder's, with at most four planes not raw (every FP32, BF16, FP16 and FP8 block),
// each such plane goes to a scratch buffer (Huffman decoded or the constant repeated) and one pass composes the
// elements from the planes. Otherwise (FP64 blocks with more than four) the Huffman planes go to their bytes of each
// element and a pass adds the raw and constant planes and unrotates.
template <typename T>
const char* DecodeBlock(const uint8_t* in, size_t size, size_t* pos, size_t n, int version, uint8_t* out,
                        uint8_t (*scratch)[size_t{1} << kBlockLog2], uint64_t multi[kTableSize]) {
  constexpr size_t W = sizeof(T);
  ParsedPlane planes[W];
  size_t not_raw = 0;
  for (size_t plane = 0; plane < W; ++plane) {
    if (const char* err = ParsePlane(in, size, pos, n, version, W == 1, &planes[plane])) return err;
    not_raw += planes[plane].mode != kRaw;
  }
  if constexpr (W == 1) {  // an FP8 block's Huffman plane (not delta) decodes straight to the output, unrotated
    const ParsedPlane& pp = planes[0];
    if (IsHuffman(pp.mode) && pp.unrotated)
      return DecodePlane(pp.data, pp.streams, pp.bytes, n, pp.table, pp.codes, pp.pair_windows, multi, out);
  }
  if (not_raw <= kDecodeScratch && n <= (size_t{1} << kBlockLog2)) {
    const uint8_t* bytes[W];
    size_t used = 0;
    for (size_t plane = 0; plane < W; ++plane) {
      const ParsedPlane& pp = planes[plane];
      if (pp.mode == kRaw) {
        bytes[plane] = pp.data;
        continue;
      }
      uint8_t* buf = scratch[used++];
      if (IsHuffman(pp.mode)) {
        if (const char* err = DecodePlane(pp.data, pp.streams, pp.bytes, n, pp.table, pp.codes, pp.pair_windows, multi, buf))
          return err;
        if (pp.mode == kHuffmanDelta) UndeltaInPlace(buf, n, pp.first);
      } else {
        memset(buf, pp.data[0], n);
      }
      bytes[plane] = buf;
    }
    MergePlanes<T>(bytes, bytes[W - 1], n, out);
    return nullptr;
  }
  T keep = 0, constant = 0;
  const uint8_t* raw[W];
  int raw_plane[W];
  int raws = 0;
  for (size_t plane = 0; plane < W; ++plane) {
    const ParsedPlane& pp = planes[plane];
    if (IsHuffman(pp.mode)) {
      const char* err = pp.streams == kWideStreams
                            ? DecodeStreams<W, kWideStreams>(pp.data, pp.bytes, n, pp.table, out + plane)
                            : DecodeStreams<W, kStreams>(pp.data, pp.bytes, n, pp.table, out + plane);
      if (err) return err;
      if (pp.mode == kHuffmanDelta) {  // the prefix sum along the plane's bytes of the elements
        uint8_t prev = pp.first;
        for (size_t i = 0; i < n; ++i)
          prev = out[i * W + plane] = static_cast<uint8_t>(prev + out[i * W + plane] - kDeltaBias);
      }
      keep = static_cast<T>(keep | static_cast<T>(0xff) << (8 * plane));
    } else if (pp.mode == kConst) {
      constant = static_cast<T>(constant | static_cast<T>(pp.data[0]) << (8 * plane));
    } else {
      raw[raws] = pp.data;
      raw_plane[raws++] = static_cast<int>(plane);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    T r = keep ? static_cast<T>(Load<T>(out + i * W) & keep) : T{0};
    r = static_cast<T>(r | constant);
    for (int k = 0; k < raws; ++k) r = static_cast<T>(r | static_cast<T>(raw[k][i]) << (8 * raw_plane[k]));
    Store<T>(out + i * W, Unrotate(r));
  }
  return nullptr;
}

template <typename T>
size_t EncodeAll(const uint8_t* in, size_t n, EncodeOptions opt, uint8_t* out) {
  uint8_t scratch[size_t{1} << kBlockLog2];
  uint8_t streams[kStreamScratch];
  size_t pos = kFloatCodecHeaderBytes;
  for (size_t b = 0; b < n; b += size_t{1} << kBlockLog2) {
    const size_t m = std::min(n - b, size_t{1} << kBlockLog2);
    pos += EncodeBlock<T>(in + b * sizeof(T), m, opt, out + pos, scratch, streams);
  }
  return pos;
}

template <typename T>
const char* DecodeAll(const uint8_t* in, size_t size, size_t n, int block_log2, int version, uint8_t* out) {
  uint8_t scratch[kDecodeScratch][size_t{1} << kBlockLog2];
  uint64_t multi[kTableSize];
  size_t pos = kFloatCodecHeaderBytes;
  for (size_t b = 0; b < n; b += size_t{1} << block_log2) {
    const size_t m = std::min(n - b, size_t{1} << block_log2);
    if (const char* err = DecodeBlock<T>(in, size, &pos, m, version, out + b * sizeof(T), scratch, multi)) return err;
  }
  return pos == size ? nullptr : "trailing bytes after the last block";
}

}  // namespace

bool FloatCodecSupports(size_t elem_bytes) {
  return elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4 || elem_bytes == 8;
}

size_t FloatCodecMaxBytes(size_t n, size_t elem_bytes) {
  const size_t blocks = (n + (size_t{1} << kBlockLog2) - 1) >> kBlockLog2;
  return kFloatCodecHeaderBytes + n * elem_bytes + blocks * elem_bytes;
}

namespace {
// Version 2 codes planes of at least kWideStreamsMinSymbols in eight streams; version 1 never did. Version 3 codes
// delta planes.
size_t Encode(const void* in_v, size_t n, size_t elem_bytes, void* out_v, int version) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  const EncodeOptions opt{version >= 2 ? kWideStreamsMinSymbols : SIZE_MAX, version >= 3};
  memset(out, 0, kFloatCodecHeaderBytes);
  out[0] = static_cast<uint8_t>(version);
  out[1] = static_cast<uint8_t>(elem_bytes);
  out[2] = kBlockLog2;
  const uint64_t n64 = n;
  memcpy(out + 8, &n64, 8);
  switch (elem_bytes) {
    case 1: return EncodeAll<uint8_t>(in, n, opt, out);
    case 2: return EncodeAll<uint16_t>(in, n, opt, out);
    case 4: return EncodeAll<uint32_t>(in, n, opt, out);
    case 8: return EncodeAll<uint64_t>(in, n, opt, out);
  }
  return 0;
}
}  // namespace

size_t FloatEncode(const void* in, size_t n, size_t elem_bytes, void* out) {
  return Encode(in, n, elem_bytes, out, kFloatCodecVersion);
}

size_t FloatEncodeVersion1(const void* in, size_t n, size_t elem_bytes, void* out) {
  return Encode(in, n, elem_bytes, out, 1);
}

size_t FloatEncodeVersion2(const void* in, size_t n, size_t elem_bytes, void* out) {
  return Encode(in, n, elem_bytes, out, 2);
}

uint64_t FloatCodecMaxElements(const void* in_v, size_t size, size_t elem_bytes) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  if (!FloatCodecSupports(elem_bytes) || size < kFloatCodecHeaderBytes) return 0;
  const int block_log2 = in[2];
  if (block_log2 < kMinBlockLog2 || block_log2 > kMaxBlockLog2) return 0;
  return static_cast<uint64_t>((size - kFloatCodecHeaderBytes) / (2 * elem_bytes)) << block_log2;
}

const char* FloatDecode(const void* in_v, size_t size, size_t elem_bytes, void* out_v, size_t out_bytes) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  if (!FloatCodecSupports(elem_bytes)) return "unsupported element size";
  if (size < kFloatCodecHeaderBytes) return "shorter than its header";
  const int version = in[0];
  if (version < kFloatCodecOldestVersion || version > kFloatCodecVersion) return "unknown codec version";
  if (in[1] != elem_bytes) return "element size differs from the record's dtype";
  const int block_log2 = in[2];
  if (block_log2 < kMinBlockLog2 || block_log2 > kMaxBlockLog2) return "block size out of range";
  if (in[3] || Load32(in + 4)) return "reserved header bytes are not zero";
  const uint64_t n = Load<uint64_t>(in + 8);
  if (out_bytes % elem_bytes || n != out_bytes / elem_bytes) return "element count differs from the record's shape";
  switch (elem_bytes) {
    case 1: return DecodeAll<uint8_t>(in, size, n, block_log2, version, out);
    case 2: return DecodeAll<uint16_t>(in, size, n, block_log2, version, out);
    case 4: return DecodeAll<uint32_t>(in, size, n, block_log2, version, out);
    default: return DecodeAll<uint64_t>(in, size, n, block_log2, version, out);
  }
}

}  // namespace ttrace::store
