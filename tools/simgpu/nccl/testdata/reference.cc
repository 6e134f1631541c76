#include "tools/simgpu/nccl/testdata/reference.h"

#include <cmath>
#include <cstring>

#include "kernels/dtype.h"

namespace simgpu::nccl::testing {
namespace {

namespace kd = ttrace::kernels;

bool IsFloating(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16;
}
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
    if (IsFloating(t)) {
      double v = op == ncclProd ? 1.0 + (static_cast<double>(h % 257) - 128) / 1024
                                : (static_cast<double>(h % 2001) - 1000) / 128 * std::ldexp(1.0, (h >> 20) % 4);
      StoreFloat(t, v, p);
    } else if (t == ncclFloat8e4m3 || t == ncclFloat8e5m2) {
      *p = static_cast<uint8_t>(h);
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

std::vector<uint8_t> ReferenceReduce(ncclDataType_t t, ncclRedOp_t op,
                                     const std::vector<std::vector<uint8_t>>& inputs, size_t offset, size_t count) {
  const size_t es = ElementSize(t);
  const int n = static_cast<int>(inputs.size());
  std::vector<uint8_t> out(count * es);
  for (size_t i = 0; i < count; ++i) {
    const size_t at = (offset + i) * es;
    if (IsFloating(t)) {
      const double k = RoundTo(t, static_cast<double>(static_cast<float>(1.0 / n)));
      const double k64 = 1.0 / n;
      auto pre = [&](double x) { return op == ncclAvg ? RoundTo(t, x * (t == ncclFloat64 ? k64 : k)) : x; };
      double acc = pre(LoadFloat(t, inputs[0].data() + at));
      for (int r = 1; r < n; ++r) {
        double y = pre(LoadFloat(t, inputs[r].data() + at));
        switch (op) {
          case ncclSum: case ncclAvg: acc = RoundTo(t, acc + y); break;
          case ncclProd: acc = RoundTo(t, acc * y); break;
          case ncclMax: acc = std::fmax(acc, y); break;
          default: acc = std::fmin(acc, y); break;
        }
      }
      StoreFloat(t, acc, out.data() + i * es);
    } else {
      int64_t acc = LoadInt(t, inputs[0].data() + at);
      for (int r = 1; r < n; ++r) {
        int64_t y = LoadInt(t, inputs[r].data() + at);
        bool less = IsSigned(t) ? acc < y : static_cast<uint64_t>(acc) < static_cast<uint64_t>(y);
        switch (op) {
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
      if (op == ncclAvg) {
        acc = IsSigned(t) ? acc / n : static_cast<int64_t>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(n));
      }
      StoreInt(t, acc, out.data() + i * es);
    }
  }
  return out;
}

uint64_t Digest(const void* data, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace simgpu::nccl::testing
