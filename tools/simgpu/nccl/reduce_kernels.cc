// The kernels are templates over a value type V (storage S, arithmetic type A, Load: S->A exact, Store: A->S
// rounding to nearest even), instantiated with the op as a lambda so that the inner loops carry no switch.
#include "tools/simgpu/nccl/reduce_kernels.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/dtype.h"

namespace simgpu::nccl {
namespace {

namespace kd = ttrace::kernels;

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

template <class V, class Fn>
void Combine(void* acc, const void* src, size_t n, Fn fn) {
  using S = typename V::S;
  S* a = static_cast<S*>(acc);
  const S* b = static_cast<const S*>(src);
  for (size_t i = 0; i < n; ++i) a[i] = V::Store(fn(V::Load(a[i]), V::Load(b[i])));
}

template <class V>
struct FloatKernels {
  static constexpr bool kInteger = false;
  using S = typename V::S;
  using A = typename V::A;

  static A AvgScalar(int nranks) { return V::Load(V::Store(static_cast<A>(1.0 / nranks))); }

  static void First(const Reduction& r, void* dst, const void* src, size_t n) {
    S* d = static_cast<S*>(dst);
    const S* s = static_cast<const S*>(src);
    if (r.op != ncclAvg) {
      for (size_t i = 0; i < n; ++i) d[i] = s[i];
      return;
    }
    A k = AvgScalar(r.nranks);
    for (size_t i = 0; i < n; ++i) d[i] = V::Store(V::Load(s[i]) * k);
  }

  static void Next(const Reduction& r, void* acc, const void* src, size_t n) {
    switch (r.op) {
      case ncclSum:
        return Combine<V>(acc, src, n, [](A x, A y) { return x + y; });
      case ncclProd:
        return Combine<V>(acc, src, n, [](A x, A y) { return x * y; });
      case ncclMax:
        return Combine<V>(acc, src, n, [](A x, A y) { return std::fmax(x, y); });
      case ncclMin:
        return Combine<V>(acc, src, n, [](A x, A y) { return std::fmin(x, y); });
      case ncclAvg: {
        A k = AvgScalar(r.nranks);
        // The pre-multiplied operand is rounded to the type before the add, as FuncPreMulSum does.
        return Combine<V>(acc, src, n, [k](A x, A y) { return x + V::Load(V::Store(y * k)); });
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

  static void First(const Reduction&, void* dst, const void* src, size_t n) {
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    for (size_t i = 0; i < n; ++i) d[i] = s[i];
  }

  static void Next(const Reduction& r, void* acc, const void* src, size_t n) {
    switch (r.op) {
      case ncclSum:
      case ncclAvg:
        return Combine<V>(acc, src, n, [](T x, T y) {
          return Wrap(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
        });
      case ncclProd:
        return Combine<V>(acc, src, n, [](T x, T y) {
          return Wrap(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
        });
      case ncclMax:
        return Combine<V>(acc, src, n, [](T x, T y) { return x < y ? y : x; });
      case ncclMin:
        return Combine<V>(acc, src, n, [](T x, T y) { return y < x ? y : x; });
      default:
        return;
    }
  }

  static void Finish(const Reduction& r, void* acc, size_t n) {
    if (r.op != ncclAvg) return;
    T* a = static_cast<T*>(acc);
    if constexpr (std::is_signed_v<T>) {
      for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(static_cast<int64_t>(a[i]) / r.nranks);
    } else {
      for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(static_cast<uint64_t>(a[i]) / r.nranks);
    }
  }
};

// Calls fn.template operator()<Kernels>() for the kernel family of dtype.
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
    default: return;
  }
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
    default: return "invalid op";
  }
}

bool ReductionSupported(ncclDataType_t dtype, ncclRedOp_t op) {
  if (op < ncclSum || op >= ncclNumOps) return false;
  return DataTypeSize(dtype) != 0 && dtype != ncclFloat8e4m3 && dtype != ncclFloat8e5m2;
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
