// Why this shape: zstd's entropy stage works on literals it finds after match search, and tensor bytes have few
// matches, so most of its time goes into finding none; the byte shuffle helps it see the exponent bytes' skew but
// zstd-1 still lands ~3% short of their entropy. Splitting by plane and Huffman-coding the planes that are skewed
// costs two passes over each block (histogram, code) and reaches the entropy within the Huffman redundancy. Four
// interleaved bit streams per plane keep the encoder's and decoder's dependency chains (bit position, table
// lookup) four wide. Code lengths are limited to 12 bits so a decoder table is 8 KiB and four symbols fit in one
// 64-bit refill. Blocks of 2^16 elements keep a block's working set in L2 and adapt the code along a tensor.
#include "store/float_codec.h"

#include <algorithm>
#include <cstring>

namespace ttrace::store {
namespace {

constexpr int kMaxLen = 12;
constexpr uint32_t kTableSize = 1u << kMaxLen;
constexpr int kBlockLog2 = 16;
constexpr int kMinBlockLog2 = 8, kMaxBlockLog2 = 24;
constexpr int kStreams = 4;
constexpr size_t kSample = 4096;  // bytes sampled to decide whether a lower plane is worth a full histogram
enum PlaneMode : uint8_t { kRaw = 0, kConst = 1, kHuffman = 2 };

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

// Stream s of a plane holds elements [s * q, min(n, (s + 1) * q)), q = ceil(n / 4).
inline void StreamRange(size_t n, int s, size_t* begin, size_t* end) {
  const size_t q = (n + kStreams - 1) / kStreams;
  *begin = std::min(n, s * q);
  *end = std::min(n, *begin + q);
}

// Huffman code lengths for the symbols with nonzero freq (at least two), at most kMaxLen: a two-queue Huffman
// build over the sorted frequencies; when the tree is too deep, frequencies are halved (kept nonzero) and it is
// rebuilt, which flattens the tree while the code stays complete (Kraft sum exactly 1).
void BuildLengths(const uint32_t freq_in[256], uint8_t len[256]) {
  uint32_t f[256];
  memcpy(f, freq_in, sizeof f);
  for (;;) {
    uint16_t sym[256];
    int n = 0;
    for (int s = 0; s < 256; ++s)
      if (f[s]) sym[n++] = static_cast<uint16_t>(s);
    std::sort(sym, sym + n, [&](uint16_t a, uint16_t b) { return f[a] < f[b] || (f[a] == f[b] && a < b); });
    uint64_t w[511];
    uint16_t parent[511];
    uint8_t depth[511];
    for (int i = 0; i < n; ++i) w[i] = f[sym[i]];
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
    if (max_depth <= kMaxLen) {
      memset(len, 0, 256);
      for (int i = 0; i < n; ++i) len[sym[i]] = depth[i];
      return;
    }
    for (uint32_t& x : f)
      if (x) x = (x >> 1) | 1;
  }
}

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
    uint32_t r = 0;
    for (int b = 0; b < len[s]; ++b) r |= ((v >> b) & 1u) << (len[s] - 1 - b);
    code[s] = static_cast<uint16_t>(r);
  }
}

// Decoder table: entry = len << 8 | symbol for every kMaxLen-bit window. False unless the lengths form a
// complete code of at least two symbols (then every window decodes).
bool BuildTable(const uint8_t len[256], uint16_t table[kTableSize]) {
  uint32_t kraft = 0;
  int used = 0;
  for (int s = 0; s < 256; ++s)
    if (len[s]) kraft += kTableSize >> len[s], ++used;
  if (used < 2 || kraft != kTableSize) return false;
  uint16_t code[256];
  CanonicalCodes(len, code);
  for (int s = 0; s < 256; ++s)
    if (len[s])
      for (uint32_t i = code[s]; i < kTableSize; i += 1u << len[s]) table[i] = static_cast<uint16_t>(len[s] << 8 | s);
  return true;
}

// ---- encoder ----------------------------------------------------------------------------------------------------

template <typename T>
void Histograms(const uint8_t* in, size_t n, int plane, uint32_t hist[kStreams][256]) {
  memset(hist, 0, sizeof(uint32_t) * kStreams * 256);
  size_t b[kStreams], e[kStreams];
  for (int s = 0; s < kStreams; ++s) StreamRange(n, s, &b[s], &e[s]);
  const size_t common = e[kStreams - 1] - b[kStreams - 1];
  uint32_t* h0 = hist[0];
  uint32_t* h1 = hist[1];
  uint32_t* h2 = hist[2];
  uint32_t* h3 = hist[3];
  for (size_t i = 0; i < common; ++i) {
    ++h0[PlaneByte<T>(in, b[0] + i, plane)];
    ++h1[PlaneByte<T>(in, b[1] + i, plane)];
    ++h2[PlaneByte<T>(in, b[2] + i, plane)];
    ++h3[PlaneByte<T>(in, b[3] + i, plane)];
  }
  for (int s = 0; s < kStreams; ++s)
    for (size_t i = b[s] + common; i < e[s]; ++i) ++hist[s][PlaneByte<T>(in, i, plane)];
}

// How one plane of a block will be stored.
struct PlanePlan {
  PlaneMode mode = kRaw;
  int lo = 0, hi = 0;          // kConst: lo is the byte
  uint8_t len[256];            // kHuffman
  uint32_t bytes[kStreams];    // kHuffman: each stream's size
  size_t total = 0;            // bytes of the plane, mode byte included
};

// The smallest of raw, constant and Huffman for a plane, from its exact histogram.
template <typename T>
void PlanPlane(const uint8_t* in, size_t n, int plane, PlanePlan* pp) {
  pp->mode = kRaw;
  pp->total = 1 + n;
  if (n == 0) return;
  uint32_t hist[kStreams][256];
  Histograms<T>(in, n, plane, hist);
  uint32_t f[256];
  int used = 0, lo = 256, hi = -1;
  for (int s = 0; s < 256; ++s) {
    f[s] = hist[0][s] + hist[1][s] + hist[2][s] + hist[3][s];
    if (f[s]) ++used, lo = std::min(lo, s), hi = s;
  }
  if (used == 1) {
    pp->mode = kConst;
    pp->lo = lo;
    pp->total = 2;
    return;
  }
  BuildLengths(f, pp->len);
  size_t total = 3 + static_cast<size_t>(hi - lo + 2) / 2 + 4 * kStreams;
  for (int s = 0; s < kStreams; ++s) {
    uint64_t bits = 0;
    for (int c = lo; c <= hi; ++c) bits += static_cast<uint64_t>(hist[s][c]) * pp->len[c];
    pp->bytes[s] = static_cast<uint32_t>((bits + 7) / 8);
    total += pp->bytes[s];
  }
  if (total < 1 + n) {
    pp->mode = kHuffman;
    pp->lo = lo;
    pp->hi = hi;
    pp->total = total;
  }
}

// A Huffman plane's header (mode, range, lengths, stream sizes); returns where its streams start.
uint8_t* WriteHuffmanHeader(const PlanePlan& pp, uint8_t* o) {
  *o++ = kHuffman;
  *o++ = static_cast<uint8_t>(pp.lo);
  *o++ = static_cast<uint8_t>(pp.hi);
  for (int a = pp.lo; a <= pp.hi; a += 2) *o++ = static_cast<uint8_t>(pp.len[a] | (a + 1 <= pp.hi ? pp.len[a + 1] << 4 : 0));
  for (uint32_t b : pp.bytes) {
    memcpy(o, &b, 4);
    o += 4;
  }
  return o;
}

// Codes one plane's symbols into its four streams. With kFuse (plane is the top one and every lower plane is raw)
// the lower planes' bytes are written to raw[0..W-2] in the same pass. The four streams' state lives in scalars so
// the compiler keeps it in registers; 8-byte stores happen only while they stay inside their own stream (so no
// stream overwrites its neighbour's first bytes), the rest byte by byte.
template <typename T, bool kFuse>
void EncodeStreams(const uint8_t* in, size_t n, int plane, const PlanePlan& pp, uint8_t* data, uint8_t* const* raw_in) {
  constexpr size_t W = sizeof(T);
  uint64_t tab[256];  // code | length << 32: the code is the low word as it is, no mask
  {
    uint16_t code[256];
    CanonicalCodes(pp.len, code);
    for (int s = 0; s < 256; ++s) tab[s] = pp.len[s] ? code[s] | static_cast<uint64_t>(pp.len[s]) << 32 : 0;
  }
  uint8_t* raw[W > 1 ? W - 1 : 1] = {};
  if (kFuse)
    for (size_t q = 0; q + 1 < W; ++q) raw[q] = raw_in[q];
  const int shift = 8 * plane;
  size_t b[kStreams], e[kStreams];
  for (int s = 0; s < kStreams; ++s) StreamRange(n, s, &b[s], &e[s]);
  uint8_t* p[kStreams];
  uint8_t* end[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    p[s] = data;
    end[s] = data += pp.bytes[s];
  }
  auto put = [&](size_t idx, uint64_t& acc, unsigned& bits) __attribute__((always_inline)) {
    const T r = Rotate(Load<T>(in + idx * W));
    const uint64_t c = tab[static_cast<uint8_t>(r >> shift)];
    acc |= static_cast<uint64_t>(static_cast<uint32_t>(c)) << bits;
    bits += static_cast<unsigned>(c >> 32);
    if (kFuse)
      for (size_t q = 0; q + 1 < W; ++q) raw[q][idx] = static_cast<uint8_t>(r >> (8 * q));
  };
  auto flush = [](uint8_t*& o, uint64_t& acc, unsigned& bits) __attribute__((always_inline)) {
    memcpy(o, &acc, 8);
    o += bits >> 3;
    acc >>= bits & ~7u;
    bits &= 7;
  };
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  unsigned n0 = 0, n1 = 0, n2 = 0, n3 = 0;
  uint8_t *o0 = p[0], *o1 = p[1], *o2 = p[2], *o3 = p[3];
  const size_t common = e[3] - b[3];
  size_t i = 0;
  // Four symbols per stream (<= 48 bits + 7 pending) between 8-byte stores. A round advances each stream by at
  // most 6 bytes, so the rounds that keep every 8-byte store inside its stream are counted once per batch, not
  // checked per round.
  for (;;) {
    auto room = [](const uint8_t* o, const uint8_t* stop) {
      return o + 8 <= stop ? static_cast<size_t>(stop - o - 8) / 6 + 1 : 0;
    };
    const size_t rounds = std::min({(common - i) / 4, room(o0, end[0]), room(o1, end[1]), room(o2, end[2]),
                                    room(o3, end[3])});
    if (rounds == 0) break;
    for (const size_t last = i + 4 * rounds; i < last; i += 4) {
      for (int k = 0; k < 4; ++k) {
        put(b[0] + i + k, a0, n0);
        put(b[1] + i + k, a1, n1);
        put(b[2] + i + k, a2, n2);
        put(b[3] + i + k, a3, n3);
      }
      flush(o0, a0, n0);
      flush(o1, a1, n1);
      flush(o2, a2, n2);
      flush(o3, a3, n3);
    }
  }
  uint64_t acc[kStreams] = {a0, a1, a2, a3};
  unsigned bits[kStreams] = {n0, n1, n2, n3};
  uint8_t* o[kStreams] = {o0, o1, o2, o3};
  for (int s = 0; s < kStreams; ++s) {
    for (size_t idx = b[s] + i; idx < e[s]; ++idx) {
      put(idx, acc[s], bits[s]);
      for (; bits[s] >= 8; bits[s] -= 8, acc[s] >>= 8) *o[s]++ = static_cast<uint8_t>(acc[s]);
    }
    if (bits[s]) *o[s]++ = static_cast<uint8_t>(acc[s]);
  }
}

// Is a lower plane skewed enough to be worth a full histogram? A Huffman code of a sample, 1/16 saved or one value.
template <typename T>
bool WorthCoding(const uint8_t* in, size_t n, int plane) {
  uint32_t f[256] = {};
  const size_t step = std::max<size_t>(1, n / kSample);
  size_t count = 0;
  for (size_t i = 0; i < n; i += step, ++count) ++f[PlaneByte<T>(in, i, plane)];
  int used = 0;
  for (uint32_t x : f) used += x != 0;
  if (used < 2) return true;
  uint8_t len[256];
  BuildLengths(f, len);
  uint64_t bits = 0;
  for (int s = 0; s < 256; ++s) bits += static_cast<uint64_t>(f[s]) * len[s];
  return bits * 16 <= count * 8 * 15;
}

// Byte q of every rotated element to raw[q], for the planes below the top one.
template <typename T>
void SplitLowerPlanes(const uint8_t* in, size_t n, uint8_t* const* raw) {
  constexpr size_t W = sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    const T r = Rotate(Load<T>(in + i * W));
    for (size_t q = 0; q + 1 < W; ++q) raw[q][i] = static_cast<uint8_t>(r >> (8 * q));
  }
}

// One plane of one block as planned; returns the bytes written (pp.total).
template <typename T>
size_t WritePlane(const uint8_t* in, size_t n, int plane, const PlanePlan& pp, uint8_t* out) {
  if (pp.mode == kConst) {
    out[0] = kConst;
    out[1] = static_cast<uint8_t>(pp.lo);
  } else if (pp.mode == kHuffman) {
    EncodeStreams<T, false>(in, n, plane, pp, WriteHuffmanHeader(pp, out), nullptr);
  } else {
    out[0] = kRaw;
    for (size_t i = 0; i < n; ++i) out[1 + i] = PlaneByte<T>(in, i, plane);
  }
  return pp.total;
}

// The top plane is always planned from its histogram; a lower plane only when a sample says it may pay. In the
// common case (lower planes raw, top plane Huffman) one pass writes every plane.
template <typename T>
size_t EncodeBlock(const uint8_t* in, size_t n, uint8_t* out) {
  constexpr int W = sizeof(T);
  PlanePlan top;
  PlanPlane<T>(in, n, W - 1, &top);
  bool lower_raw = true;
  bool try_lower[W] = {};
  for (int plane = 0; plane + 1 < W; ++plane) lower_raw &= !(try_lower[plane] = WorthCoding<T>(in, n, plane));
  if (lower_raw && top.mode == kHuffman) {
    uint8_t* raw[W > 1 ? W - 1 : 1];
    for (int plane = 0; plane + 1 < W; ++plane) {
      out[plane * (1 + n)] = kRaw;
      raw[plane] = out + plane * (1 + n) + 1;
    }
    uint8_t* o = out + (W - 1) * (1 + n);
    if (W == 2) {
      EncodeStreams<T, true>(in, n, W - 1, top, WriteHuffmanHeader(top, o), raw);
    } else {  // fused, the wider lower planes' pointers and the streams' state do not fit in registers
      SplitLowerPlanes<T>(in, n, raw);
      EncodeStreams<T, false>(in, n, W - 1, top, WriteHuffmanHeader(top, o), nullptr);
    }
    return (W - 1) * (1 + n) + top.total;
  }
  size_t pos = 0;
  for (int plane = 0; plane + 1 < W; ++plane) {
    PlanePlan pp;
    if (try_lower[plane]) PlanPlane<T>(in, n, plane, &pp);
    else pp.total = 1 + n;
    pos += WritePlane<T>(in, n, plane, pp, out + pos);
  }
  return pos + WritePlane<T>(in, n, W - 1, top, out + pos);
}

// ---- decoder ----------------------------------------------------------------------------------------------------

// Up to 8 bytes of a stream of `size` bytes from byte `at`, zero past its end.
inline uint64_t LoadTail(const uint8_t* p, size_t size, size_t at) {
  uint64_t v = 0;
  if (at < size) memcpy(&v, p + at, std::min<size_t>(8, size - at));
  return v;
}

// Decodes one Huffman plane. Without kFuse its symbols go to byte `plane` of each element (the caller unrotates
// after the last plane); with kFuse (the top plane, every lower plane raw, at raw[0..W-2]) each element is
// composed from its symbol and raw bytes, unrotated and stored in the same pass.
template <typename T, bool kFuse>
const char* DecodeStreams(const uint8_t* data, const uint32_t bytes[kStreams], size_t n, int plane,
                          const uint16_t table[kTableSize], const uint8_t* const* raw_in, uint8_t* out) {
  constexpr size_t W = sizeof(T);
  const uint8_t* raw[W > 1 ? W - 1 : 1] = {};
  if (kFuse)
    for (size_t q = 0; q + 1 < W; ++q) raw[q] = raw_in[q];
  const int shift = 8 * plane;
  auto put = [&](size_t idx, uint16_t entry) __attribute__((always_inline)) {
    if (kFuse) {
      T r = static_cast<T>(static_cast<T>(entry & 0xff) << shift);
      for (size_t q = 0; q + 1 < W; ++q) r = static_cast<T>(r | static_cast<T>(raw[q][idx]) << (8 * q));
      Store<T>(out + idx * W, Unrotate(r));
    } else {
      out[idx * W + plane] = static_cast<uint8_t>(entry);
    }
  };
  size_t b[kStreams], e[kStreams];
  const uint8_t* p[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    StreamRange(n, s, &b[s], &e[s]);
    p[s] = data;
    data += bytes[s];
  }
  const uint8_t *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
  const size_t lim0 = bytes[0] >= 8 ? bytes[0] - 8 : 0, lim1 = bytes[1] >= 8 ? bytes[1] - 8 : 0,
               lim2 = bytes[2] >= 8 ? bytes[2] - 8 : 0, lim3 = bytes[3] >= 8 ? bytes[3] - 8 : 0;
  const bool room = bytes[0] >= 8 && bytes[1] >= 8 && bytes[2] >= 8 && bytes[3] >= 8;
  uint64_t q0 = 0, q1 = 0, q2 = 0, q3 = 0;  // bits consumed
  const size_t common = e[3] - b[3];
  size_t i = 0;
  while (room && i + 4 <= common && (q0 >> 3) <= lim0 && (q1 >> 3) <= lim1 && (q2 >> 3) <= lim2 &&
         (q3 >> 3) <= lim3) {
    uint64_t w0 = Load<uint64_t>(p0 + (q0 >> 3)) >> (q0 & 7), w1 = Load<uint64_t>(p1 + (q1 >> 3)) >> (q1 & 7),
             w2 = Load<uint64_t>(p2 + (q2 >> 3)) >> (q2 & 7), w3 = Load<uint64_t>(p3 + (q3 >> 3)) >> (q3 & 7);
    for (int k = 0; k < 4; ++k) {
      const uint16_t t0 = table[w0 & (kTableSize - 1)], t1 = table[w1 & (kTableSize - 1)],
                     t2 = table[w2 & (kTableSize - 1)], t3 = table[w3 & (kTableSize - 1)];
      put(b[0] + i + k, t0);
      put(b[1] + i + k, t1);
      put(b[2] + i + k, t2);
      put(b[3] + i + k, t3);
      w0 >>= t0 >> 8, q0 += t0 >> 8;
      w1 >>= t1 >> 8, q1 += t1 >> 8;
      w2 >>= t2 >> 8, q2 += t2 >> 8;
      w3 >>= t3 >> 8, q3 += t3 >> 8;
    }
    i += 4;
  }
  uint64_t q[kStreams] = {q0, q1, q2, q3};
  for (int s = 0; s < kStreams; ++s) {
    for (size_t idx = b[s] + i; idx < e[s]; ++idx) {
      const uint16_t t = table[(LoadTail(p[s], bytes[s], q[s] >> 3) >> (q[s] & 7)) & (kTableSize - 1)];
      put(idx, t);
      q[s] += t >> 8;
      if (q[s] > static_cast<uint64_t>(bytes[s]) * 8) return "a Huffman stream ends inside a code";
    }
    if ((q[s] + 7) / 8 != bytes[s]) return "a Huffman stream has trailing bytes";
  }
  return nullptr;
}

// A plane's header as read: where its bytes are and, for Huffman, its decoder table.
struct ParsedPlane {
  PlaneMode mode;
  const uint8_t* data;  // kRaw: n bytes; kConst: the byte; kHuffman: the streams
  uint32_t bytes[kStreams];
  uint16_t table[kTableSize];
};

const char* ParsePlane(const uint8_t* in, size_t size, size_t* pos, size_t n, ParsedPlane* pp) {
  if (size - *pos < 1) return "a block ends before its planes";
  const uint8_t mode = in[(*pos)++];
  if (mode == kRaw) {
    if (size - *pos < n) return "a raw plane runs past the end";
    pp->data = in + *pos;
    *pos += n;
  } else if (mode == kConst) {
    if (size - *pos < 1) return "a constant plane runs past the end";
    pp->data = in + (*pos)++;
  } else if (mode == kHuffman) {
    if (size - *pos < 2) return "a Huffman plane header runs past the end";
    const int lo = in[*pos], hi = in[*pos + 1];
    *pos += 2;
    if (lo >= hi) return "a Huffman plane's symbol range is empty";
    const size_t table_bytes = static_cast<size_t>(hi - lo + 2) / 2;
    if (size - *pos < table_bytes + 4 * kStreams) return "a Huffman plane header runs past the end";
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
    if (!BuildTable(len, pp->table)) return "a Huffman code is not complete";
    size_t total = 0;
    for (int s = 0; s < kStreams; ++s) {
      pp->bytes[s] = Load32(in + *pos + 4 * s);
      total += pp->bytes[s];
    }
    *pos += 4 * kStreams;
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

template <typename T>
const char* DecodeBlock(const uint8_t* in, size_t size, size_t* pos, size_t n, uint8_t* out) {
  constexpr size_t W = sizeof(T);
  ParsedPlane planes[W];
  bool lower_raw = true;
  for (size_t plane = 0; plane < W; ++plane) {
    if (const char* err = ParsePlane(in, size, pos, n, &planes[plane])) return err;
    if (plane + 1 < W) lower_raw &= planes[plane].mode == kRaw;
  }
  const ParsedPlane& top = planes[W - 1];
  if (W == 2 && lower_raw && top.mode == kHuffman) {
    const uint8_t* raw[1] = {planes[0].data};
    return DecodeStreams<T, true>(top.data, top.bytes, n, W - 1, top.table, raw, out);
  }
  // Huffman planes to their bytes of each element, then one pass that adds the raw and constant planes and
  // unrotates.
  T keep = 0, constant = 0;
  const uint8_t* raw[W];
  int raw_plane[W];
  int raws = 0;
  for (size_t plane = 0; plane < W; ++plane) {
    const ParsedPlane& pp = planes[plane];
    if (pp.mode == kHuffman) {
      if (const char* err = DecodeStreams<T, false>(pp.data, pp.bytes, n, static_cast<int>(plane), pp.table,
                                                    nullptr, out))
        return err;
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
size_t EncodeAll(const uint8_t* in, size_t n, uint8_t* out) {
  size_t pos = kFloatCodecHeaderBytes;
  for (size_t b = 0; b < n; b += size_t{1} << kBlockLog2) {
    const size_t m = std::min(n - b, size_t{1} << kBlockLog2);
    pos += EncodeBlock<T>(in + b * sizeof(T), m, out + pos);
  }
  return pos;
}

template <typename T>
const char* DecodeAll(const uint8_t* in, size_t size, size_t n, int block_log2, uint8_t* out) {
  size_t pos = kFloatCodecHeaderBytes;
  for (size_t b = 0; b < n; b += size_t{1} << block_log2) {
    const size_t m = std::min(n - b, size_t{1} << block_log2);
    if (const char* err = DecodeBlock<T>(in, size, &pos, m, out + b * sizeof(T))) return err;
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

size_t FloatEncode(const void* in_v, size_t n, size_t elem_bytes, void* out_v) {
  const auto* in = static_cast<const uint8_t*>(in_v);
  auto* out = static_cast<uint8_t*>(out_v);
  memset(out, 0, kFloatCodecHeaderBytes);
  out[0] = kFloatCodecVersion;
  out[1] = static_cast<uint8_t>(elem_bytes);
  out[2] = kBlockLog2;
  const uint64_t n64 = n;
  memcpy(out + 8, &n64, 8);
  switch (elem_bytes) {
    case 1: return EncodeAll<uint8_t>(in, n, out);
    case 2: return EncodeAll<uint16_t>(in, n, out);
    case 4: return EncodeAll<uint32_t>(in, n, out);
    case 8: return EncodeAll<uint64_t>(in, n, out);
  }
  return 0;
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
  if (in[0] != kFloatCodecVersion) return "unknown codec version";
  if (in[1] != elem_bytes) return "element size differs from the record's dtype";
  const int block_log2 = in[2];
  if (block_log2 < kMinBlockLog2 || block_log2 > kMaxBlockLog2) return "block size out of range";
  if (in[3] || Load32(in + 4)) return "reserved header bytes are not zero";
  const uint64_t n = Load<uint64_t>(in + 8);
  if (out_bytes % elem_bytes || n != out_bytes / elem_bytes) return "element count differs from the record's shape";
  switch (elem_bytes) {
    case 1: return DecodeAll<uint8_t>(in, size, n, block_log2, out);
    case 2: return DecodeAll<uint16_t>(in, size, n, block_log2, out);
    case 4: return DecodeAll<uint32_t>(in, size, n, block_log2, out);
    default: return DecodeAll<uint64_t>(in, size, n, block_log2, out);
  }
}

}  // namespace ttrace::store
