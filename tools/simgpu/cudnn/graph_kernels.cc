// Pointwise, reduction, matmul and fused SDPA arithmetic (graph_kernels.h).
#include "tools/simgpu/cudnn/graph_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tools/simgpu/common/accumulate.h"
#include "tools/simgpu/cudnn/data_type.h"

namespace simgpu::cudnn {
namespace {

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// An element that does not exist (past a ragged batch's end): reads give +0, writes are dropped.
constexpr int64_t kAbsent = std::numeric_limits<int64_t>::min();

// Where one batch of a tensor lies: element x of it (an offset from the batch's start, rel included) is at
// start + rel + x when rel + x < size, else absent. Dense tensors have no size limit.
struct Span {
  int64_t start = 0, rel = 0, size = std::numeric_limits<int64_t>::max();
};

int64_t At(const Span& s, int64_t x) {
  const int64_t r = s.rel + x;
  return r < s.size ? s.start + r : kAbsent;
}

// Batch n (an index along the first dimension) of t.
Span BatchSpan(const Bound& t, int64_t n) {
  if (t.ragged == nullptr) return {n * t.spec->strides[0], 0, std::numeric_limits<int64_t>::max()};
  return {t.ragged[n], 0, t.ragged[n + 1] - t.ragged[n]};
}

// Offset of the row-major index `idx` (over a shape t broadcasts to: its dimensions of size 1 read index 0) in t.
int64_t Offset(const Bound& t, const int64_t* idx) {
  const TensorSpec& s = *t.spec;
  if (s.dims.empty()) return 0;
  int64_t rel = 0;
  for (size_t i = 1; i < s.dims.size(); ++i) rel += (s.dims[i] == 1 ? 0 : idx[i]) * s.strides[i];
  return At(BatchSpan(t, s.dims[0] == 1 ? 0 : idx[0]), rel);
}

void Next(const std::vector<int64_t>& shape, int64_t* idx) {
  for (size_t i = shape.size(); i-- > 0;) {
    if (++idx[i] < shape[i]) return;
    idx[i] = 0;
  }
}

template <typename T>
T Load(const Bound& t, int64_t off) {
  if (off == kAbsent) return T(0);
  if constexpr (sizeof(T) == sizeof(double)) {
    return LoadDouble(t.data, static_cast<size_t>(off), t.spec->dtype);
  } else {
    return LoadFloat(t.data, static_cast<size_t>(off), t.spec->dtype);
  }
}

template <typename T>
void Store(const Bound& t, int64_t off, T v) {
  if (off == kAbsent) return;
  if constexpr (sizeof(T) == sizeof(double)) {
    StoreDouble(t.data, static_cast<size_t>(off), t.spec->dtype, v);
  } else {
    StoreFloat(t.data, static_cast<size_t>(off), t.spec->dtype, v);
  }
}

template <typename T>
T Sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

template <typename T>
T Apply(const PointwiseParams& p, T x, T b, T t, T index) {
  switch (p.mode) {
    case CUDNN_POINTWISE_ADD: return x + b;
    case CUDNN_POINTWISE_ADD_SQUARE: return x + b * b;
    case CUDNN_POINTWISE_DIV: return x / b;
    case CUDNN_POINTWISE_MAX: return std::isnan(x) || x > b ? x : b;
    case CUDNN_POINTWISE_MIN: return std::isnan(x) || x < b ? x : b;
    case CUDNN_POINTWISE_MOD: return std::fmod(x, b);
    case CUDNN_POINTWISE_MUL: return x * b;
    case CUDNN_POINTWISE_POW: return std::pow(x, b);
    case CUDNN_POINTWISE_SUB: return x - b;
    case CUDNN_POINTWISE_ABS: return std::fabs(x);
    case CUDNN_POINTWISE_CEIL: return std::ceil(x);
    case CUDNN_POINTWISE_COS: return std::cos(x);
    case CUDNN_POINTWISE_EXP: return std::exp(x);
    case CUDNN_POINTWISE_FLOOR: return std::floor(x);
    case CUDNN_POINTWISE_LOG: return std::log(x);
    case CUDNN_POINTWISE_NEG: return -x;
    case CUDNN_POINTWISE_RSQRT: return T(1) / std::sqrt(x);
    case CUDNN_POINTWISE_SIN: return std::sin(x);
    case CUDNN_POINTWISE_SQRT: return std::sqrt(x);
    case CUDNN_POINTWISE_TAN: return std::tan(x);
    case CUDNN_POINTWISE_ERF: return std::erf(x);
    case CUDNN_POINTWISE_IDENTITY: return x;
    case CUDNN_POINTWISE_RECIPROCAL: return T(1) / x;
    case CUDNN_POINTWISE_ATAN2: return std::atan2(x, b);
    case CUDNN_POINTWISE_RELU_FWD: {
      const T lower = static_cast<T>(p.relu_lower), upper = static_cast<T>(p.relu_upper);
      if (x <= lower) return lower + static_cast<T>(p.relu_slope) * (x - lower);
      return x > upper ? upper : x;
    }
    case CUDNN_POINTWISE_TANH_FWD: return std::tanh(x);
    case CUDNN_POINTWISE_SIGMOID_FWD: return Sigmoid(x);
    case CUDNN_POINTWISE_ELU_FWD: return x > T(0) ? x : static_cast<T>(p.elu_alpha) * (std::exp(x) - T(1));
    case CUDNN_POINTWISE_GELU_FWD: return T(0.5) * x * (T(1) + std::erf(x / std::sqrt(T(2))));
    case CUDNN_POINTWISE_SOFTPLUS_FWD: {
      const T beta = static_cast<T>(p.softplus_beta);
      return std::log1p(std::exp(beta * x)) / beta;
    }
    case CUDNN_POINTWISE_SWISH_FWD: return x * Sigmoid(static_cast<T>(p.swish_beta) * x);
    case CUDNN_POINTWISE_GELU_APPROX_TANH_FWD: {
      const T c = std::sqrt(T(2) / T(M_PI));
      return T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x)));
    }
    // Backward activations: x is the forward input, b the incoming gradient dy; the result is dx.
    case CUDNN_POINTWISE_RELU_BWD: {
      const T lower = static_cast<T>(p.relu_lower), upper = static_cast<T>(p.relu_upper);
      if (x <= lower) return static_cast<T>(p.relu_slope) * b;
      return x >= upper ? T(0) : b;
    }
    case CUDNN_POINTWISE_TANH_BWD: {
      const T t = std::tanh(x);
      return b * (T(1) - t * t);
    }
    case CUDNN_POINTWISE_SIGMOID_BWD: {
      const T s = Sigmoid(x);
      return b * s * (T(1) - s);
    }
    case CUDNN_POINTWISE_ELU_BWD: return x > T(0) ? b : b * static_cast<T>(p.elu_alpha) * std::exp(x);
    case CUDNN_POINTWISE_GELU_BWD: {
      const T cdf = T(0.5) * (T(1) + std::erf(x / std::sqrt(T(2))));
      const T pdf = std::exp(T(-0.5) * x * x) / std::sqrt(T(2) * T(M_PI));
      return b * (cdf + x * pdf);
    }
    case CUDNN_POINTWISE_SOFTPLUS_BWD: return b * Sigmoid(static_cast<T>(p.softplus_beta) * x);
    case CUDNN_POINTWISE_SWISH_BWD: {
      const T beta = static_cast<T>(p.swish_beta), s = Sigmoid(beta * x);
      return b * (s + beta * x * s * (T(1) - s));
    }
    case CUDNN_POINTWISE_GELU_APPROX_TANH_BWD: {
      const T c = std::sqrt(T(2) / T(M_PI)), k = T(0.044715);
      const T t = std::tanh(c * (x + k * x * x * x));
      return b * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * c * (T(1) + T(3) * k * x * x));
    }
    case CUDNN_POINTWISE_CMP_EQ: return x == b ? T(1) : T(0);
    case CUDNN_POINTWISE_CMP_NEQ: return x != b ? T(1) : T(0);
    case CUDNN_POINTWISE_CMP_GT: return x > b ? T(1) : T(0);
    case CUDNN_POINTWISE_CMP_GE: return x >= b ? T(1) : T(0);
    case CUDNN_POINTWISE_CMP_LT: return x < b ? T(1) : T(0);
    case CUDNN_POINTWISE_CMP_LE: return x <= b ? T(1) : T(0);
    case CUDNN_POINTWISE_LOGICAL_AND: return x != T(0) && b != T(0) ? T(1) : T(0);
    case CUDNN_POINTWISE_LOGICAL_OR: return x != T(0) || b != T(0) ? T(1) : T(0);
    case CUDNN_POINTWISE_LOGICAL_NOT: return x == T(0) ? T(1) : T(0);
    case CUDNN_POINTWISE_GEN_INDEX: return index;
    case CUDNN_POINTWISE_BINARY_SELECT: return t != T(0) ? x : b;
    default: return std::numeric_limits<T>::quiet_NaN();
  }
}

template <typename T>
void Pointwise(const PointwiseParams& p, T alpha1, T alpha2, const Bound& x, const Bound& b, const Bound& t,
               const Bound& y) {
  // The iteration shape: y's, or larger along the dimensions where y has 1 and an operand more (MAX and MIN only,
  // graph_build.cc: each y element is then the mode over the operand elements that map to it).
  std::vector<int64_t> shape = y.spec->dims;
  for (const Bound* o : {&x, &b, &t}) {
    if (o->spec == nullptr || o->spec->dims.size() != shape.size()) continue;
    for (size_t i = 0; i < shape.size(); ++i) shape[i] = std::max(shape[i], o->spec->dims[i]);
  }
  const int64_t n = Count(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  const bool reads_x = p.mode != CUDNN_POINTWISE_GEN_INDEX;
  if (shape != y.spec->dims) {
    const std::vector<int64_t>& yd = y.spec->dims;
    const bool max = p.mode == CUDNN_POINTWISE_MAX;
    std::vector<T> acc(static_cast<size_t>(Count(yd)),
                       max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity());
    for (int64_t e = 0; e < n; ++e, Next(shape, idx.data())) {
      T xv = Load<T>(x, Offset(x, idx.data()));
      T bv = b.spec != nullptr ? Load<T>(b, Offset(b, idx.data())) : T(0);
      if (alpha1 != T(1)) xv = alpha1 * xv;
      if (alpha2 != T(1)) bv = alpha2 * bv;
      const T r = Apply<T>(p, xv, bv, T(0), T(0));
      int64_t at = 0;
      for (size_t i = 0; i < yd.size(); ++i) at = at * yd[i] + (yd[i] == 1 ? 0 : idx[i]);
      T& a = acc[static_cast<size_t>(at)];
      a = std::isnan(a) || (max ? a >= r : a <= r) ? a : r;
    }
    std::fill(idx.begin(), idx.end(), 0);
    for (size_t e = 0; e < acc.size(); ++e, Next(yd, idx.data())) Store<T>(y, Offset(y, idx.data()), acc[e]);
    return;
  }
  for (int64_t e = 0; e < n; ++e, Next(shape, idx.data())) {
    T xv = reads_x ? Load<T>(x, Offset(x, idx.data())) : T(0);
    T bv = b.spec != nullptr ? Load<T>(b, Offset(b, idx.data())) : T(0);
    const T tv = t.spec != nullptr ? Load<T>(t, Offset(t, idx.data())) : T(0);
    if (alpha1 != T(1)) xv = alpha1 * xv;
    if (alpha2 != T(1)) bv = alpha2 * bv;
    const T index = p.mode == CUDNN_POINTWISE_GEN_INDEX ? static_cast<T>(idx[static_cast<size_t>(p.axis)]) : T(0);
    Store<T>(y, Offset(y, idx.data()), Apply<T>(p, xv, bv, tv, index));
  }
}

template <typename T>
void Reduce(cudnnReduceTensorOp_t op, const Bound& x, const Bound& y) {
  const std::vector<int64_t>& xd = x.spec->dims;
  const std::vector<int64_t>& yd = y.spec->dims;
  std::vector<int64_t> inner;  // per dimension, the group of input indices one output index reduces
  for (size_t i = 0; i < xd.size(); ++i) inner.push_back(xd[i] / yd[i]);
  const int64_t outs = Count(yd), ins = Count(inner);
  std::vector<int64_t> oi(yd.size(), 0), ii(xd.size(), 0), full(xd.size(), 0);
  for (int64_t o = 0; o < outs; ++o, Next(yd, oi.data())) {
    T acc = op == CUDNN_REDUCE_TENSOR_MUL ? T(1)
            : op == CUDNN_REDUCE_TENSOR_MAX ? -std::numeric_limits<T>::infinity()
            : op == CUDNN_REDUCE_TENSOR_MIN ? std::numeric_limits<T>::infinity() : T(0);
    std::fill(ii.begin(), ii.end(), 0);
    for (int64_t r = 0; r < ins; ++r, Next(inner, ii.data())) {
      for (size_t i = 0; i < xd.size(); ++i) full[i] = oi[i] * inner[i] + ii[i];
      const T v = Load<T>(x, Offset(x, full.data()));
      switch (op) {
        case CUDNN_REDUCE_TENSOR_ADD: acc = acc + v; break;
        case CUDNN_REDUCE_TENSOR_MUL: acc = acc * v; break;
        case CUDNN_REDUCE_TENSOR_MAX: acc = std::isnan(acc) || acc >= v ? acc : v; break;
        case CUDNN_REDUCE_TENSOR_MIN: acc = std::isnan(acc) || acc <= v ? acc : v; break;
        case CUDNN_REDUCE_TENSOR_AMAX: acc = std::isnan(acc) || acc >= std::fabs(v) ? acc : std::fabs(v); break;
        default: break;
      }
    }
    Store<T>(y, Offset(y, oi.data()), acc);
  }
}

// The batch of operand t that C's batch multi-index `cb` reads or writes (the GQA / broadcast mapping:
// C's index c maps to c / (C_i / t_i)), rows and columns 0.
Span OperandBatch(const Bound& t, const TensorSpec& c, const int64_t* cb) {
  const TensorSpec& s = *t.spec;
  if (s.dims.size() < 3) return Span{};  // no batch (graph_build.cc keeps ragged operands to rank >= 3)
  Span span = BatchSpan(t, cb[0] / (c.dims[0] / s.dims[0]));
  for (size_t i = 1; i + 2 < s.dims.size(); ++i) span.rel += cb[i] / (c.dims[i] / s.dims[i]) * s.strides[i];
  return span;
}

}  // namespace

bool PointwiseModeSupported(cudnnPointwiseMode_t mode) {
  const int m = static_cast<int>(mode);
  return (m >= 0 && m <= 23) || (m >= 100 && m <= 107) || (m >= 200 && m <= 207) || (m >= 300 && m <= 305) ||
         (m >= 400 && m <= 402) || m == 501 || m == 601;
}

std::vector<int64_t> RaggedElementOffsets(const Bound& t) {
  const std::vector<int64_t>& shape = t.spec->dims;
  const int64_t n = Count(shape);
  std::vector<int64_t> idx(shape.size(), 0), offsets;
  for (int64_t e = 0; e < n; ++e, Next(shape, idx.data())) {
    const int64_t off = Offset(t, idx.data());
    if (off != kAbsent) offsets.push_back(off);
  }
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  return offsets;
}

void RunPointwise(const PointwiseParams& params, double alpha1, double alpha2, const Bound& x, const Bound& b,
                  const Bound& t, const Bound& y) {
  if (params.math == CUDNN_DATA_DOUBLE) {
    Pointwise<double>(params, alpha1, alpha2, x, b, t, y);
  } else {
    Pointwise<float>(params, static_cast<float>(alpha1), static_cast<float>(alpha2), x, b, t, y);
  }
}

void RunReduction(cudnnReduceTensorOp_t op, cudnnDataType_t compute, const Bound& x, const Bound& y) {
  if (compute == CUDNN_DATA_DOUBLE) {
    Reduce<double>(op, x, y);
  } else {
    Reduce<float>(op, x, y);
  }
}

void RunReshape(const Bound& x, const Bound& y) {
  const std::vector<int64_t>& shape = y.spec->dims;
  const int64_t n = Count(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e, Next(shape, idx.data())) {
    const int64_t off = Offset(y, idx.data());
    Store<double>(y, off, Load<double>(x, off));
  }
}

void RunMatmul(const Bound& a, const Bound& b, const Bound& c, int64_t call, const Bound& m_override,
               const Bound& n_override, const Bound& k_override, const double* padding) {
  const TensorSpec &as = *a.spec, &bs = *b.spec, &cs = *c.spec;
  const size_t r = cs.dims.size();
  const int64_t m = cs.dims[r - 2], n = cs.dims[r - 1], k = as.dims[r - 1];
  const std::vector<int64_t> batch(cs.dims.begin(), cs.dims.end() - 2);
  const int64_t batches = Count(batch);
  const AccumPlan plan(AccumFromEnv(), AccumPrecision::kFp32, k, call);
  std::vector<float> prods(static_cast<size_t>(k));
  std::vector<int64_t> cb(batch.size(), 0), full(r, 0);
  auto limit = [&](const Bound& o, int64_t whole) {
    if (o.spec == nullptr) return whole;
    std::copy(cb.begin(), cb.end(), full.begin());
    const int64_t v = static_cast<int64_t>(Load<double>(o, Offset(o, full.data())));
    return std::max<int64_t>(0, std::min(whole, v));
  };
  for (int64_t bi = 0; bi < batches; ++bi, Next(batch, cb.data())) {
    const Span ab = OperandBatch(a, cs, cb.data()), bb = OperandBatch(b, cs, cb.data());
    const Span cbatch = OperandBatch(c, cs, cb.data());
    const int64_t rows = limit(m_override, m), cols = limit(n_override, n), depth = limit(k_override, k);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t out = At(cbatch, i * cs.strides[r - 2] + j * cs.strides[r - 1]);
        if (i >= rows || j >= cols) {
          if (padding != nullptr) Store<float>(c, out, static_cast<float>(*padding));
          continue;
        }
        for (int64_t p = 0; p < k; ++p) {
          if (p >= depth) {
            prods[static_cast<size_t>(p)] = 0.0f;
            continue;
          }
          const float av = Load<float>(a, At(ab, i * as.strides[r - 2] + p * as.strides[r - 1]));
          const float bv = Load<float>(b, At(bb, p * bs.strides[r - 2] + j * bs.strides[r - 1]));
          prods[static_cast<size_t>(p)] = av * bv;
        }
        Store<float>(c, out, plan.Sum(prods.data()));
      }
    }
  }
}

void RunPagedCacheLoad(const Bound& container, const Bound& page_table, const Bound& seq_len, const Bound& y) {
  const TensorSpec &c = *container.spec, &ys = *y.spec;
  const bool transposed = ys.strides[2] == 1 && ys.strides[3] != 1;
  const int64_t b = ys.dims[0], h = ys.dims[1], seq = transposed ? ys.dims[3] : ys.dims[2];
  const int64_t d = c.dims[3], block = c.dims[2], blocks = c.dims[0];
  for (int64_t i = 0; i < b; ++i) {
    const int64_t len_at[4] = {i, 0, 0, 0};
    const int64_t len = static_cast<int64_t>(Load<double>(seq_len, Offset(seq_len, len_at)));
    for (int64_t j = 0; j < seq; ++j) {
      int64_t page = -1;
      if (j < len) {
        const int64_t at[4] = {i, 0, j / block, 0};
        page = static_cast<int64_t>(Load<double>(page_table, Offset(page_table, at)));
      }
      for (int64_t hh = 0; hh < h; ++hh) {
        for (int64_t t = 0; t < d; ++t) {
          double v = 0;
          if (j < len) {
            const int64_t from[4] = {page, hh, j % block, t};
            v = page >= 0 && page < blocks ? Load<double>(container, Offset(container, from))
                                           : std::numeric_limits<double>::quiet_NaN();
          }
          const int64_t to[4] = {i, hh, transposed ? t : j, transposed ? j : t};
          Store<double>(y, Offset(y, to), v);
        }
      }
    }
  }
}

void RunSdpa(const Bound& q, const Bound& k, const Bound& v, const Bound& scale, const Bound& seq_len_q,
             const Bound& seq_len_kv, const Bound& o, const Bound& stats, int64_t call, const Bound& page_table_k,
             const Bound& page_table_v) {
  const TensorSpec &qs = *q.spec, &ks = *k.spec, &vs = *v.spec, &os = *o.spec;
  const int64_t batch = qs.dims[0], heads = qs.dims[1], sq = qs.dims[2], d = qs.dims[3];
  const bool paged_k = page_table_k.spec != nullptr, paged_v = page_table_v.spec != nullptr;
  // The key extent (graph_kernels.h): n * block size of a paged operand, the third dimension of an unpaged one.
  auto extent = [](const TensorSpec& x, const Bound& table) {
    return table.spec != nullptr ? table.spec->dims[2] * x.dims[2] : x.dims[2];
  };
  const int64_t skv = std::min(extent(ks, page_table_k), extent(vs, page_table_v)), dv = vs.dims[3];
  // Sequence bi's container page of key j (j below its length), -1 when the table names none inside the container.
  std::vector<int64_t> k_pages(static_cast<size_t>(skv)), v_pages(static_cast<size_t>(skv));
  auto pages = [&](const Bound& table, const TensorSpec& container, int64_t bi, int64_t keys, int64_t* out) {
    const int64_t block = container.dims[2];
    for (int64_t j = 0; j < keys; ++j) {
      const int64_t at[4] = {bi, 0, j / block, 0};
      const double page = Load<double>(table, Offset(table, at));
      out[j] = page >= 0 && page < static_cast<double>(container.dims[0]) ? static_cast<int64_t>(page) : -1;
    }
  };
  // The element offset of a paged operand's row j, head hh, column c (-1: outside the container).
  auto paged_at = [](const TensorSpec& x, const int64_t* page, int64_t hh, int64_t j, int64_t c) -> int64_t {
    if (page[j] < 0) return -1;
    return page[j] * x.strides[0] + hh * x.strides[1] + (j % x.dims[2]) * x.strides[2] + c * x.strides[3];
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t k_group = heads / ks.dims[1], v_group = heads / vs.dims[1];
  const float sc = scale.spec != nullptr ? Load<float>(scale, 0) : 1.0f;
  const float lowest = std::numeric_limits<float>::lowest();
  const AccumPlan qk(AccumFromEnv(), AccumPrecision::kFp32, d, call);
  const AccumPlan pv(AccumFromEnv(), AccumPrecision::kFp32, skv, call);
  std::vector<float> prods(static_cast<size_t>(std::max(d, skv))), s(static_cast<size_t>(skv));
  std::vector<float> p(static_cast<size_t>(skv));
  // Batch bi's sequence length from a [b, 1, 1, 1] tensor, clamped to [0, whole]; whole when there is none.
  auto length = [](const Bound& len, int64_t bi, int64_t whole) {
    if (len.spec == nullptr) return whole;
    const int64_t v = static_cast<int64_t>(Load<double>(len, bi * len.spec->strides[0]));
    return std::max<int64_t>(0, std::min(whole, v));
  };
  for (int64_t bi = 0; bi < batch; ++bi) {
    const int64_t rows = length(seq_len_q, bi, sq), keys = length(seq_len_kv, bi, skv);
    const Span qb = BatchSpan(q, bi), ob = BatchSpan(o, bi);
    const Span kb = paged_k ? Span{} : BatchSpan(k, bi), vb = paged_v ? Span{} : BatchSpan(v, bi);
    if (paged_k) pages(page_table_k, ks, bi, keys, k_pages.data());
    if (paged_v) pages(page_table_v, vs, bi, keys, v_pages.data());
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t q0 = h * qs.strides[1], k0 = (h / k_group) * ks.strides[1], v0 = (h / v_group) * vs.strides[1];
      const int64_t o0 = h * os.strides[1];
      for (int64_t i = 0; i < rows; ++i) {
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < skv; ++j) {
          float sj = lowest;  // a masked key, as the composite graph's padding mask writes it
          if (j < keys) {
            for (int64_t c = 0; c < d; ++c) {
              const float qv = Load<float>(q, At(qb, q0 + i * qs.strides[2] + c * qs.strides[3]));
              float kv;
              if (paged_k) {
                const int64_t at = paged_at(ks, k_pages.data(), h / k_group, j, c);
                kv = at >= 0 ? Load<float>(k, at) : nan;
              } else {
                kv = Load<float>(k, At(kb, k0 + j * ks.strides[2] + c * ks.strides[3]));
              }
              prods[static_cast<size_t>(c)] = qv * kv;
            }
            sj = qk.Sum(prods.data()) * sc;
          }
          s[static_cast<size_t>(j)] = sj;
          mx = std::isnan(mx) || mx >= sj ? mx : sj;
        }
        float l = 0.0f;
        for (int64_t j = 0; j < skv; ++j) {
          s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx);
          l = l + s[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < skv; ++j) {
          unsigned char rounded[8];
          StoreFloat(rounded, 0, qs.dtype, s[static_cast<size_t>(j)] / l);
          p[static_cast<size_t>(j)] = LoadFloat(rounded, 0, qs.dtype);
        }
        for (int64_t c = 0; c < dv; ++c) {
          for (int64_t j = 0; j < skv; ++j) {
            float vv = 0.0f;
            if (j < keys && paged_v) {
              const int64_t at = paged_at(vs, v_pages.data(), h / v_group, j, c);
              vv = at >= 0 ? Load<float>(v, at) : nan;
            } else if (j < keys) {
              vv = Load<float>(v, At(vb, v0 + j * vs.strides[2] + c * vs.strides[3]));
            }
            prods[static_cast<size_t>(j)] = j < keys ? p[static_cast<size_t>(j)] * vv : 0.0f;
          }
          Store<float>(o, At(ob, o0 + i * os.strides[2] + c * os.strides[3]), pv.Sum(prods.data()));
        }
        if (stats.spec != nullptr) {
          const TensorSpec& ss = *stats.spec;
          Store<float>(stats, At(BatchSpan(stats, bi), h * ss.strides[1] + i * ss.strides[2]), mx + std::log(l));
        }
      }
    }
  }
}

}  // namespace simgpu::cudnn
