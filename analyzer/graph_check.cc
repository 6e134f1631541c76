// sdpa.forward (docs/error-models.md derives it). Per query row, with n visible keys, FP32 unit roundoff u:
//   scores   |Ŝ_j − S_j| ≤ e_j = θ_{d+2}(u)·|scale|·Σ|q||k_j|      (FP32 dot product, then the scale product)
//   softmax  of scores within E = max_j e_j: P̂*_j / P_j ∈ [e^{−2E}, e^{2E}]; its evaluation (max subtraction,
//            exp, sum, division, online rescaling: at most 7n + 8 roundings, exp within 4u) and P's rounding to
//            Q's type (u_in) give P̂_j = P_j(1 + δ_j), |δ_j| ≤ ρ = e^{2E}(1 + θ_{7n+8}(u))(1 + u_in) − 1
//   output   |Ô − O| ≤ (1 + u_out)(ρA + θ_{n+1}(u)(1 + ρ)A + (1 + θ_{n+1}(u))η_in·Σ_j|V_j|) + u_out|O| + η_out,
//            A = Σ_j P_j|V_j|, η_in: P's rounding below Q's type's normal range (a sink token can make every P_j
//            that small; without one the largest P_j is at least 1/n and η_in's term is negligible)
//   sink     an exact extra logit of the maximum and the sum with no value row: one more of the n terms in θ
//   stats    |Ŝtats − Stats| ≤ E + 2θ_{7n+8}(u) + 2u|log l| + u(|Stats| + E) + η   (LSE is 1-Lipschitz in the sup norm)
//   max      |M̂ax − Max| ≤ E;  sum_exp |Ŝum − l| ≤ l(e^{2E}(1 + θ_{7n+8}(u)) − 1)
//   k additive terms B^t (bias, ALiBi), each within ε^t of its value:
//            e_j = (1 + u)^k (θ_{d+2}(u)|scale|Σ|q||k_j| + Σ ε^t_j) + γ_k(|S⁰_j| + Σ|B^t_j|) + kη  (k = 1, ε = 0: u|S_j|)
// The FP64 reference's own error is below 2^−40 relative and covered by the factor kEval.
#include "analyzer/graph_check.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "analyzer/conv_check.h"
#include "analyzer/error_model.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::GraphOp;
using format::GraphTensor;

constexpr double kU32 = 0x1p-24, kEta32 = 0x1p-126;
constexpr double kEval = 1 + 0x1p-40;

// cudnnBackendDescriptorType_t of the operations named here.
enum : int32_t {
  kConvFwd = 10, kConvBwdFilter = 11, kConvBwdData = 12, kPointwise = 13, kMatmul = 19, kReduction = 22,
  kSdpaFwd = 41,
};

const char* OpTypeName(int32_t type) {
  switch (type) {
    case kConvFwd: return "conv_fprop";
    case kConvBwdFilter: return "conv_wgrad";
    case kConvBwdData: return "conv_dgrad";
    case kPointwise: return "pointwise";
    case kMatmul: return "matmul";
    case kReduction: return "reduction";
    case kSdpaFwd: return "sdpa_fwd";
    case 43: return "sdpa_bwd";
    case 33: return "rng";
    case 31: return "reshape";
    case 35: return "paged_cache_load";
    case 29: return "norm_fwd";
    case 30: return "norm_bwd";
    default: return nullptr;
  }
}

// The graph tensor types the checks read (sequence lengths and offsets are integers); others are not decoded.
DType DTypeOf(int32_t cudnn_type) {
  const DType d = DTypeFromCudnn(cudnn_type);
  switch (d) {
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16:
    case DType::kI32:
    case DType::kI64:
      return d;
    default:
      return DType::kInvalid;
  }
}

}  // namespace

bool Dense(const Op& op, bool after, int32_t index, std::vector<double>* out, const GraphTensor* as,
           const Tensor* data) {
  if (index < 0 || static_cast<size_t>(index) >= op.graph_tensors.size()) return false;
  const GraphTensor& t = as != nullptr ? *as : op.graph_tensors[static_cast<size_t>(index)];
  const auto& map = after ? op.graph_out : op.graph_in;
  auto it = map.find(static_cast<uint32_t>(index));
  const DType dt = DTypeOf(t.data_type);
  if ((data == nullptr && it == map.end()) || dt == DType::kInvalid || t.nb_dims < 1 || t.nb_dims > format::kGraphMaxDims)
    return false;
  // StridedSpan refuses overflowing and overlapping layouts, so the dense copy never holds more elements than
  // were captured (the load's memory budget bounds those).
  const int64_t span = StridedSpan(t.nb_dims, t.dims, t.strides);
  const Tensor& c = data != nullptr ? *data : *it->second;
  if (span == 0 || c.meta.rows != span || c.meta.cols != 1 || c.meta.batch != 1 ||
      c.meta.dtype != static_cast<uint8_t>(dt))
    return false;
  const std::vector<double> flat = DecodeAll(dt, c.data);
  out->clear();
  int64_t elements = 1;
  for (int i = 0; i < t.nb_dims; ++i) elements *= t.dims[i];  // <= span: StridedSpan checked it
  out->reserve(static_cast<size_t>(elements));
  int64_t idx[format::kGraphMaxDims] = {};
  const int n = t.nb_dims;
  while (true) {
    int64_t off = 0;
    for (int i = 0; i < n; ++i) off += idx[i] * t.strides[i];
    out->push_back(flat[static_cast<size_t>(off)]);
    int d = n - 1;
    while (d >= 0 && ++idx[d] == t.dims[d]) idx[d--] = 0;
    if (d < 0) break;
  }
  return true;
}

namespace {

// ---- one convolution ----------------------------------------------------------------------------------------

}  // namespace

int64_t BroadcastOffset(const GraphTensor& t, const GraphTensor& y, const int64_t* idx) {
  int64_t off = 0;
  for (int d = 0; d < t.nb_dims; ++d) off = off * t.dims[d] + (t.dims[d] == y.dims[d] ? idx[d] : 0);
  return off;
}

Finding GraphElementFinding(int rank, const Op& op, const char* check, ErrorModelId model, const char* what,
                       const ElementStats& st, const std::string& detail) {
  Finding f;
  f.check = check;
  f.rank = rank, f.seq = op.seq, f.api = op.api_name();
  f.model = GetErrorModel(model).name;
  f.max_abs_err = st.max_abs_err, f.max_rel_err = st.max_rel_err, f.threshold = st.worst_bound, f.ratio = st.worst_ratio;
  f.elements = st.elements, f.violations = st.violations, f.has_element = true;
  f.first.index = st.first_index, f.first.got = st.first_got, f.first.expected = st.first_ref;
  f.first.threshold = st.first_bound;
  f.message = absl::StrCat(st.violations, " of ", st.elements, " ", what, " exceed the bound; first at element ",
                           st.first_index, ": got ", FormatNumber(st.first_got), ", FP64 replay ",
                           FormatNumber(st.first_ref), ", bound ", FormatNumber(st.first_bound));
  f.detail = detail;
  return f;
}

namespace {

// Fills a ConvProblem tensor straight from the captured span (conv_check indexes by strides); false when the
// capture is not the span the tensor's dims and strides occupy (the replay would index outside it).
bool Span(const Op& op, bool after, int32_t index, ConvTensor* out) {
  if (index < 0 || static_cast<size_t>(index) >= op.graph_tensors.size()) return false;
  const auto& map = after ? op.graph_out : op.graph_in;
  auto it = map.find(static_cast<uint32_t>(index));
  if (it == map.end()) return false;
  const GraphTensor& t = op.graph_tensors[static_cast<size_t>(index)];
  const Tensor& c = *it->second;
  const int64_t span = StridedSpan(t.nb_dims, t.dims, t.strides);
  if (span == 0 || t.nb_dims > format::kConvMaxDims || c.meta.rows != span || c.meta.cols != 1 ||
      c.meta.batch != 1 || DTypeOf(t.data_type) != static_cast<DType>(c.meta.dtype))
    return false;
  out->data = DecodeAll(static_cast<DType>(c.meta.dtype), c.data);
  std::copy(t.strides, t.strides + format::kConvMaxDims, out->strides);
  return true;
}

void CheckConvGraph(int rank, const Op& op, CheckReport* report, uint64_t max_work) {
  const GraphOp& g = op.graph_ops[0];
  if (g.operands[0] < 0 || g.operands[1] < 0 || g.operands[2] < 0)
    return report->AddNotChecked("cuDNN convolution graph operand missing");
  const GraphTensor& x = op.graph_tensors[static_cast<size_t>(g.operands[0])];
  const GraphTensor& w = op.graph_tensors[static_cast<size_t>(g.operands[1])];
  const GraphTensor& y = op.graph_tensors[static_cast<size_t>(g.operands[2])];
  ConvProblem p;
  if (x.data_type != w.data_type || x.data_type != y.data_type || !ConvGraphGeometry(g, x, w, y, &p))
    return report->AddNotChecked("cuDNN convolution graph geometry unsupported");
  absl::StatusOr<GemmPrecision> precision = ResolveConvPrecision(x.data_type, g.compute_type, -1, y.data_type);
  if (!precision.ok()) return report->AddNotChecked("no error model");
  const uint64_t work = static_cast<uint64_t>(ConvOutputElements(p)) * static_cast<uint64_t>(ConvTermsPerOutput(p));
  if (work > max_work) return report->AddNotChecked("replay over the work budget");
  const int out = p.direction == ConvDirection::kForward ? 2 : p.direction == ConvDirection::kBackwardData ? 0 : 1;
  ConvTensor* inputs[3] = {&p.x, &p.w, &p.y};
  for (int role = 0; role < 3; ++role)
    if (role != out && !Span(op, false, g.operands[role], inputs[role])) return report->AddNotChecked(op.MissingTensorsReason());
  if (!Span(op, true, g.operands[out], &p.out_after) || (p.beta != 0 && !Span(op, false, g.operands[out], &p.out_before)))
    return report->AddNotChecked(op.MissingTensorsReason());
  const ElementStats st = ReplayConv(p, *precision);
  report->AddChecked("conv", OpName{rank, op.seq, op.api_name()}, st, st.violations == 0);
  if (st.violations == 0) return;
  const std::string what = absl::StrCat("elements of the ", OpTypeName(g.type), " output");
  report->AddFinding(GraphElementFinding(rank, op, "conv.replay", ErrorModelId::kConvDeterministic, what.c_str(), st,
                                    precision->description));
}

}  // namespace

bool ConvGraphGeometry(const GraphOp& g, const GraphTensor& x, const GraphTensor& w, const GraphTensor& y,
                       ConvProblem* out) {
  ConvProblem& p = *out;
  p.direction = g.type == kConvFwd ? ConvDirection::kForward
                : g.type == kConvBwdData ? ConvDirection::kBackwardData : ConvDirection::kBackwardFilter;
  p.spatial = g.spatial;
  bool ok = p.spatial >= 1 && p.spatial <= 3 && x.nb_dims == p.spatial + 2 && w.nb_dims == x.nb_dims &&
            y.nb_dims == x.nb_dims;
  if (!ok) return false;
  p.n = x.dims[0], p.c = x.dims[1], p.k = w.dims[0];
  p.groups = w.dims[1] > 0 ? p.c / w.dims[1] : 0;
  p.flip = g.mode == 0;
  p.alpha = g.alpha, p.beta = g.beta;
  for (int d = 0; d < p.spatial; ++d) {
    p.in[d] = x.dims[2 + d], p.filter[d] = w.dims[2 + d], p.out[d] = y.dims[2 + d];
    p.pad[d] = g.pre_pad[d], p.stride[d] = g.stride[d], p.dilation[d] = g.dilation[d];
    ok = ok && g.pre_pad[d] == g.post_pad[d] && p.stride[d] >= 1 && p.dilation[d] >= 1 &&
         (p.in[d] + 2 * p.pad[d] - (p.filter[d] - 1) * p.dilation[d] - 1) / p.stride[d] + 1 == p.out[d];
  }
  return ok && p.groups >= 1 && p.c == w.dims[1] * p.groups && p.k % p.groups == 0 && y.dims[0] == p.n &&
         y.dims[1] == p.k;
}

ReluClips ReluClipsOf(const GraphOp& g) {
  ReluClips c;
  if (g.params_set & format::kParamReluLowerClip) c.lower = g.relu_lower_clip;
  if (g.params_set & format::kParamReluUpperClip) c.upper = g.relu_upper_clip;
  if (g.params_set & format::kParamReluLowerClipSlope) c.slope = g.relu_lower_clip_slope;
  return c;
}

bool PointwiseValue(const GraphOp& g, double x, double b, double t, double index, double* r) {
  switch (g.mode) {
    case 0: *r = x + b; break;
    case 1: *r = x * b; break;
    case 2: *r = std::min(x, b); break;
    case 3: *r = std::max(x, b); break;
    case 6: *r = x / b; break;
    case 9: *r = x - b; break;
    case 13: *r = std::exp(x); break;
    case 15: *r = std::log(x); break;
    case 16: *r = -x; break;
    case 21: *r = x; break;
    case 22: *r = 1 / x; break;
    case 100: {  // RELU_FWD
      const ReluClips c = ReluClipsOf(g);
      *r = x <= c.lower ? c.lower + c.slope * (x - c.lower) : x >= c.upper ? c.upper : x;
      break;
    }
    case 200: {  // RELU_BWD: x the forward input, b = dy
      const ReluClips c = ReluClipsOf(g);
      *r = x <= c.lower ? c.slope * b : x >= c.upper ? 0 : b;
      break;
    }
    case 300: *r = x == b; break;
    case 301: *r = x != b; break;
    case 302: *r = x > b; break;
    case 303: *r = x >= b; break;
    case 304: *r = x < b; break;
    case 305: *r = x <= b; break;
    case 400: *r = x != 0 && b != 0; break;
    case 401: *r = x != 0 || b != 0; break;
    case 402: *r = x == 0; break;
    case 501: *r = index; break;  // GEN_INDEX
    case 601: *r = t != 0 ? x : b; break;  // BINARY_SELECT
    default: return false;
  }
  return true;
}

std::string GraphOpNames(const std::vector<GraphOp>& ops) {
  std::string s;
  for (const GraphOp& g : ops) {
    const char* name = OpTypeName(g.type);
    absl::StrAppend(&s, s.empty() ? "" : ", ", name != nullptr ? name : absl::StrCat("operation ", g.type));
  }
  return s;
}

SdpaOutputs ReplaySdpa(const SdpaProblem& p) {
  SdpaOutputs out;
  std::vector<SdpaRow> rows(static_cast<size_t>(p.b * p.h * p.s_q));
  ReplaySdpaRows(p, 0, p.b * p.h * p.s_q, &out, rows.data());
  CompareSdpaRows(p, rows, &out);
  return out;
}

void ReplaySdpaRows(const SdpaProblem& p, int64_t row_begin, int64_t row_end, SdpaOutputs* outputs, SdpaRow* rows) {
  SdpaOutputs& out = *outputs;
  const int64_t group = p.h / p.h_k;
  std::vector<double> s(static_cast<size_t>(p.s_kv)), e(static_cast<size_t>(p.s_kv));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t bi = r / (p.h * p.s_q), hi = r / p.s_q % p.h, i = r % p.s_q;
    const int64_t kh = hi / group;
    const size_t row = static_cast<size_t>(r), local = static_cast<size_t>(r - p.row0);
    if (!p.unwritten.empty() && p.unwritten[row]) continue;
    // The row's mask: one s_q x s_kv mask shared by every head, or one per row.
    const size_t mask_row = (p.mask.size() == static_cast<size_t>(p.s_q * p.s_kv) ? static_cast<size_t>(i) : local) *
                            static_cast<size_t>(p.s_kv);
    const double* q = &p.q[static_cast<size_t>(((bi * p.h + hi) * p.s_q + i) * p.d)];
    double m = -HUGE_VAL, E = 0;
    int64_t n = 0;
    for (int64_t j = 0; j < p.s_kv; ++j) {
      if (!p.mask.empty() && !p.mask[mask_row + static_cast<size_t>(j)]) continue;
      const double* k = &p.k[static_cast<size_t>(((bi * p.h_k + kh) * p.s_kv + j) * p.d)];
      double dot = 0, mag = 0;
      for (int64_t t = 0; t < p.d; ++t) dot += q[t] * k[t], mag += std::fabs(q[t] * k[t]);
      const double e_s = Theta(kU32, static_cast<double>(p.d + 2)) * std::fabs(p.scale) * mag;
      if (p.bias.empty()) {
        s[static_cast<size_t>(j)] = p.scale * dot;
        E = std::max(E, e_s);
      } else {  // k more FP32 roundings: the additive terms, each with its own error
        const size_t at = local * static_cast<size_t>(p.s_kv) + static_cast<size_t>(j);
        s[static_cast<size_t>(j)] = p.scale * dot + p.bias[at];
        const double k = p.bias_adds, e_b = p.bias_err.empty() ? 0 : p.bias_err[at];
        const double rounding = p.bias_adds == 1 ? kU32 * std::fabs(s[static_cast<size_t>(j)])
                                                 : Theta(kU32, k) * (std::fabs(p.scale * dot) + p.bias_abs[at]);
        E = std::max(E, (e_s + e_b) * std::pow(1 + kU32, k) + rounding + k * kEta32);
      }
      m = std::max(m, s[static_cast<size_t>(j)]);
      ++n;
    }
    // A sink: one more term of the maximum and the sum, exact (no score error), with no value row.
    const bool sink = !p.sink.empty();
    if (sink) m = std::max(m, p.sink[row]);
    double l = 0;
    for (int64_t j = 0; j < p.s_kv; ++j) {
      const bool visible = p.mask.empty() || p.mask[mask_row + static_cast<size_t>(j)];
      e[static_cast<size_t>(j)] = visible ? std::exp(s[static_cast<size_t>(j)] - m) : 0;
      l += e[static_cast<size_t>(j)];
    }
    if (sink) l += std::exp(p.sink[row] - m);
    const int64_t terms = n + (sink ? 1 : 0);
    const double theta = Theta(kU32, 7.0 * static_cast<double>(terms) + 8);
    const double rho = std::exp(2 * E) * (1 + theta) * (1 + p.u_in) * (1 + Theta(kU32, p.drop_roundings)) - 1;
    const double theta_o = Theta(kU32, static_cast<double>(n) + 1);
    for (int64_t c = 0; c < p.d_v; ++c) {
      double ref = 0, a = 0, av = 0;
      for (int64_t j = 0; j < p.s_kv; ++j) {
        const double pj = (terms > 0 ? e[static_cast<size_t>(j)] / l : 0) *
                          (p.drop.empty() ? 1 : p.drop[local * static_cast<size_t>(p.s_kv) + static_cast<size_t>(j)]);
        const double vj = p.v[static_cast<size_t>(((bi * p.h_k + kh) * p.s_kv + j) * p.d_v + c)];
        ref += pj * vj;
        a += std::fabs(pj) * std::fabs(vj);
        if (e[static_cast<size_t>(j)] != 0) av += std::fabs(vj);
      }
      const double bound = kEval * ((1 + p.u_out) * (rho * a + theta_o * (1 + rho) * a + (1 + theta_o) * p.eta_in * av) +
                                    p.u_out * std::fabs(ref) + p.eta_out);
      const size_t at = row * static_cast<size_t>(p.d_v) + static_cast<size_t>(c);
      out.o.Add(at, p.o[at], ref, bound, false);
    }
    rows[r - row_begin] = SdpaRow{m, l, E, terms};
  }
}

void CompareSdpaRows(const SdpaProblem& p, const std::vector<SdpaRow>& rows, SdpaOutputs* outputs) {
  SdpaOutputs& out = *outputs;
  for (size_t row = 0; row < rows.size(); ++row) {
    const double m = rows[row].m, l = rows[row].l, E = rows[row].E;
    const int64_t terms = rows[row].terms;
    if (terms == 0) continue;  // unwritten, or no visible key (and no sink)
    const double theta = Theta(kU32, 7.0 * static_cast<double>(terms) + 8);
    // Max: the largest computed logit is within E of the largest logit. Sum_exp: relative to the device's own
    // maximum, each term within e^{2E} of the reference's, evaluated as the softmax's sum is (θ_{7n+8}).
    if (!p.max.empty()) out.max.Add(row, p.max[row], m, kEval * E, false);
    if (!p.sum_exp.empty()) out.sum_exp.Add(row, p.sum_exp[row], l, kEval * l * (std::exp(2 * E) * (1 + theta) - 1), false);
    if (!p.stats.empty()) {
      const double ref = m + std::log(l);
      const double bound =
          kEval * (E + 2 * theta + 2 * kU32 * std::fabs(std::log(l)) + kU32 * (std::fabs(ref) + E) + kEta32);
      out.stats.Add(row, p.stats[row], ref, bound, false);
    }
  }
}

// Shapes, types and data of an attention whose operands are graph tensors q, k, v, o, stats (stats may be -1);
// an empty string when it was filled, else the not-checked reason.
std::string FillSdpa(const Op& op, int32_t q, int32_t k, int32_t v, int32_t o, int32_t stats, SdpaProblem* p,
                     const GraphTensor* k_as, const Tensor* k_data, const Tensor* v_data, const GraphTensor* v_as) {
  const auto& T = op.graph_tensors;
  for (int32_t i : {q, k, v, o})
    if (i < 0 || T[static_cast<size_t>(i)].nb_dims != 4) return "cuDNN attention operands are not [b, h, s, d]";
  const GraphTensor &tq = T[static_cast<size_t>(q)], &tk = k_as != nullptr ? *k_as : T[static_cast<size_t>(k)],
                    &tv = v_as != nullptr ? *v_as : T[static_cast<size_t>(v)], &to = T[static_cast<size_t>(o)];
  p->b = tq.dims[0], p->h = tq.dims[1], p->s_q = tq.dims[2], p->d = tq.dims[3];
  p->h_k = tk.dims[1], p->s_kv = tk.dims[2], p->d_v = tv.dims[3];
  if (tk.dims[0] != p->b || tk.dims[3] != p->d || tv.dims[0] != p->b || tv.dims[1] != p->h_k || tv.dims[2] != p->s_kv ||
      to.dims[0] != p->b || to.dims[1] != p->h || to.dims[2] != p->s_q || to.dims[3] != p->d_v || p->h_k < 1 ||
      p->h % p->h_k != 0)
    return "cuDNN attention shapes disagree";
  const DType in = DTypeOf(tq.data_type), out = DTypeOf(to.data_type);
  if ((in != DType::kF16 && in != DType::kBF16) || tk.data_type != tq.data_type || tv.data_type != tq.data_type ||
      out == DType::kInvalid)
    return "no error model";
  p->u_in = FormatOf(in).u;
  p->eta_in = FormatOf(in).eta;
  p->u_out = FormatOf(out).u <= kU32 ? 0 : FormatOf(out).u;
  p->eta_out = FormatOf(out).eta;
  if (!Dense(op, false, q, &p->q) || !Dense(op, false, k, &p->k, k_as, k_data) ||
      !Dense(op, false, v, &p->v, v_as, v_data) || !Dense(op, true, o, &p->o))
    return op.MissingTensorsReason();
  if (stats >= 0) {
    const GraphTensor& ts = T[static_cast<size_t>(stats)];
    if (ts.nb_dims != 4 || ts.dims[2] != p->s_q || ts.dims[3] != 1 || !Dense(op, true, stats, &p->stats))
      return op.MissingTensorsReason();
  }
  return "";
}

void ReportSdpa(int rank, const Op& op, const SdpaProblem& p, CheckReport* report, const std::string& form) {
  ReportSdpaOutputs(rank, op, p, ReplaySdpa(p), report, form);
}

void ReportSdpaOutputs(int rank, const Op& op, const SdpaProblem& p, const SdpaOutputs& s, CheckReport* report,
                       const std::string& form) {
  report->AddChecked("sdpa", OpName{rank, op.seq, op.api_name()}, s.o,
                     s.o.violations + s.stats.violations + s.max.violations + s.sum_exp.violations == 0);
  std::string detail = absl::StrCat(form, "; b=", p.b, " h=", p.h, " h_k=", p.h_k, " s_q=", p.s_q, " s_kv=", p.s_kv,
                                          " d=", p.d, " d_v=", p.d_v, " scale=", FormatNumber(p.scale),
                                          p.mask.empty() ? "" : "; masked",
                                          p.bias.empty()       ? ""
                                          : p.bias_adds == 1 ? "; bias"
                                                             : absl::StrCat("; ", p.bias_adds, " additive terms"),
                                          p.max.empty() ? "" : "; Max and Sum_exp",
                                          p.drop.empty() ? "" : "; dropout mask");
  const int64_t unwritten = std::count(p.unwritten.begin(), p.unwritten.end(), true);
  if (unwritten > 0)
    absl::StrAppend(&detail, "; ", unwritten, " rows past seq_len_q not compared (the graph does not write them)");
  if (s.o.violations > 0) report->AddFinding(GraphElementFinding(rank, op, "sdpa.replay", ErrorModelId::kSdpaForward, "O elements", s.o, detail));
  if (s.stats.violations > 0) report->AddFinding(
      GraphElementFinding(rank, op, "sdpa.stats", ErrorModelId::kSdpaForward, "Stats elements", s.stats, detail));
  if (s.max.violations > 0)
    report->AddFinding(GraphElementFinding(rank, op, "sdpa.max", ErrorModelId::kSdpaForward, "Max elements", s.max, detail));
  if (s.sum_exp.violations > 0)
    report->AddFinding(
        GraphElementFinding(rank, op, "sdpa.sum_exp", ErrorModelId::kSdpaForward, "Sum_exp elements", s.sum_exp, detail));
}

namespace {

// The padding mask of a fused SDPA_FWD with sequence lengths lq and lkv (graph tensors [b, 1, 1, 1]): rows i >=
// seq_len_q[b] unwritten, keys j >= seq_len_kv[b] masked (each clamped to [0, its extent]), per row; "" or why not.
std::string SdpaPaddingMask(const Op& op, int32_t lq, int32_t lkv, SdpaProblem* p) {
  std::vector<double> len_q, len_kv;
  if (!Dense(op, false, lq, &len_q) || !Dense(op, false, lkv, &len_kv)) return op.MissingTensorsReason();
  if (len_q.size() != static_cast<size_t>(p->b) || len_kv.size() != static_cast<size_t>(p->b))
    return "cuDNN SDPA sequence lengths are not [b, 1, 1, 1]";
  const int64_t rows = p->b * p->h * p->s_q;
  p->unwritten.assign(static_cast<size_t>(rows), false);
  p->mask.assign(static_cast<size_t>(rows * p->s_kv), false);
  auto clamp = [](double v, int64_t whole) {
    return v >= static_cast<double>(whole) ? whole : v > 0 ? static_cast<int64_t>(v) : 0;
  };
  for (int64_t r = 0; r < rows; ++r) {
    const size_t bi = static_cast<size_t>(r / (p->h * p->s_q));
    if (r % p->s_q >= clamp(len_q[bi], p->s_q)) {
      p->unwritten[static_cast<size_t>(r)] = true;
      continue;
    }
    const int64_t keys = clamp(len_kv[bi], p->s_kv);
    for (int64_t j = 0; j < keys; ++j) p->mask[static_cast<size_t>(r * p->s_kv + j)] = true;
  }
  return "";
}

void CheckFusedSdpa(int rank, const Op& op, CheckReport* report, uint64_t max_work) {
  const GraphOp& g = op.graph_ops[0];
  const auto& T = op.graph_tensors;
  const int32_t lq = g.operands[6], lkv = g.operands[7];
  const int32_t table_k = format::GraphOperand(g, 8), table_v = format::GraphOperand(g, 9);
  // NVIDIA's unified engine applies its padding mask with both lengths (cudnn-frontend sets them together).
  if ((lq >= 0) != (lkv >= 0)) return report->AddNotChecked("cuDNN SDPA with one sequence length");
  // Paged K and V (Transformer Engine's KV cache): [blocks, h_k, block size, d] containers, gathered through their
  // captured tables into [b, h_k, n * block size, d] as if captured.
  GraphTensor as[2];
  Tensor gathered[2];
  const int32_t paged[2] = {table_k, table_v}, containers[2] = {g.operands[1], g.operands[2]};
  for (int i = 0; i < 2; ++i) {
    if (paged[i] < 0) continue;
    if (lkv < 0) return report->AddNotChecked("cuDNN paged SDPA without sequence lengths");
    const int32_t q = g.operands[0];
    if (q < 0 || containers[i] < 0) return report->AddNotChecked("cuDNN attention operands are not [b, h, s, d]");
    const GraphTensor &c = T[static_cast<size_t>(containers[i])], &t = T[static_cast<size_t>(paged[i])];
    if (c.nb_dims != 4 || t.nb_dims != 4 || T[static_cast<size_t>(q)].nb_dims != 4)
      return report->AddNotChecked("cuDNN paged SDPA of another shape");
    GraphTensor& y = as[i];
    y = c;
    y.is_virtual = 0, y.by_value = 0, y.flags = 0, y.ptr = 0;
    y.dims[0] = T[static_cast<size_t>(q)].dims[0], y.dims[2] = t.dims[2] * c.dims[2];
    y.strides[3] = 1, y.strides[2] = y.dims[3], y.strides[1] = y.dims[2] * y.dims[3];
    y.strides[0] = y.dims[1] * y.strides[1];
    std::vector<int64_t> len;
    const std::string why = GatherPaged(op, containers[i], paged[i], lkv, y, max_work, &gathered[i], &len);
    if (!why.empty()) return report->AddNotChecked(absl::StrCat("cuDNN paged SDPA: ", why));
  }
  SdpaProblem p;
  const std::string why =
      FillSdpa(op, g.operands[0], g.operands[1], g.operands[2], g.operands[3], g.operands[4], &p,
               table_k >= 0 ? &as[0] : nullptr, table_k >= 0 ? &gathered[0] : nullptr,
               table_v >= 0 ? &gathered[1] : nullptr, table_v >= 0 ? &as[1] : nullptr);
  if (!why.empty()) return report->AddNotChecked(why);
  if (lq >= 0) {
    const std::string no_mask = SdpaPaddingMask(op, lq, lkv, &p);
    if (!no_mask.empty()) return report->AddNotChecked(no_mask);
  }
  if (g.operands[5] >= 0) {
    const GraphTensor& t = op.graph_tensors[static_cast<size_t>(g.operands[5])];
    std::vector<double> v;
    if (t.by_value) {
      p.scale = t.value;
    } else if (Dense(op, false, g.operands[5], &v) && v.size() == 1) {
      p.scale = v[0];
    } else {
      return report->AddNotChecked(op.MissingTensorsReason());
    }
    if (!std::isfinite(p.scale)) return report->AddNotChecked("cuDNN SDPA scale unreadable");
  }
  const uint64_t work = static_cast<uint64_t>(p.b * p.h * p.s_q * p.s_kv * (p.d + p.d_v));
  if (work > max_work) return report->AddNotChecked("replay over the work budget");
  const bool paged_kv = table_k >= 0 || table_v >= 0;
  ReportSdpa(rank, op, p, report,
             paged_kv ? "fused SDPA_FWD, paged K/V" : lq >= 0 ? "fused SDPA_FWD, padded" : "fused SDPA_FWD");
}

}  // namespace

uint64_t GraphWorkingSet(const Op& op) {
  if (op.kind != OpKind::kGraph) return 0;
  const uint64_t conv = ConvFusionWorkingSet(op);
  return conv > 0 ? conv : AttentionWorkingSet(op, kAttentionSliceScores);
}

void CheckGraphOp(int rank, const Op& op, CheckReport* report, uint64_t max_work) {
  const format::BackendGraphRecord& r = op.graph;
  if (r.status != 0) return report->AddNotChecked("call failed");
  if (r.flags & format::kGraphUnknown) return report->AddNotChecked("cuDNN graph not shadowed");
  if (r.flags & format::kGraphPackUnknown) return report->AddNotChecked("cuDNN variant pack not shadowed");
  if (!op.tensor_problem.empty()) return report->AddNotChecked("tensor unusable");
  for (const GraphTensor& t : op.graph_tensors)
    if (t.flags & format::kGraphTensorRagged) return report->AddNotChecked("cuDNN ragged tensors");
  const auto& ops = op.graph_ops;
  if (ops.size() == 1 && (ops[0].type == kConvFwd || ops[0].type == kConvBwdData || ops[0].type == kConvBwdFilter))
    return CheckConvGraph(rank, op, report, max_work);
  if (ops.size() == 1 && ops[0].type == kSdpaFwd) return CheckFusedSdpa(rank, op, report, max_work);
  if (CheckConvFusion(rank, op, report, max_work)) return;
  if (CheckCompositeAttention(rank, op, report, max_work)) return;
  report->AddNotChecked(absl::StrCat("cuDNN graph of ", GraphOpNames(ops), " (no checker)"));
}

}  // namespace ttrace::analyzer
