// ltmatmul.deterministic, element by element (docs/error-models.md, "ltmatmul.deterministic", has the long form).
// Let t* be the exact pre-epilogue value α'·Σ a b + β'·c and t̂ the device's FP32 value. gemm.deterministic with no
// output rounding bounds |t̂ - t*| by E (the accumulation's u is FP32's, or 2^-fp8_acc_bits for FP8 operands, with 2
// more roundings for the FP8 scale products). Each epilogue stage maps (reference x, bound E) to the next:
//   bias:  x + b, (1+u)E + u|x + b| + η                       (one FP32 addition)
//   ReLU:  max(x, 0), E                                       (1-Lipschitz, exact)
//   GELU:  g(x), L·E + ½δ(|x|+E) + θ_2(u)(|g(x)| + L·E + ½δ(|x|+E)) + η
//          L = sup|g'| = 1.13, δ = tanh_abs_err + 3u (the tanh and the rounding of its argument)
//   DGELU: x·g'(a) (a: the captured aux, exact), |g'(a)|E + δ'(a)(|x|+E) + u(|x g'(a)| + |g'(a)|E + δ'(a)(|x|+E)) + η
//          δ'(a) = δ(½ + c|a|(1+3·0.044715a²)) + θ_6(u)(1 + |½ a c (1+3·0.044715a²)|), c = √(2/π)
// and the outputs: D = fl_D(s_D·v) errs by (1+u_D)(1+u_s)|s_D|E + ((1+u_D)(1+u_s)-1)|s_D v| + η_D (u_s = u when a
// scale is multiplied, u_D = 0 for an FP32 D); an FP8 D saturates, so its reference is clamped to ±max (clamping is
// 1-Lipschitz); amax differs from max|v| by at most max E; a bias gradient Σ_j v_j (or Σ_p of op(A)'s row / op(B)'s
// column) by ΣE + θ_n(u)(Σ|v| + ΣE) and its output rounding. Every bound is scaled by (1 + 64·2^-53) for its own
// evaluation, and the FP64 reference's errors are inside E (gemm.deterministic) or below 2^-52 relative per stage.
#include "analyzer/lt_check.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "analyzer/blas.h"
#include "analyzer/gemm_check.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

using format::DType;
using format::TensorSlot;

namespace {

constexpr double kU32 = 0x1p-24;
constexpr double kEta32 = 0x1p-126;
constexpr double kU64x2 = 0x1p-52;
constexpr double kSafety = 1 + 64 * 0x1p-53;
constexpr double kGeluC = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluA = 0.044715;

bool BiasIn(uint32_t e) {
  return e == kLtEpiBias || e == kLtEpiReluBias || e == kLtEpiGeluBias || e == kLtEpiGeluAuxBias;
}
bool AuxOut(uint32_t e) { return e == kLtEpiGeluAux || e == kLtEpiGeluAuxBias; }
bool Gelu(uint32_t e) { return e == kLtEpiGelu || e == kLtEpiGeluBias || AuxOut(e); }
bool DGelu(uint32_t e) { return e == kLtEpiDGelu || e == kLtEpiDGeluBGrad; }
bool BGrad(uint32_t e) { return e == kLtEpiDGeluBGrad || e == kLtEpiBGradA || e == kLtEpiBGradB; }
bool Known(uint32_t e) {
  return e == kLtEpiDefault || e == kLtEpiRelu || e == kLtEpiReluBias || BiasIn(e) || Gelu(e) || DGelu(e) || BGrad(e);
}
bool ReluMask(uint32_t e) {
  return e == kLtEpiReluAux || e == kLtEpiReluAuxBias || e == kLtEpiDRelu || e == kLtEpiDReluBGrad;
}

bool IsFp8(DType d) { return d == DType::kE4M3 || d == DType::kE5M2; }

// The rounding of a value v (error bound e) into `out`, after an optional FP32 multiplication by `scale`.
struct OutputStage {
  double u_out = 0, eta_out = 0, u_s = 0, eta_s = 0, max = DBL_MAX;
  bool saturate = false;
  OutputStage(const FloatFormat& out, bool scaled) {
    if (out.u > kU32) {
      u_out = out.u;
      eta_out = out.eta;
    }
    if (scaled) {
      u_s = kU32;
      eta_s = kEta32;
    }
    max = out.max_finite;
    saturate = out.u >= 0x1p-4 && out.u <= 0x1p-3;  // FP8 stores saturate (__NV_SATFINITE)
  }
  double Ref(double scaled_ref) const {
    return saturate ? std::clamp(scaled_ref, -max, max) : scaled_ref;
  }
  double Bound(double e, double scale, double scaled_ref) const {
    const double grow = (1 + u_out) * (1 + u_s);
    return (grow * std::fabs(scale) * e + (grow - 1) * std::fabs(scaled_ref) + eta_out + eta_s * (1 + u_out)) *
           kSafety;
  }
  bool Overflow(double scaled_ref, double bound) const { return !saturate && std::fabs(scaled_ref) + bound >= max; }
};

// Element (row, col) of an operand stored column-major with `rows` rows, batch `b` (shared when it holds one).
double At(const std::vector<double>& v, int64_t rows, int64_t cols, int64_t b, int64_t r, int64_t c) {
  const size_t per = static_cast<size_t>(rows * cols);
  const size_t base = v.size() > per ? static_cast<size_t>(b) * per : 0;
  return v[base + static_cast<size_t>(r + c * rows)];
}

double Vec(const std::vector<double>& v, int64_t len, int64_t b, int64_t i) {
  const size_t base = v.size() > static_cast<size_t>(len) ? static_cast<size_t>(b * len) : 0;
  return v[base + static_cast<size_t>(i)];
}

}  // namespace

double LtGelu(double x) { return 0.5 * x * (1.0 + std::tanh(kGeluC * (x + kGeluA * x * x * x))); }

double LtGeluGrad(double x) {
  const double th = std::tanh(kGeluC * (x + kGeluA * x * x * x));
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * kGeluC * (1.0 + 3.0 * kGeluA * x * x);
}

LtOutputs ReplayLtMatmul(const LtProblem& p, const LtModelParams& params) {
  LtOutputs out;
  const int64_t m = p.m, n = p.n, k = p.k;
  const uint32_t e = p.epilogue;
  // The GEMM part: vector scales applied to op(A)'s rows and op(B)'s columns (FP8 x FP32 products: exact in FP64).
  GemmProblem g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = p.batch;
  g.transa = p.transa;
  g.transb = p.transb;
  g.alpha = p.alpha;
  g.beta = p.beta;
  g.a = p.a;
  g.b = p.b;
  g.c_in = p.c_in;
  if (!p.a_scale.empty() && p.alpha != 0) {
    for (size_t x = 0; x < g.a.size(); ++x) {
      const int64_t in = static_cast<int64_t>(x % static_cast<size_t>(m * k));
      const int64_t row = p.transa == 0 ? in % m : in / k;
      g.a[x] *= p.a_scale[static_cast<size_t>(row)];
    }
  }
  if (!p.b_scale.empty() && p.alpha != 0) {
    for (size_t x = 0; x < g.b.size(); ++x) {
      const int64_t in = static_cast<int64_t>(x % static_cast<size_t>(k * n));
      const int64_t col = p.transb == 0 ? in / k : in % n;
      g.b[x] *= p.b_scale[static_cast<size_t>(col)];
    }
  }
  const std::vector<GemmElementTerms> terms = GemmReference(g);
  const GemmBound gemm(p.precision, k, p.alpha, p.beta);
  const OutputStage d_stage(p.d_format, p.fp8 && p.d_scale != 1);
  const OutputStage aux_stage(p.aux_format, p.fp8 && p.aux_scale != 1);
  const double delta = params.tanh_abs_err + 3 * kU32;
  const double theta2 = Theta(kU32, 2), theta6 = Theta(kU32, 6);
  const int64_t bias_len = e == kLtEpiBGradB ? n : m;
  const bool bgrad_rows = e == kLtEpiDGeluBGrad;
  std::vector<double> row_sum, row_abs, row_err;
  double amax_ref = 0, amax_err = 0, aux_amax_ref = 0, aux_amax_err = 0;
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    if (bgrad_rows) {
      row_sum.assign(static_cast<size_t>(m), 0.0);
      row_abs.assign(static_cast<size_t>(m), 0.0);
      row_err.assign(static_cast<size_t>(m), 0.0);
    }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        const size_t index = static_cast<size_t>(bt * m * n + j * m + i);
        const GemmElementTerms& t = terms[index];
        double x = t.ref, err = gemm.Bound(t);
        const bool gemm_overflow = gemm.OverflowPossible(t);
        if (BiasIn(e)) {
          x += Vec(p.bias, m, bt, i);
          err = (1 + kU32) * err + (kU32 + kU64x2) * std::fabs(x) + kEta32;
        }
        if (AuxOut(e)) {
          const double ref = aux_stage.Ref(p.aux_scale * x);
          const double bound = aux_stage.Bound(err, p.aux_scale, p.aux_scale * x);
          if (!p.aux_out.empty())
            out.aux.Add(index, At(p.aux_out, m, n, bt, i, j), ref, bound, gemm_overflow || aux_stage.Overflow(ref, bound));
          aux_amax_ref = std::max(aux_amax_ref, std::fabs(x));
          aux_amax_err = std::max(aux_amax_err, err);
        }
        if (e == kLtEpiRelu || e == kLtEpiReluBias) x = std::max(x, 0.0);
        if (Gelu(e)) {
          const double mag = 0.5 * delta * (std::fabs(x) + err);
          const double v = LtGelu(x);
          err = kGeluLipschitz * err + mag + theta2 * (std::fabs(v) + kGeluLipschitz * err + mag) + kEta32 +
                kU64x2 * std::fabs(v);
          x = v;
        }
        if (DGelu(e)) {
          const double a = At(p.aux_in, m, n, bt, i, j);
          const double gp = LtGeluGrad(a);
          const double poly = kGeluC * std::fabs(a) * (1 + 3 * kGeluA * a * a);
          const double dp = delta * (0.5 + poly) + theta6 * (1 + 0.5 * poly);
          const double mag = dp * (std::fabs(x) + err);
          const double v = x * gp;
          err = std::fabs(gp) * err + mag + kU32 * (std::fabs(v) + std::fabs(gp) * err + mag) + kEta32 +
                kU64x2 * std::fabs(v);
          x = v;
        }
        amax_ref = std::max(amax_ref, std::fabs(x));
        amax_err = std::max(amax_err, err);
        if (bgrad_rows) {
          row_sum[static_cast<size_t>(i)] += x;
          row_abs[static_cast<size_t>(i)] += std::fabs(x);
          row_err[static_cast<size_t>(i)] += err;
        }
        if (!p.d_out.empty()) {
          const double scaled = p.d_scale * x;
          const double bound = d_stage.Bound(err, p.d_scale, scaled);
          const double ref = d_stage.Ref(scaled);
          out.d.Add(index, At(p.d_out, m, n, bt, i, j), ref, bound, gemm_overflow || d_stage.Overflow(ref, bound));
        }
      }
    }
    if (BGrad(e) && !p.bias_grad.empty()) {
      const OutputStage b_stage(p.bias_format, false);
      for (int64_t x = 0; x < bias_len; ++x) {
        double sum = 0, abs = 0, err = 0, terms_n = 0;
        if (bgrad_rows) {
          sum = row_sum[static_cast<size_t>(x)];
          abs = row_abs[static_cast<size_t>(x)];
          err = row_err[static_cast<size_t>(x)];
          terms_n = static_cast<double>(n);
        } else {
          for (int64_t q = 0; q < k; ++q) {  // BGRADA: row x of op(A); BGRADB: column x of op(B)
            const double v = e == kLtEpiBGradA
                                 ? (p.transa == 0 ? At(p.a, m, k, bt, x, q) : At(p.a, k, m, bt, q, x))
                                 : (p.transb == 0 ? At(p.b, k, n, bt, q, x) : At(p.b, n, k, bt, x, q));
            sum += v;
            abs += std::fabs(v);
          }
          terms_n = static_cast<double>(k);
        }
        const double th = Theta(kU32, terms_n);
        const double pre = err + th * (abs + err) + terms_n * kEta32 + kU64x2 * terms_n * abs;
        const double bound = b_stage.Bound(pre, 1, sum);
        out.bias_grad.Add(static_cast<uint64_t>(bt * bias_len + x), Vec(p.bias_grad, bias_len, bt, x), sum, bound,
                          b_stage.Overflow(sum, bound));
      }
    }
  }
  if (p.has_amax_d) out.amax_d.Add(0, p.amax_d, amax_ref, amax_err * kSafety, false);
  if (p.has_aux_amax) out.aux_amax.Add(0, p.aux_amax, aux_amax_ref, aux_amax_err * kSafety, false);
  return out;
}

namespace {

// Decodes a tensor stored as the column-major transpose (ROW order) into m x n column-major, per batch.
std::vector<double> Untranspose(const std::vector<double>& v, int64_t m, int64_t n) {
  std::vector<double> out(v.size());
  const size_t per = static_cast<size_t>(m * n);
  for (size_t b = 0; b * per < v.size(); ++b)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) out[b * per + static_cast<size_t>(i + j * m)] = v[b * per + static_cast<size_t>(j + i * n)];
  return out;
}

struct Reject {
  std::string reason;
  std::string warning;
};

bool Batches(const Tensor* t, int64_t batch) { return t->meta.batch == batch || t->meta.batch == 1; }

}  // namespace

void CheckLtMatmulOp(int rank, const Op& op, CheckReport* report, const LtModelParams& params, uint64_t max_work) {
  const format::LtMatmulRecord& r = op.lt;
  const OpName name{rank, op.seq, op.api_name()};
  const std::string where = absl::StrCat("rank ", rank, " seq ", op.seq, " ", name.api, ": ");
  const uint32_t e = r.epilogue;
  if (r.status != 0) return report->AddNotChecked("call failed");
  if (r.flags & format::kLtDescUnreadable) return report->AddNotChecked("cuBLASLt descriptor unreadable");
  for (const format::LtLayout* l : {&r.a, &r.b, &r.c, &r.d})
    if (l->order != 0 && l->order != 1) return report->AddNotChecked("cuBLASLt tiled layout order");
  if (ReluMask(e)) return report->AddNotChecked("cuBLASLt ReLU bit-mask epilogue");
  if (!Known(e)) return report->AddNotChecked(absl::StrCat("cuBLASLt epilogue ", e));
  if (r.pointer_mode > 1) return report->AddNotChecked("cuBLASLt alpha vector pointer mode");
  if ((r.a_scale_mode != 0 && r.a_scale_mode != 3) || (r.b_scale_mode != 0 && r.b_scale_mode != 3))
    return report->AddNotChecked("cuBLASLt block scaling");
  if (!op.tensor_problem.empty()) return report->AddNotChecked("tensor unusable");
  auto scalar = [&](TensorSlot slot, double* out) {
    const Tensor* t = op.tensor(slot);
    if (t == nullptr || t->meta.rows * t->meta.cols * t->meta.batch != 1) return false;
    *out = DecodeAll(static_cast<DType>(t->meta.dtype), t->data)[0];
    return true;
  };
  double alpha = r.alpha, beta = r.beta;
  if ((r.flags & format::kLtScalarsUnknown) && (!scalar(TensorSlot::kAlpha, &alpha) || !scalar(TensorSlot::kBeta, &beta)))
    return report->AddNotChecked("alpha/beta on device");
  const int64_t m = r.m, n = r.n, k = r.k, batch = r.d.batch_count;
  const bool need_ab = alpha != 0 || e == kLtEpiBGradA || e == kLtEpiBGradB, need_c = beta != 0;
  const Tensor* a = op.tensor(TensorSlot::kA);
  const Tensor* b = op.tensor(TensorSlot::kB);
  const Tensor* c_in = op.tensor(TensorSlot::kCIn);
  const Tensor* d = op.tensor(TensorSlot::kCOut);
  const Tensor* bias = op.tensor(TensorSlot::kBias);
  const Tensor* aux_in = op.tensor(TensorSlot::kAuxIn);
  const Tensor* aux_out = op.tensor(TensorSlot::kAuxOut);
  const Tensor* bias_grad = op.tensor(TensorSlot::kBiasGrad);
  if (d == nullptr || (need_ab && (a == nullptr || b == nullptr)) || (need_c && c_in == nullptr) ||
      (BiasIn(e) && bias == nullptr) || (DGelu(e) && aux_in == nullptr) || (AuxOut(e) && aux_out == nullptr) ||
      (BGrad(e) && bias_grad == nullptr))
    return report->AddNotChecked(op.MissingTensorsReason());
  const DType a_dt = DTypeFromCuda(r.a.type), b_dt = DTypeFromCuda(r.b.type), d_dt = DTypeFromCuda(r.d.type);
  const bool fp8 = IsFp8(a_dt) && IsFp8(b_dt);
  // Shapes as stored: a ROW matrix is its column-major transpose.
  auto stored = [](const format::LtLayout& l, int64_t* rows, int64_t* cols) {
    *rows = static_cast<int64_t>(l.order == 1 ? l.cols : l.rows);
    *cols = static_cast<int64_t>(l.order == 1 ? l.rows : l.cols);
  };
  int64_t ar, ac, br, bc, cr, cc, dr, dc;
  stored(r.a, &ar, &ac);
  stored(r.b, &br, &bc);
  stored(r.c, &cr, &cc);
  stored(r.d, &dr, &dc);
  const int64_t bias_len = e == kLtEpiBGradB ? n : m;
  bool ok = m >= 0 && n >= 0 && k >= 0 && batch >= 1 && r.transa <= 2 && r.transb <= 2 &&
            d->meta.rows == dr && d->meta.cols == dc && d->meta.batch == batch && d->meta.dtype == static_cast<uint8_t>(d_dt);
  if (need_ab)
    ok = ok && a->meta.rows == ar && a->meta.cols == ac && Batches(a, batch) && b->meta.rows == br &&
         b->meta.cols == bc && Batches(b, batch) && a->meta.dtype == static_cast<uint8_t>(a_dt) &&
         b->meta.dtype == static_cast<uint8_t>(b_dt) &&
         static_cast<int64_t>(r.transa == 0 ? r.a.rows : r.a.cols) == m &&
         static_cast<int64_t>(r.transb == 0 ? r.b.cols : r.b.rows) == n &&
         static_cast<int64_t>(r.transb == 0 ? r.b.rows : r.b.cols) == k;
  if (need_c) ok = ok && c_in->meta.rows == cr && c_in->meta.cols == cc && Batches(c_in, batch);
  if (BiasIn(e)) ok = ok && bias->meta.rows == bias_len && bias->meta.cols == 1 && Batches(bias, batch);
  if (BGrad(e)) ok = ok && bias_grad->meta.rows == bias_len && bias_grad->meta.cols == 1 && Batches(bias_grad, batch);
  for (const Tensor* x : {aux_in, aux_out})
    if (x != nullptr) ok = ok && x->meta.rows == m && x->meta.cols == n && Batches(x, batch);
  if (!ok) {
    report->Warn(absl::StrCat(where, "captured tensor shapes or types do not match the call's layouts"));
    return report->AddNotChecked("shape mismatch");
  }
  if (BGrad(e) && batch > 1 && bias_grad->meta.batch == 1)
    return report->AddNotChecked("cuBLASLt bias gradient of every batch written to one place");
  absl::StatusOr<GemmPrecision> precision =
      ResolveGemmPrecision(r.api, r.compute_type, /*math_mode=*/0, a_dt, b_dt, DType::kF32);
  if (!precision.ok() || d_dt == DType::kInvalid) {
    report->Warn(absl::StrCat("not checked: ", precision.ok() ? "D's type has no ttrace dtype"
                                                            : std::string(precision.status().message())));
    return report->AddNotChecked("no error model");
  }
  LtProblem p;
  p.precision = *precision;
  if (fp8) {
    p.precision.extra_roundings = 2;
    if (params.fp8_acc_bits < 23) {
      p.precision.acc.u = std::ldexp(1.0, -params.fp8_acc_bits);
      p.precision.description += absl::StrCat(" (FP8 partial sums with ", params.fp8_acc_bits, " fraction bits)");
    }
  }
  // Scalar FP8 scales fold into alpha and beta; vector ones stay per row / column.
  double sa = 1, sb = 1, sc = 1;
  auto scale_vec = [&](TensorSlot slot, int64_t len, std::vector<double>* v, double* s) {
    const Tensor* t = op.tensor(slot);
    if (t == nullptr) return true;
    const std::vector<double> x = DecodeAll(static_cast<DType>(t->meta.dtype), t->data);
    if (x.size() == 1 && len != 1 && t->meta.rows == 1) {
      *s = x[0];
    } else if (static_cast<int64_t>(x.size()) == len) {
      if (len == 1) *s = x[0]; else *v = x;
    } else {
      return false;
    }
    return true;
  };
  if (!scale_vec(TensorSlot::kScaleA, r.a_scale_mode == 3 ? m : 1, &p.a_scale, &sa) ||
      !scale_vec(TensorSlot::kScaleB, r.b_scale_mode == 3 ? n : 1, &p.b_scale, &sb) ||
      !scale_vec(TensorSlot::kScaleC, 1, nullptr, &sc) || !scale_vec(TensorSlot::kScaleD, 1, nullptr, &p.d_scale) ||
      !scale_vec(TensorSlot::kAuxScale, 1, nullptr, &p.aux_scale))
    return report->AddNotChecked("shape mismatch");
  if ((r.a_scale_ptr != 0 && op.tensor(TensorSlot::kScaleA) == nullptr) ||
      (r.b_scale_ptr != 0 && op.tensor(TensorSlot::kScaleB) == nullptr) ||
      (r.c_scale_ptr != 0 && need_c && op.tensor(TensorSlot::kScaleC) == nullptr) ||
      (r.d_scale_ptr != 0 && op.tensor(TensorSlot::kScaleD) == nullptr))
    return report->AddNotChecked(op.MissingTensorsReason());
  if (!fp8) sa = sb = sc = 1, p.d_scale = p.aux_scale = 1;
  if (need_ab && (!FitsBlas(m, n, k) || !FitsBlas(m * k, k * n, m * n))) return report->AddNotChecked("dimensions beyond BLAS indices");
  const uint64_t work = GemmReplayWork(m, n, k, batch, need_ab, need_c, false);
  if (work > max_work) {
    report->Warn(absl::StrCat(where, "replaying m=", m, " n=", n, " k=", k, " batch=", batch, " costs ",
                              FormatCount(work), " multiply-adds, over the budget of ", FormatCount(max_work),
                              ": not checked"));
    return report->AddNotChecked("replay over the work budget");
  }
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.fp8 = fp8;
  p.epilogue = e;
  p.alpha = alpha * sa * sb;
  p.beta = beta * sc;
  // A ROW operand is stored as its transpose: reading it with the opposite transpose gives the same op().
  p.transa = r.a.order == 1 ? (r.transa == 0 ? 1 : 0) : r.transa;
  p.transb = r.b.order == 1 ? (r.transb == 0 ? 1 : 0) : r.transb;
  if (need_ab) {
    p.a = DecodeAll(a_dt, a->data);
    p.b = DecodeAll(b_dt, b->data);
  } else {
    p.alpha = 0;
  }
  if (need_c) {
    p.c_in = DecodeAll(static_cast<DType>(c_in->meta.dtype), c_in->data);
    if (r.c.order == 1) p.c_in = Untranspose(p.c_in, m, n);
  }
  p.d_out = DecodeAll(d_dt, d->data);
  if (r.d.order == 1) p.d_out = Untranspose(p.d_out, m, n);
  if (BiasIn(e)) p.bias = DecodeAll(static_cast<DType>(bias->meta.dtype), bias->data);
  if (aux_in != nullptr) p.aux_in = DecodeAll(static_cast<DType>(aux_in->meta.dtype), aux_in->data);
  if (aux_out != nullptr) {
    p.aux_out = DecodeAll(static_cast<DType>(aux_out->meta.dtype), aux_out->data);
    p.aux_format = FormatOf(static_cast<DType>(aux_out->meta.dtype));
  }
  if (bias_grad != nullptr) {
    p.bias_grad = DecodeAll(static_cast<DType>(bias_grad->meta.dtype), bias_grad->data);
    p.bias_format = FormatOf(static_cast<DType>(bias_grad->meta.dtype));
  }
  p.has_amax_d = scalar(TensorSlot::kAmaxD, &p.amax_d);
  p.has_aux_amax = scalar(TensorSlot::kAuxAmax, &p.aux_amax);
  p.d_format = FormatOf(d_dt);
  const LtOutputs s = ReplayLtMatmul(p, params);
  const bool clean = s.d.violations + s.aux.violations + s.bias_grad.violations + s.amax_d.violations +
                         s.aux_amax.violations == 0;
  report->AddChecked("ltmatmul", name, s.d, clean);
  const std::string detail =
      absl::StrCat(p.precision.description, "; epilogue ", e, fp8 ? "; FP8 scales folded" : "", "; m=", m, " n=", n,
                   " k=", k, " batch=", batch, " op(A)=", std::string(1, "NTC"[r.transa]), " op(B)=",
                   std::string(1, "NTC"[r.transb]), " alpha=", FormatNumber(p.alpha), " beta=", FormatNumber(p.beta));
  struct Output {
    const char* check;
    const char* what;
    const ElementStats* stats;
    int64_t rows, cols;
  };
  for (const Output& o : {Output{"ltmatmul.replay", "D", &s.d, m, n}, Output{"ltmatmul.aux", "aux", &s.aux, m, n},
                          Output{"ltmatmul.bias_grad", "bias gradient", &s.bias_grad, bias_len, 1},
                          Output{"ltmatmul.amax", "amax_D", &s.amax_d, 1, 1},
                          Output{"ltmatmul.amax", "aux amax", &s.aux_amax, 1, 1}}) {
    const ElementStats& st = *o.stats;
    if (st.violations == 0) continue;
    Finding f;
    f.check = o.check;
    f.rank = rank;
    f.seq = op.seq;
    f.api = name.api;
    f.model = GetErrorModel(ErrorModelId::kLtMatmulDeterministic).name;
    f.max_abs_err = st.max_abs_err;
    f.max_rel_err = st.max_rel_err;
    f.threshold = st.worst_bound;
    f.ratio = st.worst_ratio;
    f.elements = st.elements;
    f.violations = st.violations;
    f.has_element = true;
    const uint64_t per = static_cast<uint64_t>(o.rows * o.cols);
    f.first.index = st.first_index;
    f.first.batch = static_cast<int64_t>(st.first_index / per);
    f.first.col = static_cast<int64_t>(st.first_index % per / static_cast<uint64_t>(o.rows));
    f.first.row = static_cast<int64_t>(st.first_index % static_cast<uint64_t>(o.rows));
    f.first.got = st.first_got;
    f.first.expected = st.first_ref;
    f.first.threshold = st.first_bound;
    f.message = absl::StrCat(st.violations, " of ", st.elements, " ", o.what, " elements exceed the bound; first at element ",
                             f.first.index, " (row ", f.first.row, ", col ", f.first.col, ", batch ", f.first.batch,
                             "): got ", FormatNumber(st.first_got), ", FP64 replay ", FormatNumber(st.first_ref),
                             ", bound ", FormatNumber(st.first_bound));
    f.detail = detail;
    report->AddFinding(std::move(f));
  }
}

}  // namespace ttrace::analyzer
