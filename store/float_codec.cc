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
  for (size_t i = 0; i < common; ++i)
    for (int s = 0; s < kStreams; ++s) ++hist[s][PlaneByte<T>(in, b[s] + i, plane)];
  for (int s = 0; s < kStreams; ++s)
    for (size_t i = b[s] + common; i < e[s]; ++i) ++hist[s][PlaneByte<T>(in, i, plane)];
}

struct BitWriter {
  uint64_t acc = 0;
  unsigned bits = 0;
  uint8_t* p;
  uint8_t* end;
  size_t i, e;  // elements still to code
};

template <typename T>
void EncodeStreams(const uint8_t* in, size_t n, int plane, const uint16_t code[256], const uint8_t len[256],
                   uint8_t* data, const uint32_t bytes[kStreams]) {
  BitWriter w[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    w[s].p = data;
    w[s].end = data += bytes[s];
    StreamRange(n, s, &w[s].i, &w[s].e);
  }
  // Four symbols per stream (<= 48 bits + 7 pending) between 8-byte stores, while every store stays inside its
  // own stream (so no stream overwrites its neighbour's first bytes).
  for (;;) {
    bool ok = true;
    for (const BitWriter& x : w) ok &= x.i + 4 <= x.e && x.p + 8 <= x.end;
    if (!ok) break;
    for (int r = 0; r < 4; ++r)
      for (BitWriter& x : w) {
        const uint8_t sym = PlaneByte<T>(in, x.i + r, plane);
        x.acc |= static_cast<uint64_t>(code[sym]) << x.bits;
        x.bits += len[sym];
      }
    for (BitWriter& x : w) {
      x.i += 4;
      memcpy(x.p, &x.acc, 8);
      x.p += x.bits >> 3;
      x.acc >>= x.bits & ~7u;
      x.bits &= 7;
    }
  }
  for (BitWriter& x : w) {
    for (; x.i < x.e; ++x.i) {
      const uint8_t sym = PlaneByte<T>(in, x.i, plane);
      x.acc |= static_cast<uint64_t>(code[sym]) << x.bits;
      x.bits += len[sym];
      for (; x.bits >= 8; x.bits -= 8, x.acc >>= 8) *x.p++ = static_cast<uint8_t>(x.acc);
    }
    if (x.bits) *x.p++ = static_cast<uint8_t>(x.acc);
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

// One plane of one block; returns the bytes written (at most 1 + n).
template <typename T>
size_t EncodePlane(const uint8_t* in, size_t n, int plane, bool top, uint8_t* out) {
  uint32_t hist[kStreams][256];
  if (n > 0 && (top || WorthCoding<T>(in, n, plane))) {
    Histograms<T>(in, n, plane, hist);
    uint32_t f[256];
    int used = 0, lo = 256, hi = -1;
    for (int s = 0; s < 256; ++s) {
      f[s] = hist[0][s] + hist[1][s] + hist[2][s] + hist[3][s];
      if (f[s]) ++used, lo = std::min(lo, s), hi = s;
    }
    if (used == 1) {
      out[0] = kConst;
      out[1] = static_cast<uint8_t>(lo);
      return 2;
    }
    uint8_t len[256];
    BuildLengths(f, len);
    uint32_t bytes[kStreams];
    const size_t table_bytes = static_cast<size_t>(hi - lo + 2) / 2;
    size_t total = 3 + table_bytes + 4 * kStreams;
    for (int s = 0; s < kStreams; ++s) {
      uint64_t bits = 0;
      for (int c = lo; c <= hi; ++c) bits += static_cast<uint64_t>(hist[s][c]) * len[c];
      bytes[s] = static_cast<uint32_t>((bits + 7) / 8);
      total += bytes[s];
    }
    if (total < 1 + n) {
      uint8_t* o = out;
      *o++ = kHuffman;
      *o++ = static_cast<uint8_t>(lo);
      *o++ = static_cast<uint8_t>(hi);
      for (size_t k = 0; k < table_bytes; ++k) {
        const int a = lo + 2 * static_cast<int>(k), b = a + 1;
        *o++ = static_cast<uint8_t>(len[a] | (b <= hi ? len[b] << 4 : 0));
      }
      for (uint32_t b : bytes) {
        memcpy(o, &b, 4);
        o += 4;
      }
      uint16_t code[256];
      CanonicalCodes(len, code);
      EncodeStreams<T>(in, n, plane, code, len, o, bytes);
      return total;
    }
  }
  out[0] = kRaw;
  for (size_t i = 0; i < n; ++i) out[1 + i] = PlaneByte<T>(in, i, plane);
  return 1 + n;
}

template <typename T>
size_t EncodeBlock(const uint8_t* in, size_t n, uint8_t* out) {
  size_t pos = 0;
  for (int plane = 0; plane < static_cast<int>(sizeof(T)); ++plane)
    pos += EncodePlane<T>(in, n, plane, plane == static_cast<int>(sizeof(T)) - 1, out + pos);
  return pos;
}

// ---- decoder ----------------------------------------------------------------------------------------------------

struct BitReader {
  const uint8_t* p;
  size_t size;       // bytes of this stream
  uint64_t pos = 0;  // bits consumed
  size_t i, e;       // elements still to decode
};

// Up to 8 bytes of the stream from byte `at`, zero past its end.
inline uint64_t LoadTail(const BitReader& r, size_t at) {
  uint64_t v = 0;
  if (at < r.size) memcpy(&v, r.p + at, std::min<size_t>(8, r.size - at));
  return v;
}

template <typename T>
const char* DecodeStreams(const uint8_t* data, const uint32_t bytes[kStreams], size_t n, int plane,
                          const uint16_t table[kTableSize], uint8_t* out) {
  constexpr size_t W = sizeof(T);
  BitReader r[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    r[s].p = data;
    r[s].size = bytes[s];
    data += bytes[s];
    StreamRange(n, s, &r[s].i, &r[s].e);
  }
  uint8_t* o = out + plane;
  for (;;) {
    bool ok = true;
    for (const BitReader& x : r) ok &= x.i + 4 <= x.e && (x.pos >> 3) + 8 <= x.size;
    if (!ok) break;
    uint64_t bits[kStreams];
    for (int s = 0; s < kStreams; ++s) bits[s] = Load<uint64_t>(r[s].p + (r[s].pos >> 3)) >> (r[s].pos & 7);
    for (int k = 0; k < 4; ++k)
      for (int s = 0; s < kStreams; ++s) {
        const uint16_t entry = table[bits[s] & (kTableSize - 1)];
        o[(r[s].i + k) * W] = static_cast<uint8_t>(entry);
        bits[s] >>= entry >> 8;
        r[s].pos += entry >> 8;
      }
    for (BitReader& x : r) x.i += 4;
  }
  for (BitReader& x : r) {
    for (; x.i < x.e; ++x.i) {
      const uint16_t entry = table[(LoadTail(x, x.pos >> 3) >> (x.pos & 7)) & (kTableSize - 1)];
      o[x.i * W] = static_cast<uint8_t>(entry);
      x.pos += entry >> 8;
      if (x.pos > static_cast<uint64_t>(x.size) * 8) return "a Huffman stream ends inside a code";
    }
    if ((x.pos + 7) / 8 != x.size) return "a Huffman stream has trailing bytes";
  }
  return nullptr;
}

template <typename T>
const char* DecodeBlock(const uint8_t* in, size_t size, size_t* pos, size_t n, uint8_t* out) {
  constexpr size_t W = sizeof(T);
  for (int plane = 0; plane < static_cast<int>(W); ++plane) {
    if (size - *pos < 1) return "a block ends before its planes";
    const uint8_t mode = in[(*pos)++];
    if (mode == kRaw) {
      if (size - *pos < n) return "a raw plane runs past the end";
      for (size_t i = 0; i < n; ++i) out[i * W + plane] = in[*pos + i];
      *pos += n;
    } else if (mode == kConst) {
      if (size - *pos < 1) return "a constant plane runs past the end";
      const uint8_t v = in[(*pos)++];
      for (size_t i = 0; i < n; ++i) out[i * W + plane] = v;
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
      uint16_t table[kTableSize];
      if (!BuildTable(len, table)) return "a Huffman code is not complete";
      uint32_t bytes[kStreams];
      size_t total = 0;
      for (int s = 0; s < kStreams; ++s) {
        bytes[s] = Load32(in + *pos + 4 * s);
        total += bytes[s];
      }
      *pos += 4 * kStreams;
      if (total > size - *pos) return "a Huffman plane runs past the end";
      if (n == 0) return "a Huffman plane of an empty block";
      if (const char* err = DecodeStreams<T>(in + *pos, bytes, n, plane, table, out)) return err;
      *pos += total;
    } else {
      return "unknown plane mode";
    }
  }
  for (size_t i = 0; i < n; ++i) Store<T>(out + i * W, Unrotate(Load<T>(out + i * W)));
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
