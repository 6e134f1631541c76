#include "tools/simgpu/nccl/testdata/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu::nccl::testing {
namespace {

namespace kd = simgpu::nv;

bool IsFp8(ncclDataType_t t) { return t == ncclFloat8e4m3 || t == ncclFloat8e5m2; }
bool IsFloating(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 || IsFp8(t);
}
kd::Fp8Format Fp8Of(ncclDataType_t t) { return t == ncclFloat8e4m3 ? kd::Fp8Format::kE4M3 : kd::Fp8Format::kE5M2; }
bool IsSigned(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

double LoadFloat(ncclDataType_t t, const uint8_t* p) {
  switch (t) {
    case ncclFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case ncclFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return kd::Fp8ToFloat(*p, Fp8Of(t));
    default: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return t == ncclFloat16 ? kd::HalfToFloat(h) : kd::Bf16ToFloat(h);
    }
  }
}

void StoreFloat(ncclDataType_t t, double v, uint8_t* p) {
  switch (t) {
    case ncclFloat64:
      std::memcpy(p, &v, 8);
      return;
    case ncclFloat32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      *p = kd::FloatToFp8(static_cast<float>(v), Fp8Of(t), kd::Fp8Saturation::kSatFinite);
      return;
    default: {
      float f = static_cast<float>(v);
      uint16_t h = t == ncclFloat16 ? kd::FloatToHalf(f) : kd::FloatToBf16(f);
      std::memcpy(p, &h, 2);
      return;
    }
  }
}

double RoundTo(ncclDataType_t t, double v) {
  uint8_t buf[8];
  StoreFloat(t, v, buf);
  return LoadFloat(t, buf);
}

// The result of one operation: FP8 arithmetic happens in half (sm_90 NCCL), then narrows to FP8.
double RoundOp(ncclDataType_t t, double v) { return RoundTo(t, IsFp8(t) ? RoundTo(ncclFloat16, v) : v); }

// fmaxf/__hmax: a NaN operand yields the other one; +0 > -0.
double Max(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == 0 && b == 0) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
double Min(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == 0 && b == 0) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// NCCL's ring all-reduce schedule on one channel whose ring is 0, 1, ..., n-1, transcribed step by step from
// runRing: in each loop, step 0 has ring position r send chunk r-1; steps 2..n-1 have it receive, reduce and
// send chunk r-j; the last reduce step has it finish chunk r. Returns the element ranges of the chunks, each
// with the ranks in the order they reduced it.
struct Segment {
  size_t begin, end;
  Chain chain;
};

std::vector<Segment> RingSchedule(size_t count, int n, size_t es, size_t chunk_bytes) {
  std::vector<Segment> segments;
  const size_t full = chunk_bytes / es > 0 ? chunk_bytes / es : 1;
  const size_t loop = static_cast<size_t>(n) * full;
  const size_t align = 16 / es > 0 ? 16 / es : 1;
  for (size_t elemOffset = 0; elemOffset < count; elemOffset += loop) {
    const size_t remCount = count - elemOffset;
    size_t chunkCount = full;
    if (remCount < loop) chunkCount = ((remCount + n - 1) / n + align - 1) / align * align;
    std::vector<Chain> chains(n);
    for (int ringIx = 0; ringIx < n; ++ringIx) chains[(ringIx + n - 1) % n].push_back(ringIx);  // step 0
    for (int j = 2; j < n; ++j) {
      for (int ringIx = 0; ringIx < n; ++ringIx) chains[(ringIx + n - j) % n].push_back(ringIx);
    }
    if (n > 1) {
      for (int ringIx = 0; ringIx < n; ++ringIx) chains[ringIx].push_back(ringIx);  // final reduce
    }
    for (int chunk = 0; chunk < n; ++chunk) {
      const size_t chunkOffset = chunk * chunkCount;
      if (chunkOffset >= remCount) continue;
      const size_t nelem = std::min(chunkCount, remCount - chunkOffset);
      segments.push_back({elemOffset + chunkOffset, elemOffset + chunkOffset + nelem, chains[chunk]});
    }
  }
  return segments;
}

size_t EnvRingChunkBytes() {
  const char* v = std::getenv("SIMGPU_NCCL_RING_CHUNK_BYTES");
  size_t b = v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : size_t{2} << 20;
  if (b < 16) b = 16;
  return (b + 15) / 16 * 16;
}

bool EnvRankOrder() {
  const char* v = std::getenv("SIMGPU_NCCL_ORDER");
  return v != nullptr && std::string(v) == "rank";
}

// Integers as 64-bit values: sign-extended for signed types, zero-extended otherwise.
int64_t LoadInt(ncclDataType_t t, const uint8_t* p) {
  size_t w = ElementSize(t);
  uint64_t u = 0;
  std::memcpy(&u, p, w);
  if (IsSigned(t) && w < 8 && (u >> (8 * w - 1)) & 1) u |= ~uint64_t{0} << (8 * w);
  return static_cast<int64_t>(u);
}

void StoreInt(ncclDataType_t t, int64_t v, uint8_t* p) { std::memcpy(p, &v, ElementSize(t)); }

int64_t TruncInt(ncclDataType_t t, uint64_t v) {
  uint8_t buf[8];
  StoreInt(t, static_cast<int64_t>(v), buf);
  return LoadInt(t, buf);
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

size_t ElementSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

const char* TypeName(ncclDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                "half", "float", "double", "bf16", "fp8e4m3", "fp8e5m2"};
  return t >= 0 && t < ncclNumTypes ? names[t] : "?";
}

const char* OpName(ncclRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < ncclNumOps ? names[op] : "?";
}

std::vector<uint8_t> MakeInput(ncclDataType_t t, ncclRedOp_t op, uint64_t seed, int rank, size_t count) {
  const size_t es = ElementSize(t);
  std::vector<uint8_t> out(count * es);
  for (size_t i = 0; i < count; ++i) {
    uint64_t h = Mix(seed * 0x100000001b3ull ^ Mix(static_cast<uint64_t>(rank) << 40 ^ i));
    uint8_t* p = out.data() + i * es;
    if (IsFp8(t)) {
      *p = static_cast<uint8_t>(h);
    } else if (IsFloating(t)) {
      double v = op == ncclProd ? 1.0 + (static_cast<double>(h % 257) - 128) / 1024
                                : (static_cast<double>(h % 2001) - 1000) / 128 * std::ldexp(1.0, (h >> 20) % 4);
      StoreFloat(t, v, p);
    } else if (op == ncclProd) {
      StoreInt(t, IsSigned(t) ? static_cast<int64_t>(h % 7) - 3 : static_cast<int64_t>(h % 5), p);
    } else if (es == 1) {
      StoreInt(t, IsSigned(t) ? static_cast<int64_t>(h % 201) - 100 : static_cast<int64_t>(h % 200), p);
    } else {
      StoreInt(t, static_cast<int64_t>(h), p);  // full range: 32- and 64-bit sums wrap
    }
  }
  return out;
}

ChainOf ReferenceChains(RefColl coll, int nranks, size_t count, size_t elem_bytes, int rank, int root) {
  auto rotated = [nranks](int first) {
    auto c = std::make_shared<Chain>();
    for (int k = 0; k < nranks; ++k) c->push_back((first + k) % nranks);
    return [c](size_t) -> const Chain& { return *c; };
  };
  if (EnvRankOrder()) return rotated(0);
  switch (coll) {
    case RefColl::kReduce: return rotated((root + 1) % nranks);
    case RefColl::kReduceScatter: return rotated((rank + 1) % nranks);
    default: {
      auto segments =
          std::make_shared<std::vector<Segment>>(RingSchedule(count, nranks, elem_bytes, EnvRingChunkBytes()));
      return [segments](size_t i) -> const Chain& {
        auto it = std::upper_bound(segments->begin(), segments->end(), i,
                                   [](size_t x, const Segment& s) { return x < s.end; });
        return it->chain;
      };
    }
  }
}

std::vector<uint8_t> ReferenceReduce(ncclDataType_t t, ncclRedOp_t op,
                                     const std::vector<std::vector<uint8_t>>& inputs, size_t offset, size_t count,
                                     const ChainOf& chain_of, const std::vector<double>& premul) {
  const size_t es = ElementSize(t);
  const int n = static_cast<int>(inputs.size());
  std::vector<uint8_t> out(count * es);
  for (size_t i = 0; i < count; ++i) {
    const size_t at = (offset + i) * es;
    const Chain& chain = chain_of(i);
    if (IsFloating(t)) {
      const double k = RoundTo(t, static_cast<double>(static_cast<float>(1.0 / n)));
      const double k64 = 1.0 / n;
      auto pre = [&](int r, double x) {
        if (!premul.empty()) return RoundOp(t, x * premul[r]);
        return op == ncclAvg ? RoundOp(t, x * (t == ncclFloat64 ? k64 : k)) : x;
      };
      double acc = pre(chain[0], LoadFloat(t, inputs[chain[0]].data() + at));
      for (size_t c = 1; c < chain.size(); ++c) {
        double y = pre(chain[c], LoadFloat(t, inputs[chain[c]].data() + at));
        switch (premul.empty() ? op : ncclSum) {
          case ncclSum: case ncclAvg: acc = RoundOp(t, acc + y); break;
          case ncclProd: acc = RoundOp(t, acc * y); break;
          case ncclMax: acc = Max(acc, y); break;
          default: acc = Min(acc, y); break;
        }
      }
      StoreFloat(t, acc, out.data() + i * es);
    } else {
      auto pre = [&](int r, int64_t x) {
        if (premul.empty()) return x;
        return TruncInt(t, static_cast<uint64_t>(x) * static_cast<uint64_t>(static_cast<int64_t>(premul[r])));
      };
      int64_t acc = pre(chain[0], LoadInt(t, inputs[chain[0]].data() + at));
      for (size_t c = 1; c < chain.size(); ++c) {
        int64_t y = pre(chain[c], LoadInt(t, inputs[chain[c]].data() + at));
        bool less = IsSigned(t) ? acc < y : static_cast<uint64_t>(acc) < static_cast<uint64_t>(y);
        switch (premul.empty() ? op : ncclSum) {
          case ncclSum: case ncclAvg:
            acc = TruncInt(t, static_cast<uint64_t>(acc) + static_cast<uint64_t>(y));
            break;
          case ncclProd:
            acc = TruncInt(t, static_cast<uint64_t>(acc) * static_cast<uint64_t>(y));
            break;
          case ncclMax: acc = less ? y : acc; break;
          default: acc = less ? acc : y; break;
        }
      }
      if (op == ncclAvg && premul.empty()) {
        acc = IsSigned(t) ? acc / n : static_cast<int64_t>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(n));
      }
      StoreInt(t, acc, out.data() + i * es);
    }
  }
  return out;
}

std::vector<uint8_t> StoreValue(ncclDataType_t t, double v) {
  std::vector<uint8_t> out(ElementSize(t));
  if (IsFloating(t)) {
    StoreFloat(t, v, out.data());
  } else {
    StoreInt(t, static_cast<int64_t>(v), out.data());
  }
  return out;
}

double LoadValue(ncclDataType_t t, const uint8_t* p) {
  return IsFloating(t) ? LoadFloat(t, p) : static_cast<double>(LoadInt(t, p));
}

uint64_t Digest(const void* data, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace simgpu::nccl::testing
