// Convolution arithmetic (conv_compute.h). Direct summation: each output element gathers its products into a
// buffer in the documented order and hands them to the accumulation plan, so the order is exactly the stated one
// whatever SIMGPU_ACCUM selects. Speed is secondary (simgpu's convolutions are small in tests and demos).
#include "tools/simgpu/cudnn/conv_compute.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"
#include "tools/simgpu/cudnn/data_type.h"

namespace simgpu::cudnn {
namespace {

int64_t Product(const int64_t* v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= v[i];
  return p;
}

// Row-major multi-index of `flat` over `sizes`.
void Unravel(int64_t flat, const int64_t* sizes, int n, int64_t* index) {
  for (int d = n - 1; d >= 0; --d) {
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
}

int64_t Offset(const TensorView& t, int64_t a, int64_t b, const int64_t* spatial, int n) {
  int64_t off = a * t.strides[0] + b * t.strides[1];
  for (int d = 0; d < n; ++d) off += spatial[d] * t.strides[2 + d];
  return off;
}

template <typename T>
T Load(const TensorView& t, int64_t off) {
  if constexpr (sizeof(T) == sizeof(double)) {
    return LoadDouble(t.data, static_cast<size_t>(off), t.dtype);
  } else {
    return LoadFloat(t.data, static_cast<size_t>(off), t.dtype);
  }
}

template <typename T>
void Store(const TensorView& t, int64_t off, T v) {
  if constexpr (sizeof(T) == sizeof(double)) {
    StoreDouble(t.data, static_cast<size_t>(off), t.dtype, v);
  } else {
    StoreFloat(t.data, static_cast<size_t>(off), t.dtype, v);
  }
}

template <typename T>
T Multiply(AccumPrecision precision, T a, T b) {
  T prod = a * b;
  if (precision == AccumPrecision::kFp16) {
    prod = simgpu::nv::HalfToFloat(simgpu::nv::FloatToHalf(static_cast<float>(prod)));
  }
  return prod;
}

template <typename T>
void Finish(const TensorView& t, int64_t off, T acc, T alpha, T beta) {
  T out = alpha * acc;
  if (beta != T(0)) {
    T old = Load<T>(t, off);
    out = out + beta * old;
  }
  Store<T>(t, off, out);
}

// The filter tap offsets f'_d * L_d for every tap f (row-major over F), flipped for CUDNN_CONVOLUTION.
std::vector<int64_t> TapOffsets(const ConvGeometry& g) {
  const int D = g.spatial;
  const int64_t taps = Product(g.filter, D);
  std::vector<int64_t> offsets(static_cast<size_t>(taps * D));
  int64_t f[kMaxSpatial];
  for (int64_t t = 0; t < taps; ++t) {
    Unravel(t, g.filter, D, f);
    for (int d = 0; d < D; ++d) {
      const int64_t fd = g.flip ? g.filter[d] - 1 - f[d] : f[d];
      offsets[static_cast<size_t>(t * D + d)] = fd * g.dilation[d];
    }
  }
  return offsets;
}

template <typename T>
void Forward(const ConvProblem& p, T alpha, T beta) {
  const ConvGeometry& g = p.geometry;
  const int D = g.spatial;
  const int64_t cpg = g.c / g.groups, kpg = g.k / g.groups;
  const int64_t taps = Product(g.filter, D), outs = Product(g.out, D);
  const std::vector<int64_t> tap = TapOffsets(g);
  const AccumPlan plan(AccumFromEnv(), p.precision, cpg * taps, p.call);
  std::vector<T> prods(static_cast<size_t>(cpg * taps));
  int64_t o[kMaxSpatial], pos[kMaxSpatial], fidx[kMaxSpatial];
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t k = 0; k < g.k; ++k) {
      const int64_t c0 = (k / kpg) * cpg;
      for (int64_t oi = 0; oi < outs; ++oi) {
        Unravel(oi, g.out, D, o);
        size_t q = 0;
        for (int64_t c = 0; c < cpg; ++c) {
          for (int64_t t = 0; t < taps; ++t) {
            bool inside = true;
            for (int d = 0; d < D; ++d) {
              pos[d] = o[d] * g.stride[d] - g.pad[d] + tap[static_cast<size_t>(t * D + d)];
              inside = inside && pos[d] >= 0 && pos[d] < g.in[d];
            }
            Unravel(t, g.filter, D, fidx);
            const T xv = inside ? Load<T>(p.x, Offset(p.x, n, c0 + c, pos, D)) : T(0);
            const T wv = Load<T>(p.w, Offset(p.w, k, c, fidx, D));
            prods[q++] = Multiply(p.precision, xv, wv);
          }
        }
        Finish(p.y, Offset(p.y, n, k, o, D), plan.Sum(prods.data()), alpha, beta);
      }
    }
  }
}

template <typename T>
void BackwardData(const ConvProblem& p, T alpha, T beta) {
  const ConvGeometry& g = p.geometry;
  const int D = g.spatial;
  const int64_t cpg = g.c / g.groups, kpg = g.k / g.groups;
  const int64_t taps = Product(g.filter, D), ins = Product(g.in, D);
  const std::vector<int64_t> tap = TapOffsets(g);
  const AccumPlan plan(AccumFromEnv(), p.precision, kpg * taps, p.call);
  std::vector<T> prods(static_cast<size_t>(kpg * taps));
  int64_t i[kMaxSpatial], o[kMaxSpatial], fidx[kMaxSpatial];
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t c = 0; c < g.c; ++c) {
      const int64_t k0 = (c / cpg) * kpg, cl = c % cpg;
      for (int64_t ii = 0; ii < ins; ++ii) {
        Unravel(ii, g.in, D, i);
        size_t q = 0;
        for (int64_t k = 0; k < kpg; ++k) {
          for (int64_t t = 0; t < taps; ++t) {
            bool inside = true;
            for (int d = 0; d < D; ++d) {
              const int64_t num = i[d] + g.pad[d] - tap[static_cast<size_t>(t * D + d)];
              inside = inside && num >= 0 && num % g.stride[d] == 0 && num / g.stride[d] < g.out[d];
              o[d] = inside ? num / g.stride[d] : 0;
            }
            Unravel(t, g.filter, D, fidx);
            const T dy = inside ? Load<T>(p.y, Offset(p.y, n, k0 + k, o, D)) : T(0);
            const T wv = Load<T>(p.w, Offset(p.w, k0 + k, cl, fidx, D));
            prods[q++] = Multiply(p.precision, dy, wv);
          }
        }
        Finish(p.x, Offset(p.x, n, c, i, D), plan.Sum(prods.data()), alpha, beta);
      }
    }
  }
}

template <typename T>
void BackwardFilter(const ConvProblem& p, T alpha, T beta) {
  const ConvGeometry& g = p.geometry;
  const int D = g.spatial;
  const int64_t cpg = g.c / g.groups, kpg = g.k / g.groups;
  const int64_t taps = Product(g.filter, D), outs = Product(g.out, D);
  const std::vector<int64_t> tap = TapOffsets(g);
  const AccumPlan plan(AccumFromEnv(), p.precision, g.n * outs, p.call);
  std::vector<T> prods(static_cast<size_t>(g.n * outs));
  int64_t o[kMaxSpatial], pos[kMaxSpatial], fidx[kMaxSpatial];
  for (int64_t k = 0; k < g.k; ++k) {
    const int64_t c0 = (k / kpg) * cpg;
    for (int64_t c = 0; c < cpg; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        Unravel(t, g.filter, D, fidx);
        size_t q = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          for (int64_t oi = 0; oi < outs; ++oi) {
            Unravel(oi, g.out, D, o);
            bool inside = true;
            for (int d = 0; d < D; ++d) {
              pos[d] = o[d] * g.stride[d] - g.pad[d] + tap[static_cast<size_t>(t * D + d)];
              inside = inside && pos[d] >= 0 && pos[d] < g.in[d];
            }
            const T dy = Load<T>(p.y, Offset(p.y, n, k, o, D));
            const T xv = inside ? Load<T>(p.x, Offset(p.x, n, c0 + c, pos, D)) : T(0);
            prods[q++] = Multiply(p.precision, dy, xv);
          }
        }
        Finish(p.w, Offset(p.w, k, c, fidx, D), plan.Sum(prods.data()), alpha, beta);
      }
    }
  }
}

template <typename T>
void Run(const ConvProblem& p, T alpha, T beta) {
  switch (p.kind) {
    case ConvKind::kForward: Forward<T>(p, alpha, beta); return;
    case ConvKind::kBackwardData: BackwardData<T>(p, alpha, beta); return;
    case ConvKind::kBackwardFilter: BackwardFilter<T>(p, alpha, beta); return;
  }
}

}  // namespace

const TensorView& ConvOutput(const ConvProblem& p) {
  switch (p.kind) {
    case ConvKind::kForward: return p.y;
    case ConvKind::kBackwardData: return p.x;
    case ConvKind::kBackwardFilter: return p.w;
  }
  return p.y;
}

int ConvOutputShape(const ConvProblem& p, int64_t dims[CUDNN_DIM_MAX]) {
  const ConvGeometry& g = p.geometry;
  const int64_t* spatial = p.kind == ConvKind::kForward ? g.out : p.kind == ConvKind::kBackwardData ? g.in : g.filter;
  dims[0] = p.kind == ConvKind::kBackwardFilter ? g.k : g.n;
  dims[1] = p.kind == ConvKind::kForward ? g.k : p.kind == ConvKind::kBackwardData ? g.c : g.c / g.groups;
  std::copy(spatial, spatial + g.spatial, dims + 2);
  return g.spatial + 2;
}

void RunConvolution(const ConvProblem& p, double alpha, double beta) {
  if (p.precision == AccumPrecision::kFp64) {
    Run<double>(p, alpha, beta);
  } else {
    Run<float>(p, static_cast<float>(alpha), static_cast<float>(beta));
  }
}

void* ElementInMemoryOrder(const TensorView& t, int rank, const int64_t* dims, uint64_t elem) {
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) count *= static_cast<uint64_t>(dims[i]);
  if (elem >= count) return nullptr;
  int order[CUDNN_DIM_MAX];
  std::iota(order, order + rank, 0);
  std::stable_sort(order, order + rank, [&](int a, int b) { return t.strides[a] > t.strides[b]; });
  int64_t off = 0;
  for (int j = rank - 1; j >= 0; --j) {
    const int d = order[j];
    off += static_cast<int64_t>(elem % static_cast<uint64_t>(dims[d])) * t.strides[d];
    elem /= static_cast<uint64_t>(dims[d]);
  }
  return static_cast<char*>(t.data) + off * static_cast<int64_t>(ElementBytes(t.dtype));
}

}  // namespace simgpu::cudnn
