// conv.fused (docs/error-models.md derives it): a cuDNN graph of one convolution with pointwise operations before
// it (a prologue computing its x input: scale, bias, ReLU before a backward-filter convolution) and after it (an
// epilogue on its output: scale, bias, ReLU after a forward convolution; ReLU backward after a backward-data
// convolution), as cudnn-frontend builds them. Every value is carried as (v, e): v the FP64 value of the exact
// chain from the captured inputs, e a bound on |v̂ − v| for the device's value v̂. Captured inputs: e = 0. The
// convolution: v its FP64 reference over the prologue's values, e conv.deterministic's bound (magnitudes over |x| + e_x)
// plus Σ e_x·|other operand| (conv_check.h: ConvReference). Each pointwise operation, computed in its math
// precision (u_c, η_c: FP32 only) and stored in its output tensor's type (a second rounding u_y, η_y when that type
// is coarser):
//   ADD, SUB   v = a ± b     e = e_a + e_b + u_c(|v| + e_a + e_b) + η_c
//   MUL        v = a·b       e = e_a|b| + e_b|a| + e_a e_b + u_c(|v| + e_a|b| + e_b|a| + e_a e_b) + η_c
//   RELU_FWD   v = a ≤ L ? L + s(a − L) : a ≥ U ? U : a (lower clip L, upper U, slope s: graph_check.h; the
//              device uses them rounded to FP32, L̂ Û ŝ, c_L = |L − L̂| ...). Continuous, max(1, |s|)-Lipschitz:
//              e = λ·e_a (λ the slope over a ± e_a: |s| below both L and L̂, 1 between the clips, 0 above
//              both U and Û, max(1, |s|) across a clip)
//                + [a − e_a ≤ max(L, L̂)] (γ_3(|L̂| + |ŝ|(|a| + e_a + |L̂|)) + c_L(1 + |s| + c_s) + c_s(|a| + e_a + |L|))
//                + [a + e_a ≥ min(U, Û)] c_U
//              (the lower branch's three roundings and the clips' own; a plain ReLU: e = e_a, no rounding)
//   RELU_BWD   dx = x ≤ L ? s·dy : x ≥ U ? 0 : dy: every branch x's error (and the clips' rounding) leaves
//              possible is a value the device may give; e = max over them of |branch value − v| + its error
//              (lower: |s|e_dy + (c_s + u|ŝ|)(|dy| + e_dy); pass: e_dy; zero: 0). A plain ReLU: e_dy where x's
//              sign is sure, else max(|v|, |dy − v| + e_dy)
//   IDENTITY   v = a         e = e_a
//   stored     e' = e + u_y(|v| + e) + η_y when u_y > u_c
// A graph output is compared with v under kEval·e. ReLU clips with L > U or not finite L, s: not checked.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/conv_check.h"
#include "analyzer/graph_check.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::GraphOp;
using format::GraphTensor;

constexpr int32_t kConvFwd = 10, kConvBwdFilter = 11, kConvBwdData = 12, kPointwise = 13;
enum : int32_t { kAdd = 0, kMul = 1, kSub = 9, kIdentity = 21, kReluFwd = 100, kReluBwd = 200, kGenIndex = 501 };
constexpr int32_t kInt32Type = 4;  // CUDNN_DATA_INT32
constexpr double kEval = 1 + 0x1p-40;

using Bounded = BoundedTensor;
using Values = BoundedValues;

// Unit roundoff and underflow term of a floating-point cudnnDataType_t (FP32, FP64, FP16, BF16); false otherwise.
bool Rounding(int32_t cudnn_type, double* u, double* eta) {
  const DType d = DTypeFromCudnn(cudnn_type);
  if (d != DType::kF32 && d != DType::kF64 && d != DType::kF16 && d != DType::kBF16) return false;
  *u = FormatOf(d).u, *eta = FormatOf(d).eta;
  return true;
}

// x rounded to FP32 (to nearest even; ±inf past FP32's range, as a conversion on the device gives).
double ToF32(double x) {
  if (std::fabs(x) >= 0x1.ffffffp127) return std::copysign(HUGE_VAL, x);
  return static_cast<float>(x);
}

bool IsConv(int32_t type) { return type == kConvFwd || type == kConvBwdData || type == kConvBwdFilter; }

// The operands a pointwise operation reads (by role) and writes.
void PointwiseRoles(const GraphOp& g, int32_t* a, int32_t* b, int32_t* y) {
  if (g.mode == kReluBwd) {
    *a = g.operands[5], *b = g.operands[0], *y = g.operands[4];  // dy, the forward input x, dx
  } else {
    *a = g.operands[0], *b = g.operands[1], *y = g.operands[2];
  }
}

}  // namespace

// Evaluates one pointwise operation whose inputs are in `v`; "" or the reason it cannot be.
std::string EvalBoundedPointwise(const GraphOp& g, const std::vector<GraphTensor>& T, Values* v,
                                 const int64_t* index_base) {
  int32_t ai, bi, yi;
  PointwiseRoles(g, &ai, &bi, &yi);
  const bool binary = g.mode == kAdd || g.mode == kSub || g.mode == kMul || g.mode == kReluBwd;
  const bool index = g.mode == kGenIndex;  // reads only its input's shape
  if (g.mode != kAdd && g.mode != kSub && g.mode != kMul && g.mode != kReluFwd && g.mode != kReluBwd &&
      g.mode != kIdentity && !index)
    return absl::StrCat("pointwise mode ", g.mode);
  if ((ai < 0 && !index) || yi < 0 || (binary && bi < 0) || (g.alpha != 0 && g.alpha != 1) ||
      (g.beta != 0 && g.beta != 1))
    return "pointwise operands or alphas unsupported";
  double uc = 0, etac = 0, uy = 0, etay = 0;
  const GraphTensor& y = T[static_cast<size_t>(yi)];
  if (index && (g.axis < 0 || g.axis >= y.nb_dims)) return "GEN_INDEX axis out of range";
  // INT32 math (cudnn-frontend's ALiBi index arithmetic) is exact on integers below 2^31, checked per element; an
  // INT32 output holds only such values.
  const bool integer = g.compute_type == kInt32Type, int_out = y.data_type == kInt32Type;
  if (integer ? (g.mode != kAdd && g.mode != kSub && g.mode != kMul && g.mode != kIdentity && !index)
              : (g.compute_type != 0 || !Rounding(0, &uc, &etac)))
    return "pointwise math precision other than FP32 (or INT32 index arithmetic)";
  if (!int_out && !Rounding(y.data_type, &uy, &etay)) return "pointwise output type unsupported";
  if (uy <= uc) uy = 0, etay = 0;
  // ReLU's clips as given and as the device's FP32 math holds them, and what that rounding moves them.
  const ReluClips c = ReluClipsOf(g);
  if ((g.mode == kReluFwd || g.mode == kReluBwd) &&
      (!std::isfinite(c.lower) || !std::isfinite(c.slope) || std::isnan(c.upper) || c.lower > c.upper))
    return "ReLU clips unsupported (not finite, or lower above upper)";
  const double lower32 = ToF32(c.lower), slope32 = ToF32(c.slope), upper32 = ToF32(c.upper);
  const double c_lower = std::fabs(c.lower - lower32), c_slope = std::fabs(c.slope - slope32);
  const double c_upper = c.upper == upper32 ? 0 : std::fabs(c.upper - upper32);  // inf when FP32 overflows
  const Bounded* A = index ? nullptr : &v->at(ai);
  const Bounded* B = binary ? &v->at(bi) : nullptr;
  int64_t n = 1;
  for (int d = 0; d < y.nb_dims; ++d) n *= y.dims[d];
  Bounded out;
  out.v.resize(static_cast<size_t>(n));
  out.e.resize(static_cast<size_t>(n));
  int64_t idx[format::kGraphMaxDims] = {};
  for (int64_t k = 0; k < n; ++k) {
    double a = 0, ea = 0;
    if (A != nullptr) {
      const size_t ka = static_cast<size_t>(BroadcastOffset(T[static_cast<size_t>(ai)], y, idx));
      a = A->v[ka], ea = A->e[ka];
    }
    double b = 0, eb = 0;
    if (B != nullptr) {
      const size_t kb = static_cast<size_t>(BroadcastOffset(T[static_cast<size_t>(bi)], y, idx));
      b = B->v[kb], eb = B->e[kb];
    }
    double r = 0, e = 0;
    if (g.mode == kReluBwd) {
      PointwiseValue(g, b, a, 0, 0, &r);  // x = b (the forward input), dy = a
    } else {
      PointwiseValue(g, a, b, 0, index ? static_cast<double>(idx[g.axis] + (index_base ? index_base[g.axis] : 0)) : 0, &r);
    }
    constexpr double kInt32Limit = 0x1p31;
    if (integer && (ea != 0 || eb != 0 || a != std::nearbyint(a) || b != std::nearbyint(b) ||
                    !(std::fabs(r) < kInt32Limit)))
      return "INT32 pointwise math on values that are not exact integers";
    switch (g.mode) {
      case kAdd:
      case kSub:
        e = ea + eb + uc * (std::fabs(r) + ea + eb) + etac;
        break;
      case kMul: {
        const double spread = ea * std::fabs(b) + eb * std::fabs(a) + ea * eb;
        e = spread + uc * (std::fabs(r) + spread) + etac;
        break;
      }
      case kReluFwd: {
        // The slope over a ± e_a: |s| where it lies below both lower clips, 1 between the clips, 0 above.
        const double lo = std::min(c.lower, lower32), hi = std::max(c.upper, upper32);
        const double lipschitz = a + ea <= lo                                                 ? std::fabs(c.slope)
                                 : a - ea > std::max(c.lower, lower32) && a + ea < std::min(c.upper, upper32) ? 1.0
                                 : a - ea > hi                                                 ? 0.0
                                                                      : std::max(1.0, std::fabs(c.slope));
        e = lipschitz * ea;
        if (a - ea <= std::max(c.lower, lower32))
          e += Theta(uc, 3) * (std::fabs(lower32) + std::fabs(slope32) * (std::fabs(a) + ea + std::fabs(lower32))) +
               c_lower * (1 + std::fabs(c.slope) + c_slope) + c_slope * (std::fabs(a) + ea + std::fabs(c.lower));
        if (a + ea >= std::min(c.upper, upper32)) e += c_upper;
        break;
      }
      case kReluBwd: {  // a = dy, b = the forward input x
        const double lower_err =
            std::fabs(c.slope) * ea + (c_slope + uc * std::fabs(slope32)) * (std::fabs(a) + ea);
        e = 0;
        if (b - eb <= std::max(c.lower, lower32)) e = std::max(e, std::fabs(c.slope * a - r) + lower_err);
        if (b + eb > std::min(c.lower, lower32) && b - eb < std::max(c.upper, upper32))
          e = std::max(e, std::fabs(a - r) + ea);
        if (b + eb >= std::min(c.upper, upper32)) e = std::max(e, std::fabs(r));
        break;
      }
      case kGenIndex: e = 0; break;
      default: e = ea; break;  // identity
    }
    if (integer) e = 0;  // exact (checked above)
    if (int_out && (e != 0 || r != std::nearbyint(r) || !(std::fabs(r) < kInt32Limit)))
      return "INT32 output of a value that is not an exact integer";
    if (uy > 0) e += uy * (std::fabs(r) + e) + etay;
    out.v[static_cast<size_t>(k)] = r, out.e[static_cast<size_t>(k)] = e;
    for (int d = y.nb_dims - 1; d >= 0 && ++idx[d] == y.dims[d]; --d) idx[d] = 0;
  }
  (*v)[yi] = std::move(out);
  return "";
}

namespace {

bool Ready(const GraphOp& g, const Values& v) {
  if (IsConv(g.type)) {
    // The two inputs of the direction.
    const int in0 = g.type == kConvBwdData ? 1 : 0, in1 = g.type == kConvFwd ? 1 : 2;
    return v.count(g.operands[in0]) > 0 && v.count(g.operands[in1]) > 0;
  }
  int32_t a, b, y;
  PointwiseRoles(g, &a, &b, &y);
  return (g.mode == kGenIndex || v.count(a) > 0) && (b < 0 || v.count(b) > 0);
}

// Packed row-major strides of a tensor's dims.
void Packed(const GraphTensor& t, int64_t* strides) {
  int64_t s = 1;
  for (int d = t.nb_dims - 1; d >= 0; --d) strides[d] = s, s *= t.dims[d];
}

// The convolution over values in `v` (dense row-major): its output's (v, e) stored at its output tensor.
std::string EvalConv(const GraphOp& g, const std::vector<GraphTensor>& T, Values* v, uint64_t max_work) {
  const GraphTensor& x = T[static_cast<size_t>(g.operands[0])];
  const GraphTensor& w = T[static_cast<size_t>(g.operands[1])];
  const GraphTensor& y = T[static_cast<size_t>(g.operands[2])];
  ConvProblem p;
  if (!ConvGraphGeometry(g, x, w, y, &p) || p.beta != 0) return "cuDNN convolution graph geometry unsupported";
  // The two inputs share a data type; the output's type is the written tensor's (a virtual FP32 intermediate).
  const int out = p.direction == ConvDirection::kForward ? 2 : p.direction == ConvDirection::kBackwardData ? 0 : 1;
  const GraphTensor* roles[3] = {&x, &w, &y};
  const int in0 = out == 0 ? 1 : 0, in1 = out == 2 ? 1 : 2;
  if (roles[in0]->data_type != roles[in1]->data_type) return "no error model";
  absl::StatusOr<GemmPrecision> precision =
      ResolveConvPrecision(roles[in0]->data_type, g.compute_type, -1, roles[out]->data_type);
  if (!precision.ok()) return "no error model";
  if (static_cast<uint64_t>(ConvOutputElements(p)) * static_cast<uint64_t>(ConvTermsPerOutput(p)) > max_work)
    return "replay over the work budget";
  ConvTensor* tensors[3] = {&p.x, &p.w, &p.y};
  for (int role : {in0, in1}) {
    const Bounded& b = v->at(g.operands[role]);
    tensors[role]->data = b.v;
    Packed(*roles[role], tensors[role]->strides);
    bool exact = true;
    for (double e : b.e) exact = exact && e == 0;
    if (exact) continue;
    if (role != 0) return "cuDNN convolution graph with a prologue on an operand other than x";
    p.x_err.data = b.e;
    Packed(x, p.x_err.strides);
  }
  const std::vector<ConvElement> ref = ConvReference(p, *precision);
  Bounded r;
  r.v.reserve(ref.size());
  r.e.reserve(ref.size());
  for (const ConvElement& c : ref) {
    if (c.overflow) return "cuDNN convolution graph may overflow";
    r.v.push_back(c.ref), r.e.push_back(c.bound);
  }
  (*v)[g.operands[out]] = std::move(r);
  return "";
}

}  // namespace

uint64_t ConvFusionWorkingSet(const Op& op) {
  const auto& T = op.graph_tensors;
  int convs = 0;
  for (const GraphOp& g : op.graph_ops) {
    if (IsConv(g.type)) ++convs;
    else if (g.type != kPointwise) return 0;
  }
  if (convs != 1 || op.graph_ops.size() < 2) return 0;
  // The (v, e) pairs of every tensor that is not a captured input (16 bytes an element: those of the inputs are
  // OpCost's own 16), the convolution's reference elements (ConvElement) and its operands' copies (values, and x's
  // bounds), the largest output's captured values.
  // Counts fit int64 (the reader refuses tensors whose dims do not: trace_model.cc Sizeable); their bytes need not
  // fit uint64: summed wide, saturated at the end.
  using Wide = unsigned __int128;
  auto count = [&](int32_t i) {
    if (i < 0 || static_cast<size_t>(i) >= T.size()) return Wide{0};
    Wide n = 1;
    for (int d = 0; d < T[static_cast<size_t>(i)].nb_dims; ++d)
      n *= static_cast<uint64_t>(std::max<int64_t>(0, T[static_cast<size_t>(i)].dims[d]));
    return n;
  };
  std::vector<bool> seen(T.size(), false);
  Wide bytes = 0, largest = 0;
  for (const GraphOp& g : op.graph_ops) {
    for (int r = 0; r < 6; ++r) {
      const int32_t i = g.operands[r];
      if (i < 0 || static_cast<size_t>(i) >= T.size() || seen[static_cast<size_t>(i)]) continue;
      seen[static_cast<size_t>(i)] = true;
      if (op.graph_in.count(static_cast<uint32_t>(i)) == 0) bytes += 16 * count(i);
      largest = std::max(largest, count(i));
    }
    if (!IsConv(g.type)) continue;
    const int out = g.type == kConvFwd ? 2 : g.type == kConvBwdData ? 0 : 1;
    bytes += sizeof(ConvElement) * count(g.operands[out]);
    for (int r = 0; r < 3; ++r)
      if (r != out) bytes += 16 * count(g.operands[r]);
  }
  bytes += 8 * largest;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

bool CheckConvFusion(int rank, const Op& op, CheckReport* report, uint64_t max_work) {
  const auto& ops = op.graph_ops;
  const auto& T = op.graph_tensors;
  int convs = 0;
  for (const GraphOp& g : ops) {
    if (IsConv(g.type)) ++convs;
    else if (g.type != kPointwise) return false;
  }
  if (convs != 1 || ops.size() < 2) return false;
  for (const GraphOp& g : ops)
    if (IsConv(g.type) && (g.operands[0] < 0 || g.operands[1] < 0 || g.operands[2] < 0))
      return report->AddNotChecked("cuDNN convolution graph operand missing"), true;
  // Captured inputs, exact; then every operation once its inputs are known.
  Values v;
  for (const GraphOp& g : ops) {
    int32_t reads[3] = {-1, -1, -1};
    if (IsConv(g.type)) {
      reads[0] = g.operands[g.type == kConvBwdData ? 1 : 0], reads[1] = g.operands[g.type == kConvFwd ? 1 : 2];
    } else {
      int32_t y;
      PointwiseRoles(g, &reads[0], &reads[1], &y);
    }
    for (int32_t i : reads) {
      if (i < 0 || T[static_cast<size_t>(i)].is_virtual || v.count(i) > 0) continue;
      Bounded b;
      if (!Dense(op, false, i, &b.v)) return report->AddNotChecked(op.MissingTensorsReason()), true;
      b.e.assign(b.v.size(), 0);
      v[i] = std::move(b);
    }
  }
  std::vector<const GraphOp*> pending;
  for (const GraphOp& g : ops) pending.push_back(&g);
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](const GraphOp* g) { return Ready(*g, v); });
    if (ready == pending.end()) return report->AddNotChecked("cuDNN convolution graph not evaluable"), true;
    const std::string why =
        IsConv((*ready)->type) ? EvalConv(**ready, T, &v, max_work) : EvalBoundedPointwise(**ready, T, &v);
    if (!why.empty()) return report->AddNotChecked(absl::StrCat("cuDNN convolution graph: ", why)), true;
    pending.erase(ready);
  }
  // Every non-virtual tensor an operation writes is compared.
  ElementStats st;
  uint64_t base = 0;
  std::string outputs;
  for (const GraphOp& g : ops) {
    int32_t yi;
    if (IsConv(g.type)) {
      yi = g.operands[g.type == kConvFwd ? 2 : g.type == kConvBwdData ? 0 : 1];
    } else {
      int32_t a, b;
      PointwiseRoles(g, &a, &b, &yi);
    }
    if (T[static_cast<size_t>(yi)].is_virtual) continue;
    std::vector<double> got;
    if (!Dense(op, true, yi, &got) || got.size() != v.at(yi).v.size())
      return report->AddNotChecked(op.MissingTensorsReason()), true;
    const Bounded& b = v.at(yi);
    for (size_t k = 0; k < got.size(); ++k) st.Add(base + k, got[k], b.v[k], kEval * b.e[k], false);
    base += got.size();
    absl::StrAppend(&outputs, outputs.empty() ? "" : ", ", "uid ", T[static_cast<size_t>(yi)].uid);
  }
  if (base == 0) return report->AddNotChecked("cuDNN convolution graph writes no output"), true;
  report->AddChecked("conv", OpName{rank, op.seq, op.api_name()}, st, st.violations == 0);
  if (st.violations > 0)
    report->AddFinding(GraphElementFinding(rank, op, "conv.replay", ErrorModelId::kConvFused,
                                           "elements of the fused convolution's output", st,
                                           absl::StrCat("cuDNN graph of ", GraphOpNames(ops), "; output ", outputs)));
  return true;
}

}  // namespace ttrace::analyzer
