// The kernels are templates over a value type V (storage S, arithmetic type A, Load: S->A exact, Store: A->S
// rounding to nearest even), instantiated with the op as a lambda so that the inner loops carry no switch.
#include "tools/simgpu/nccl/reduce_kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu::nccl {
namespace {

namespace kd = simgpu::nv;

template <typename T>
struct Native {
  using S = T;
  using A = T;
  static A Load(S s) { return s; }
  static S Store(A a) { return a; }
};
struct Half {
  using S = uint16_t;
  using A = float;
  static A Load(S s) { return kd::HalfToFloat(s); }
  static S Store(A a) { return kd::FloatToHalf(a); }
};
struct Bf16 {
  using S = uint16_t;
  using A = float;
  static A Load(S s) { return kd::Bf16ToFloat(s); }
  static S Store(A a) { return kd::FloatToBf16(a); }
};

// FP8 on sm_90 (reduce_kernel.h): widened to half exactly, one half operation (rounded to half), narrowed with
// __NV_SATFINITE (__nv_fp8_e4m3(__half)). Arithmetic in FP32 rounded to half equals the half operation, as above.
template <kd::Fp8Format F>
struct Fp8 {
  using S = uint8_t;
  using A = float;
  static A Load(S s) { return kd::Fp8ToFloat(s, F); }
  static S Store(A a) {
    return kd::FloatToFp8(kd::HalfToFloat(kd::FloatToHalf(a)), F, kd::Fp8Saturation::kSatFinite);
  }
};

// fmaxf/fminf and __hmax/__hmin: a NaN operand yields the other operand, and -0 < +0.
template <typename A>
A GpuMax(A y, A x) {
  if (std::isnan(y)) return x;
  if (std::isnan(x)) return y;
  if (y == x) return std::signbit(y) ? x : y;
  return y > x ? y : x;
}
template <typename A>
A GpuMin(A y, A x) {
  if (std::isnan(y)) return x;
  if (std::isnan(x)) return y;
  if (y == x) return std::signbit(y) ? y : x;
  return y < x ? y : x;
}

template <typename S>
S ScalarOf(const Reduction& r) {
  S s;
  std::memcpy(&s, &r.scalar, sizeof s);
  return s;
}

// acc[i] = Store(fn(pre(src[i]), Load(acc[i]))), pre(y) being Load(y) or its PreMulSum product.
template <class V, class Pre, class Fn>
void Combine(void* acc, const void* src, size_t n, Pre pre, Fn fn) {
  using S = typename V::S;
  S* a = static_cast<S*>(acc);
  const S* b = static_cast<const S*>(src);
  for (size_t i = 0; i < n; ++i) a[i] = V::Store(fn(pre(b[i]), V::Load(a[i])));
}

template <class V>
struct FloatKernels {
  static constexpr bool kInteger = false;
  using S = typename V::S;
  using A = typename V::A;

  static void First(const Reduction& r, void* dst, const void* src, size_t n) {
    S* d = static_cast<S*>(dst);
    const S* s = static_cast<const S*>(src);
    if (r.op != DevOp::kPreMulSum) {
      std::memmove(d, s, n * sizeof(S));
      return;
    }
    const A k = V::Load(ScalarOf<S>(r));
    for (size_t i = 0; i < n; ++i) d[i] = V::Store(V::Load(s[i]) * k);
  }

  static void Next(const Reduction& r, void* acc, const void* src, size_t n) {
    auto load = [](S y) { return V::Load(y); };
    switch (r.op) {
      case DevOp::kSum:
        return Combine<V>(acc, src, n, load, [](A y, A x) { return y + x; });
      case DevOp::kProd:
        return Combine<V>(acc, src, n, load, [](A y, A x) { return y * x; });
      case DevOp::kMax:
        return Combine<V>(acc, src, n, load, GpuMax<A>);
      case DevOp::kMin:
        return Combine<V>(acc, src, n, load, GpuMin<A>);
      case DevOp::kPreMulSum: {
        const A k = V::Load(ScalarOf<S>(r));
        // The product is rounded to the type before the add, as Apply_PreOp<FuncPreMulSum> does.
        return Combine<V>(acc, src, n, [k](S y) { return V::Load(V::Store(V::Load(y) * k)); },
                          [](A y, A x) { return y + x; });
      }
      default:
        return;
    }
  }
};

template <typename T>
struct IntKernels {
  static constexpr bool kInteger = true;
  using U = std::make_unsigned_t<T>;
  using V = Native<T>;

  static T Wrap(U u) { return static_cast<T>(u); }
  static T Mul(T x, T y) { return Wrap(static_cast<U>(static_cast<U>(x) * static_cast<U>(y))); }
  static T Add(T x, T y) { return Wrap(static_cast<U>(static_cast<U>(x) + static_cast<U>(y))); }

  static void First(const Reduction& r, void* dst, const void* src, size_t n) {
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    if (r.op != DevOp::kPreMulSum) {
      std::memmove(d, s, n * sizeof(T));
      return;
    }
    const T k = ScalarOf<T>(r);
    for (size_t i = 0; i < n; ++i) d[i] = Mul(s[i], k);
  }

  static void Next(const Reduction& r, void* acc, const void* src, size_t n) {
    auto load = [](T y) { return y; };
    switch (r.op) {
      case DevOp::kSum:
      case DevOp::kSumPostDiv:
        return Combine<V>(acc, src, n, load, Add);
      case DevOp::kProd:
        return Combine<V>(acc, src, n, load, Mul);
      case DevOp::kMax:
        return Combine<V>(acc, src, n, load, [](T y, T x) { return x < y ? y : x; });
      case DevOp::kMin:
        return Combine<V>(acc, src, n, load, [](T y, T x) { return y < x ? y : x; });
      case DevOp::kPreMulSum: {
        const T k = ScalarOf<T>(r);
        return Combine<V>(acc, src, n, [k](T y) { return Mul(y, k); }, Add);
      }
      default:
        return;
    }
  }

  static void Finish(const Reduction& r, void* acc, size_t n) {
    if (r.op != DevOp::kSumPostDiv) return;
    T* a = static_cast<T*>(acc);
    if constexpr (std::is_signed_v<T>) {
      for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(static_cast<int64_t>(a[i]) / r.nranks);
    } else {
      for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(static_cast<uint64_t>(a[i]) / r.nranks);
    }
  }
};

// Calls fn(Kernels{}) for the kernel family of dtype.
template <class Fn>
void Dispatch(ncclDataType_t dtype, Fn&& fn) {
  switch (dtype) {
    case ncclInt8: return fn(IntKernels<int8_t>{});
    case ncclUint8: return fn(IntKernels<uint8_t>{});
    case ncclInt32: return fn(IntKernels<int32_t>{});
    case ncclUint32: return fn(IntKernels<uint32_t>{});
    case ncclInt64: return fn(IntKernels<int64_t>{});
    case ncclUint64: return fn(IntKernels<uint64_t>{});
    case ncclFloat16: return fn(FloatKernels<Half>{});
    case ncclFloat32: return fn(FloatKernels<Native<float>>{});
    case ncclFloat64: return fn(FloatKernels<Native<double>>{});
    case ncclBfloat16: return fn(FloatKernels<Bf16>{});
    case ncclFloat8e4m3: return fn(FloatKernels<Fp8<kd::Fp8Format::kE4M3>>{});
    case ncclFloat8e5m2: return fn(FloatKernels<Fp8<kd::Fp8Format::kE5M2>>{});
    default: return;
  }
}

template <typename T>
uint64_t Bits(T v) {
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof v);
  return u;
}

}  // namespace

size_t DataTypeSize(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* DataTypeName(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
    case ncclFloat8e4m3: return "ncclFloat8e4m3";
    case ncclFloat8e5m2: return "ncclFloat8e5m2";
    default: return "invalid datatype";
  }
}

const char* RedOpName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "ncclSum";
    case ncclProd: return "ncclProd";
    case ncclMax: return "ncclMax";
    case ncclMin: return "ncclMin";
    case ncclAvg: return "ncclAvg";
    default: return "user-defined op";
  }
}

bool ReducibleType(ncclDataType_t dtype) { return DataTypeSize(dtype) != 0; }

bool ReductionSupported(ncclDataType_t dtype, ncclRedOp_t op) {
  return op >= ncclSum && op < ncclNumOps && ReducibleType(dtype);
}

Reduction BuiltinReduction(ncclDataType_t dtype, ncclRedOp_t op, int nranks) {
  Reduction r{dtype, DevOp::kSum, 0, nranks};
  switch (op) {
    case ncclProd: r.op = DevOp::kProd; break;
    case ncclMax: r.op = DevOp::kMax; break;
    case ncclMin: r.op = DevOp::kMin; break;
    case ncclAvg: {
      const float k = static_cast<float>(1.0 / nranks);
      r.op = DevOp::kPreMulSum;
      switch (dtype) {
        case ncclFloat16: r.scalar = kd::FloatToHalf(k); break;
        case ncclBfloat16: r.scalar = kd::FloatToBf16(k); break;
        case ncclFloat32: r.scalar = Bits(k); break;
        case ncclFloat64: r.scalar = Bits(1.0 / nranks); break;
        case ncclFloat8e4m3: r.scalar = kd::FloatToE4M3(k); break;
        case ncclFloat8e5m2: r.scalar = kd::FloatToE5M2(k); break;
        default: r.op = DevOp::kSumPostDiv; break;
      }
      break;
    }
    default: break;
  }
  return r;
}

void ReduceFirst(const Reduction& r, void* dst, const void* src, size_t n) {
  Dispatch(r.dtype, [&](auto k) { k.First(r, dst, src, n); });
}

void ReduceNext(const Reduction& r, void* acc, const void* src, size_t n) {
  Dispatch(r.dtype, [&](auto k) { k.Next(r, acc, src, n); });
}

void ReduceFinish(const Reduction& r, void* acc, size_t n) {
  Dispatch(r.dtype, [&](auto k) {
    if constexpr (decltype(k)::kInteger) k.Finish(r, acc, n);
  });
}

}  // namespace simgpu::nccl
