// The reference follows cuDNN's definitions (cudnnConvolutionForward and its backward forms): output element
// (n, k, o) of the forward convolution sums x[n, g·C/G + c', o·S − P + f'·L] · w[k, c', f] over c' < C/G and the
// filter taps f (f' = f for cross-correlation, F − 1 − f for convolution), g = k / (K/G); backward data and
// backward filter sum the same products grouped by the other index. Every product is formed in FP64 (exact for
// inputs of at most 26 significant bits) and summed in FP64, whose own error the bound includes.
//
// The bound is gemm.deterministic's (error_model.h) with k = the products per output element: a convolution is a
// GEMM whose rows and columns are gathered from x and w (implicit GEMM), and the bound holds for every order,
// blocking and split of that sum. It does not hold for FFT and Winograd algorithms, which transform the operands
// first: those ops are not checked, with that reason.
#include "analyzer/conv_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;

// Shapes of the written tensor.
int OutputDims(const ConvProblem& p, int64_t dims[format::kConvMaxDims]) {
  const int rank = p.spatial + 2;
  switch (p.direction) {
    case ConvDirection::kForward:
      dims[0] = p.n, dims[1] = p.k;
      for (int d = 0; d < p.spatial; ++d) dims[2 + d] = p.out[d];
      break;
    case ConvDirection::kBackwardData:
      dims[0] = p.n, dims[1] = p.c;
      for (int d = 0; d < p.spatial; ++d) dims[2 + d] = p.in[d];
      break;
    case ConvDirection::kBackwardFilter:
      dims[0] = p.k, dims[1] = p.c / p.groups;
      for (int d = 0; d < p.spatial; ++d) dims[2 + d] = p.filter[d];
      break;
  }
  return rank;
}

int64_t Offset(const ConvTensor& t, int64_t i0, int64_t i1, const int64_t* sp, int spatial) {
  int64_t off = i0 * t.strides[0] + i1 * t.strides[1];
  for (int d = 0; d < spatial; ++d) off += sp[d] * t.strides[2 + d];
  return off;
}

// Accumulates one product into the element's terms.
// With an error bound e_a on a (a prologue's result; 0 for a captured operand), the magnitudes cover |a| + e_a and
// prop collects e_a·|b|: what a's error moves the exact sum by.
struct Terms {
  double sum = 0, abs_ab = 0, abs_a = 0, abs_b = 0, prop = 0;
  void Add(double a, double b, double e_a = 0) {
    sum += a * b;
    abs_ab += (std::fabs(a) + e_a) * std::fabs(b);
    abs_a += std::fabs(a) + e_a;
    abs_b += std::fabs(b);
    prop += e_a * std::fabs(b);
  }
  void AddB(double a, double b, double e_b) {  // the error on the second operand
    sum += a * b;
    abs_ab += std::fabs(a) * (std::fabs(b) + e_b);
    abs_a += std::fabs(a);
    abs_b += std::fabs(b) + e_b;
    prop += e_b * std::fabs(a);
  }
};

double XErr(const ConvProblem& p, int64_t off) { return p.x_err.data.empty() ? 0 : p.x_err.data[static_cast<size_t>(off)]; }

// Advances a multi-index over `extent` (row-major); false after the last one.
bool Next(int64_t* idx, const int64_t* extent, int n) {
  for (int d = n - 1; d >= 0; --d) {
    if (++idx[d] < extent[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t Tap(const ConvProblem& p, int d, int64_t f) { return p.flip ? p.filter[d] - 1 - f : f; }

// Input position read by output position o through tap f along dimension d, or -1 outside the input.
int64_t InputAt(const ConvProblem& p, int d, int64_t o, int64_t f) {
  const int64_t i = o * p.stride[d] - p.pad[d] + Tap(p, d, f) * p.dilation[d];
  return i >= 0 && i < p.in[d] ? i : -1;
}

// Output position that reads input position i through tap f, or -1 (not on the stride grid, or outside).
int64_t OutputAt(const ConvProblem& p, int d, int64_t i, int64_t f) {
  const int64_t t = i + p.pad[d] - Tap(p, d, f) * p.dilation[d];
  if (t < 0 || t % p.stride[d] != 0 || t / p.stride[d] >= p.out[d]) return -1;
  return t / p.stride[d];
}

// The products of output element (i0, i1, sp...) of the written tensor.
Terms ElementTerms(const ConvProblem& p, int64_t i0, int64_t i1, const int64_t* sp) {
  Terms t;
  const int s = p.spatial;
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  int64_t f[format::kConvMaxSpatial] = {}, pos[format::kConvMaxSpatial];
  switch (p.direction) {
    case ConvDirection::kForward: {  // i0 = n, i1 = k, sp = o
      const int64_t g = i1 / kg;
      for (int64_t c = 0; c < cg; ++c) {
        std::fill(f, f + s, 0);
        do {
          bool inside = true;
          for (int d = 0; d < s; ++d) inside = (pos[d] = InputAt(p, d, sp[d], f[d])) >= 0 && inside;
          if (inside)
            t.Add(p.x.data[Offset(p.x, i0, g * cg + c, pos, s)], p.w.data[Offset(p.w, i1, c, f, s)],
                  XErr(p, Offset(p.x_err, i0, g * cg + c, pos, s)));
        } while (Next(f, p.filter, s));
      }
      break;
    }
    case ConvDirection::kBackwardData: {  // i0 = n, i1 = c, sp = i
      const int64_t g = i1 / cg, cc = i1 % cg;
      for (int64_t k = 0; k < kg; ++k) {
        std::fill(f, f + s, 0);
        do {
          bool inside = true;
          for (int d = 0; d < s; ++d) inside = (pos[d] = OutputAt(p, d, sp[d], f[d])) >= 0 && inside;
          if (inside)
            t.Add(p.y.data[Offset(p.y, i0, g * kg + k, pos, s)], p.w.data[Offset(p.w, g * kg + k, cc, f, s)]);
        } while (Next(f, p.filter, s));
      }
      break;
    }
    case ConvDirection::kBackwardFilter: {  // i0 = k, i1 = c', sp = f
      const int64_t g = i0 / kg;
      int64_t o[format::kConvMaxSpatial];
      for (int64_t n = 0; n < p.n; ++n) {
        std::fill(o, o + s, 0);
        do {
          bool inside = true;
          for (int d = 0; d < s; ++d) inside = (pos[d] = InputAt(p, d, o[d], sp[d])) >= 0 && inside;
          if (inside)
            t.AddB(p.y.data[Offset(p.y, n, i0, o, s)], p.x.data[Offset(p.x, n, g * cg + i1, pos, s)],
                   XErr(p, Offset(p.x_err, n, g * cg + i1, pos, s)));
        } while (Next(o, p.out, s));
      }
      break;
    }
  }
  return t;
}

bool FftOrWinograd(uint16_t api, int32_t algo) {
  switch (static_cast<format::ApiId>(api)) {
    case format::ApiId::kCudnnConvolutionForward: return algo >= 4;        // FFT, FFT_TILING, WINOGRAD(_NONFUSED)
    case format::ApiId::kCudnnConvolutionBackwardData: return algo >= 2;   // FFT, FFT_TILING, WINOGRAD(_NONFUSED)
    case format::ApiId::kCudnnConvolutionBackwardFilter: return algo == 2 || algo >= 4;  // FFT, WINOGRAD, FFT_TILING
    default: return false;
  }
}

}  // namespace

int64_t ConvTermsPerOutput(const ConvProblem& p) {
  int64_t terms = 1;
  switch (p.direction) {
    case ConvDirection::kForward:
    case ConvDirection::kBackwardData:
      terms = (p.direction == ConvDirection::kForward ? p.c : p.k) / p.groups;
      for (int d = 0; d < p.spatial; ++d) terms *= p.filter[d];
      break;
    case ConvDirection::kBackwardFilter:
      terms = p.n;
      for (int d = 0; d < p.spatial; ++d) terms *= p.out[d];
      break;
  }
  return terms;
}

int64_t StridedSpan(int rank, const int64_t* dims, const int64_t* strides) {
  int64_t span = 1, elements = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t reach;
    if (dims[i] < 1 || strides[i] < 0 || __builtin_mul_overflow(dims[i] - 1, strides[i], &reach) ||
        __builtin_add_overflow(span, reach, &span) || __builtin_mul_overflow(elements, dims[i], &elements))
      return 0;
  }
  return elements <= span ? span : 0;
}

int64_t ConvOutputElements(const ConvProblem& p) {
  int64_t dims[format::kConvMaxDims];
  const int rank = OutputDims(p, dims);
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

std::vector<ConvElement> ConvReference(const ConvProblem& p, const GemmPrecision& precision) {
  std::vector<ConvElement> out;
  out.reserve(static_cast<size_t>(ConvOutputElements(p)));
  int64_t dims[format::kConvMaxDims];
  const int rank = OutputDims(p, dims);
  const GemmBound bound(precision, ConvTermsPerOutput(p), p.alpha, p.beta);
  int64_t idx[format::kConvMaxDims] = {};
  do {
    const Terms t = p.alpha != 0 ? ElementTerms(p, idx[0], idx[1], idx + 2) : Terms{};
    GemmElementTerms e;
    e.abs_ab = t.abs_ab;
    e.abs_row_a = t.abs_a;
    e.abs_col_b = t.abs_b;
    e.ref = p.alpha * t.sum;
    if (p.beta != 0) {
      const double c0 = p.out_before.data[Offset(p.out_before, idx[0], idx[1], idx + 2, p.spatial)];
      e.ref += p.beta * c0;
      e.abs_c0 = std::fabs(c0);
    }
    // The exact sum over x̂ differs from the one over x by at most Σ e_x·|other|, once more for the FP64
    // evaluation of that sum (its own error is far below the slack kept here: 2^-40 relative).
    out.push_back(ConvElement{e.ref, bound.Bound(e) + std::fabs(p.alpha) * t.prop * (1 + 0x1p-40),
                              bound.OverflowPossible(e)});
  } while (Next(idx, dims, rank));
  return out;
}

ElementStats ReplayConv(const ConvProblem& p, const GemmPrecision& precision) {
  ElementStats stats;
  const std::vector<ConvElement> ref = ConvReference(p, precision);
  int64_t dims[format::kConvMaxDims];
  const int rank = OutputDims(p, dims);
  int64_t idx[format::kConvMaxDims] = {};
  uint64_t index = 0;
  do {
    const double got = p.out_after.data[Offset(p.out_after, idx[0], idx[1], idx + 2, p.spatial)];
    const ConvElement& e = ref[index];
    stats.Add(index++, got, e.ref, e.bound, e.overflow);
  } while (Next(idx, dims, rank));
  return stats;
}

absl::StatusOr<GemmPrecision> ResolveConvPrecision(int32_t data_type, int32_t compute_type, int32_t math_type,
                                                   int32_t out_type) {
  // cudnnDataType_t: 0 FLOAT, 1 DOUBLE, 2 HALF, 9 BFLOAT16. cudnnMathType_t: 2 ALLOW_CONVERSION, 3 FMA.
  // Mapped onto the cuBLAS compute types of the same arithmetic (error_model.cc).
  auto dtype = [](int32_t t) {
    return t == 0 ? DType::kF32 : t == 1 ? DType::kF64 : t == 2 ? DType::kF16 : t == 9 ? DType::kBF16
                                                                                        : DType::kInvalid;
  };
  const DType d = dtype(data_type), out = dtype(out_type);
  constexpr uint16_t kGemmEx = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);
  int cublas_compute = -1;
  if (compute_type == 0 && d == DType::kF32) {
    cublas_compute = math_type == 3 ? 68 : math_type == 2 ? 74 : 77;  // exact FP32, FP16-or-TF32, TF32 inputs
  } else if (compute_type == 0 && (d == DType::kF16 || d == DType::kBF16)) {
    cublas_compute = 68;
  } else if (compute_type == 2 && d == DType::kF16) {
    cublas_compute = 64;
  } else if (compute_type == 1 && d == DType::kF64) {
    cublas_compute = 70;
  }
  if (cublas_compute < 0 || out == DType::kInvalid)
    return absl::UnimplementedError(
        absl::StrCat("cuDNN data type ", data_type, " with compute type ", compute_type, " has no error model"));
  return ResolveGemmPrecision(kGemmEx, cublas_compute, 0, d, d, out);
}

namespace {

// Decodes a captured span tensor; false when its shape or type is not what the record says.
bool Decode(const Tensor* t, int32_t cudnn_type, int rank, const int64_t* dims, const int64_t* strides,
            ConvTensor* out) {
  const DType type = DTypeFromCudnn(cudnn_type);  // the convolutions with a model: floating point, not FP8
  const bool modeled = type == DType::kF32 || type == DType::kF64 || type == DType::kF16 || type == DType::kBF16;
  const DType want = modeled ? type : DType::kInvalid;
  const int64_t span = StridedSpan(rank, dims, strides);
  if (t == nullptr || span == 0 || t->meta.rows != span || t->meta.cols != 1 || t->meta.batch != 1 ||
      t->meta.dtype != static_cast<uint8_t>(want))
    return false;
  out->data = DecodeAll(want, t->data);
  std::copy(strides, strides + rank, out->strides);
  return true;
}

ConvDirection DirectionOf(uint16_t api) {
  switch (static_cast<format::ApiId>(api)) {
    case format::ApiId::kCudnnConvolutionBackwardData: return ConvDirection::kBackwardData;
    case format::ApiId::kCudnnConvolutionBackwardFilter: return ConvDirection::kBackwardFilter;
    default: return ConvDirection::kForward;
  }
}

// The problem's geometry from the record; false when it is not a convolution cuDNN would run. The record is
// untrusted, and the replay's index arithmetic is int64: each of x, w and y must be a tensor StridedSpan accepts
// (dims >= 1, no overflow, no overlap), which bounds every product of its dims (the output elements, the products
// per output: ConvTermsPerOutput); the output size formula is computed with checked arithmetic, and with it every
// input position the replay forms (o·S − P + f·L stays within [−P, in + P)).
bool Geometry(const format::ConvRecord& r, ConvProblem* p) {
  const int rank = r.nb_dims;
  if (StridedSpan(rank, r.x_dims, r.x_strides) == 0 || StridedSpan(rank, r.w_dims, r.w_strides) == 0 ||
      StridedSpan(rank, r.y_dims, r.y_strides) == 0)
    return false;
  p->direction = DirectionOf(r.api);
  p->spatial = rank - 2;
  p->n = r.x_dims[0];
  p->c = r.x_dims[1];
  p->k = r.w_dims[0];
  p->groups = r.groups;
  p->flip = r.mode == 0;
  p->alpha = r.alpha;
  p->beta = r.beta;
  int64_t c = 0;
  if (p->groups < 1 || __builtin_mul_overflow(r.w_dims[1], p->groups, &c) || p->c != c || p->k % p->groups != 0 ||
      r.y_dims[0] != p->n || r.y_dims[1] != p->k)
    return false;
  for (int d = 0; d < p->spatial; ++d) {
    p->in[d] = r.x_dims[2 + d];
    p->filter[d] = r.w_dims[2 + d];
    p->out[d] = r.y_dims[2 + d];
    p->pad[d] = r.pad[d];
    p->stride[d] = r.stride[d];
    p->dilation[d] = r.dilation[d];
    if (p->stride[d] < 1 || p->dilation[d] < 1 || p->pad[d] < 0) return false;
    // out = (in + 2P − (F − 1)·L − 1) / S + 1, with a non-negative numerator (cuDNN's output dimension formula).
    int64_t reach = 0, extent = 0;
    if (__builtin_mul_overflow(p->filter[d] - 1, p->dilation[d], &reach) ||
        __builtin_add_overflow(p->in[d] - 1, 2 * p->pad[d], &extent) || __builtin_sub_overflow(extent, reach, &extent) ||
        extent < 0 || extent / p->stride[d] + 1 != p->out[d])
      return false;
  }
  return true;
}

Finding ConvFinding(int rank, const Op& op, const ConvProblem& p, const ElementStats& st, const std::string& detail) {
  Finding f;
  f.check = "conv.replay";
  f.rank = rank;
  f.seq = op.seq;
  f.api = op.api_name();
  f.model = GetErrorModel(ErrorModelId::kConvDeterministic).name;
  f.max_abs_err = st.max_abs_err;
  f.max_rel_err = st.max_rel_err;
  f.threshold = st.worst_bound;
  f.ratio = st.worst_ratio;
  f.elements = st.elements;
  f.violations = st.violations;
  f.has_element = true;
  f.first.index = st.first_index;
  f.first.got = st.first_got;
  f.first.expected = st.first_ref;
  f.first.threshold = st.first_bound;
  int64_t dims[format::kConvMaxDims], at[format::kConvMaxDims];
  const int r = OutputDims(p, dims);
  uint64_t rest = st.first_index;
  std::string where;
  for (int i = r - 1; i >= 0; --i) at[i] = static_cast<int64_t>(rest % static_cast<uint64_t>(dims[i])), rest /= dims[i];
  for (int i = 0; i < r; ++i) absl::StrAppend(&where, i == 0 ? "" : ", ", at[i]);
  const char* what = p.direction == ConvDirection::kForward ? "y" : p.direction == ConvDirection::kBackwardData ? "dx" : "dw";
  f.message = absl::StrCat(st.violations, " of ", st.elements, " ", what, " elements exceed the bound; first at element ",
                           st.first_index, " (", where, "): got ", FormatNumber(st.first_got), ", FP64 replay ",
                           FormatNumber(st.first_ref), ", bound ", FormatNumber(st.first_bound));
  f.detail = detail;
  return f;
}

}  // namespace

void CheckConvOp(int rank, const Op& op, CheckReport* report, uint64_t max_work) {
  const format::ConvRecord& r = op.conv;
  if (r.status != 0) return report->AddNotChecked("call failed");
  if ((r.flags & format::kConvDescUnreadable) || r.nb_dims < 3 || r.nb_dims > format::kConvMaxDims)
    return report->AddNotChecked("cuDNN descriptor unreadable");
  if (r.flags & format::kConvScalarsUnknown) return report->AddNotChecked("alpha/beta not read");
  if (FftOrWinograd(r.api, r.algo)) return report->AddNotChecked("cuDNN FFT or Winograd algorithm (no error model)");
  if (!op.tensor_problem.empty()) return report->AddNotChecked("tensor unusable");
  ConvProblem p;
  if (!Geometry(r, &p)) return report->AddNotChecked("cuDNN convolution geometry inconsistent");
  if (r.x_type != r.w_type || r.x_type != r.y_type) return report->AddNotChecked("cuDNN mixed tensor types");
  absl::StatusOr<GemmPrecision> precision = ResolveConvPrecision(r.x_type, r.compute_type, r.math_type, r.y_type);
  if (!precision.ok()) {
    report->Warn(absl::StrCat("not checked: ", precision.status().message()));
    return report->AddNotChecked("no error model");
  }
  const uint64_t outputs = static_cast<uint64_t>(ConvOutputElements(p));
  const uint64_t terms = static_cast<uint64_t>(ConvTermsPerOutput(p));
  const uint64_t work = terms != 0 && outputs > UINT64_MAX / terms ? UINT64_MAX : outputs * terms;
  if (work > max_work) {
    report->Warn(absl::StrCat("rank ", rank, " seq ", op.seq, " ", op.api_name(), ": replay costs ", FormatCount(work),
                              " multiply-adds, over the budget of ", FormatCount(max_work), ": not checked"));
    return report->AddNotChecked("replay over the work budget");
  }
  const int n = r.nb_dims;
  const bool fwd = p.direction == ConvDirection::kForward, bwd_data = p.direction == ConvDirection::kBackwardData;
  const int64_t* out_dims = fwd ? r.y_dims : bwd_data ? r.x_dims : r.w_dims;
  const int64_t* out_strides = fwd ? r.y_strides : bwd_data ? r.x_strides : r.w_strides;
  const Tensor* x = op.tensor(TensorSlot::kConvX);
  const Tensor* w = op.tensor(TensorSlot::kConvW);
  const Tensor* y = op.tensor(TensorSlot::kConvY);
  const Tensor* before = op.tensor(TensorSlot::kCIn);
  const Tensor* after = op.tensor(TensorSlot::kCOut);
  const bool need_x = !bwd_data, need_w = p.direction != ConvDirection::kBackwardFilter, need_y = !fwd;
  if (after == nullptr || (p.alpha != 0 && ((need_x && x == nullptr) || (need_w && w == nullptr) ||
                                            (need_y && y == nullptr))) ||
      (p.beta != 0 && before == nullptr))
    return report->AddNotChecked(op.MissingTensorsReason());
  bool ok = Decode(after, r.y_type, n, out_dims, out_strides, &p.out_after);
  if (p.alpha != 0) {
    if (need_x) ok = ok && Decode(x, r.x_type, n, r.x_dims, r.x_strides, &p.x);
    if (need_w) ok = ok && Decode(w, r.w_type, n, r.w_dims, r.w_strides, &p.w);
    if (need_y) ok = ok && Decode(y, r.y_type, n, r.y_dims, r.y_strides, &p.y);
  }
  if (p.beta != 0) ok = ok && Decode(before, r.y_type, n, out_dims, out_strides, &p.out_before);
  if (!ok) {
    report->Warn(absl::StrCat("rank ", rank, " seq ", op.seq, " ", op.api_name(),
                              ": captured tensor shapes or types do not match the call's descriptors"));
    return report->AddNotChecked("shape mismatch");
  }
  const ElementStats st = ReplayConv(p, *precision);
  report->AddChecked("conv", OpName{rank, op.seq, op.api_name()}, st, st.violations == 0);
  if (st.violations == 0) return;
  report->AddFinding(ConvFinding(rank, op, p, st,
                                 absl::StrCat(precision->description, "; ", ConvTermsPerOutput(p),
                                              " products per output; groups=", p.groups, " alpha=",
                                              FormatNumber(p.alpha), " beta=", FormatNumber(p.beta))));
}

}  // namespace ttrace::analyzer
