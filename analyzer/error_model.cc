// Derivations (docs/error-models.md has the long form).
//
// Rounding model (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §2.2 and §2.4): each
// operation of a format with unit roundoff u returns fl(x∘y) = (x∘y)(1+δ) + η with |δ| <= u, and η != 0 only
// near underflow, |η| <= eta. eta is the format's smallest normal where GPUs may flush subnormals to zero (FP32,
// BF16 through FP32, FP64), and half the smallest subnormal where they do not (FP16 and FP8 conversions). A value
// that passes through n roundings carries a factor Π(1+δ_i), and |Π(1+δ_i) - 1| <= (1+u)^n - 1 =: θ_n <= γ_n.
//
// gemm.deterministic. The device forms s = α·Σ_l a'_l b'_l + β·c0 in the accumulation format, then rounds s to
// C's format. Whatever the order, blocking, FMA use or split-k, each term a'_l b'_l passes through at most pk+2
// roundings: its product (p partial products per term: 1, or 9 for BF16x9), at most k-1 additions among the k
// terms plus one for β·c0 along any path of a summation tree, and α's scaling; β·c0 through at most k+2.
// Inputs a' = a(1+ε)+η_in are the FP32 inputs after conversion to TF32/FP16/BF16 when the compute type says so
// (ε, η_in = 0 otherwise), so |a'b' - ab| <= (2u_in+u_in²)|a||b| + η_in(1+u_in)(|a|+|b|) + η_in², and
// Σ|a'||b'| <= Q := (1+u_in)²P + η_in(1+u_in)(R+S) + kη_in² with P = Σ|a||b|, R = Σ_l|a_il|, S = Σ_l|b_lj|.
// Hence, with θ = θ_{pk+2}(u_acc) and Z = |c0|:
//   |ŝ - C| <= E := θ(|α|Q + |β|Z) + |α|(Q-P) + 2(pk+2)·eta_acc·max(1,|α|)·(1+θ)
// (every operation, additions included under flush-to-zero, may add eta_acc; α may scale it afterwards).
// The output rounding adds u_out|ŝ| + eta_out <= u_out(|C| + E) + eta_out, where u_out = 0 when C's format is
// not narrower than the accumulator (then the last accumulation rounding is the output rounding, counted in θ).
//   bound = (1+u_out)·E + u_out|C| + eta_out.
// The FP64 replay itself errs by at most E_ref = θ_{k+3}(2^-53)(|α|P + |β|Z) (sequential sum), and P, R, S are
// computed with relative error below 2θ_{k+3}(2^-53): both are added, and the whole bound is scaled by
// (1 + 64·2^-53) for the rounding of its own evaluation. An element is a violation when |Ĉ - C_ref| > bound.
//
// reduce.deterministic (all-reduce of n values x_i in format f; NCCL may reduce in any order, in f or in FP32
// with a final rounding): sum: each x_i passes through at most n-1 additions, |ŝ - s| <= θ_{n-1}(u)·Σ|x_i|,
// computed in a wider format and rounded once: <= θ_{n-1}(u)Σ|x_i|(1+u) + u|s|; both are covered by
//   bound = θ_{n-1}(u)·Σ|x_i|·(1+u) + u|s| + (2n+2)·eta.
// avg: NCCL either premultiplies by 1/n (two more roundings: 1/n itself and the product) or divides the sum
// (one): θ_{n+1}(u)·Σ|x_i|/n·(1+u) + u|s/n| + (2n+2)·eta. prod: n-1 multiplications, relative:
// θ_{n-1}(u)|p|(1+u) + u|p| + n·eta·Π max(1,|x_i|). max/min and integer types: exact.
#include "analyzer/error_model.h"

#include <cfloat>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ttrace::analyzer {

using format::DType;

namespace {

constexpr double kU64 = 0x1p-53;
constexpr double kEvalSafety = 1 + 64 * kU64;

constexpr ErrorModelInfo kModels[] = {
#define TTRACE_ERROR_MODEL_INFO(name, str, summary) {ErrorModelId::name, str, summary},
    TTRACE_ERROR_MODELS(TTRACE_ERROR_MODEL_INFO)
#undef TTRACE_ERROR_MODEL_INFO
};

// "2^-24" for a power of two, else the number.
std::string UnitName(double u) {
  int e;
  double m = std::frexp(u, &e);
  if (m == 0.5) return absl::StrCat("2^", e - 1);
  return absl::StrCat(u);
}

// The compute type of a typed legacy entry point (S/D/H gemm, plain, strided or pointer-array batched), which the handle's math
// mode selects as cuBLAS documents: CUBLAS_PEDANTIC_MATH makes it the _PEDANTIC one. -1 for the Ex entry points,
// which pass theirs.
int TypedComputeType(uint16_t api, bool pedantic) {
  using format::ApiId;
  switch (static_cast<ApiId>(api)) {
    case ApiId::kCublasSgemm: case ApiId::kCublasSgemm64:
    case ApiId::kCublasSgemmStridedBatched: case ApiId::kCublasSgemmStridedBatched64:
    case ApiId::kCublasSgemmBatched: case ApiId::kCublasSgemmBatched64:
      return pedantic ? 69 : 68;
    case ApiId::kCublasDgemm: case ApiId::kCublasDgemm64:
    case ApiId::kCublasDgemmStridedBatched: case ApiId::kCublasDgemmStridedBatched64:
    case ApiId::kCublasDgemmBatched: case ApiId::kCublasDgemmBatched64:
      return pedantic ? 71 : 70;
    case ApiId::kCublasHgemm: case ApiId::kCublasHgemm64:
    case ApiId::kCublasHgemmStridedBatched: case ApiId::kCublasHgemmStridedBatched64:
    case ApiId::kCublasHgemmBatched: case ApiId::kCublasHgemmBatched64:
      return pedantic ? 65 : 64;
    default:
      return -1;
  }
}

// Conversion formats of FP32 inputs under the "fast" compute types. TF32 uses u = 2^-10, the bound for
// truncation, because a tensor core fed FP32 registers ignores the low 13 bits (rounding would give 2^-11).
struct InputConversion {
  const char* name;
  double u, eta, max;
  double products_per_term;
};
constexpr InputConversion kTf32Conv = {"TF32", 0x1p-10, 0x1p-126, FLT_MAX, 1};
constexpr InputConversion kFp16OrTf32Conv = {"FP16 or TF32", 0x1p-10, 0x1p-25, 65504.0, 1};
constexpr InputConversion kBf16OrTf32Conv = {"BF16 or TF32", 0x1p-8, 0x1p-126, 3.3895313892515355e38, 1};
constexpr InputConversion kBf16x9Conv = {"3xBF16 (BF16x9)", 0x1p-24, 0x1p-126, FLT_MAX, 9};

}  // namespace

const ErrorModelInfo& GetErrorModel(ErrorModelId id) { return kModels[static_cast<int>(id)]; }

FloatFormat FormatOf(format::DType dtype) {
  switch (dtype) {
    case DType::kF32: return {"FP32", 0x1p-24, 0x1p-126, FLT_MAX};
    case DType::kF16: return {"FP16", 0x1p-11, 0x1p-25, 65504.0};
    case DType::kBF16: return {"BF16", 0x1p-8, 0x1p-126, 3.3895313892515355e38};
    case DType::kF64: return {"FP64", kU64, 0x1p-1022, DBL_MAX};
    case DType::kE4M3: return {"FP8 E4M3", 0x1p-4, 0x1p-10, 448.0};
    case DType::kE5M2: return {"FP8 E5M2", 0x1p-3, 0x1p-17, 57344.0};
    case DType::kI8: return {"INT8", 0, 0, 127.0};
    case DType::kU8: return {"UINT8", 0, 0, 255.0};
    case DType::kI32: return {"INT32", 0, 0, 2147483647.0};
    case DType::kU32: return {"UINT32", 0, 0, 4294967295.0};
    case DType::kI64: return {"INT64", 0, 0, 9.2233720368547758e18};
    case DType::kU64: return {"UINT64", 0, 0, 1.8446744073709552e19};
    case DType::kInvalid: break;
  }
  return {"invalid", 0, 0, 0};
}

FloatFormat Tf32Format() { return {"TF32", kTf32Conv.u, kTf32Conv.eta, kTf32Conv.max}; }

double Theta(double u, double n) {
  if (u == 0 || n <= 0) return 0;
  return std::expm1(n * std::log1p(u));
}

absl::StatusOr<GemmPrecision> ResolveGemmPrecision(uint16_t api, int32_t compute_type, int32_t math_mode,
                                                   format::DType a, format::DType b, format::DType c) {
  if (a == DType::kInvalid || b == DType::kInvalid || c == DType::kInvalid)
    return absl::UnimplementedError("operand types without an error model (complex or unknown)");
  const int mm = math_mode < 0 ? -1 : (math_mode & 0xf);
  const bool pedantic = mm == 2;
  int ct = compute_type;
  if (TypedComputeType(api, pedantic) >= 0) {
    ct = TypedComputeType(api, pedantic);
  } else {
    switch (ct) {  // legacy cudaDataType_t compute types, migrated as cublas_api.h does
      case 0: ct = pedantic ? 69 : 68; break;
      case 1: ct = pedantic ? 71 : 70; break;
      case 2: ct = pedantic ? 65 : 64; break;
      case 10: ct = pedantic ? 73 : 72; break;
      default: break;
    }
  }
  GemmPrecision p;
  const InputConversion* conv = nullptr;
  std::string note;
  switch (ct) {
    case 64: case 65: p.acc = FormatOf(DType::kF16); break;          // CUBLAS_COMPUTE_16F(_PEDANTIC)
    case 68:                                                         // CUBLAS_COMPUTE_32F
      p.acc = FormatOf(DType::kF32);
      if (mm == 3) conv = &kTf32Conv;                                // CUBLAS_TF32_TENSOR_OP_MATH
      if (mm == 1) conv = &kFp16OrTf32Conv;                          // CUBLAS_TENSOR_OP_MATH (= FAST_16F)
      if (mm == 4) conv = &kBf16x9Conv;                              // CUBLAS_FP32_EMULATED_BF16X9_MATH
      if (mm == -1) {
        conv = &kTf32Conv;
        note = " (math mode unknown: TF32 assumed possible)";
      }
      break;
    case 69: p.acc = FormatOf(DType::kF32); break;                   // CUBLAS_COMPUTE_32F_PEDANTIC
    case 74: p.acc = FormatOf(DType::kF32); conv = &kFp16OrTf32Conv; break;  // _32F_FAST_16F
    case 75: p.acc = FormatOf(DType::kF32); conv = &kBf16OrTf32Conv; break;  // _32F_FAST_16BF
    case 77: p.acc = FormatOf(DType::kF32); conv = &kTf32Conv; break;        // _32F_FAST_TF32
    case 78: p.acc = FormatOf(DType::kF32); conv = &kBf16x9Conv; break;      // _32F_EMULATED_16BFX9
    case 70:
      if (mm == 8) return absl::UnimplementedError("FP64 fixed-point emulation has no error model yet");
      p.acc = FormatOf(DType::kF64);
      break;
    case 71: p.acc = FormatOf(DType::kF64); break;
    case 79: return absl::UnimplementedError("FP64 fixed-point emulation has no error model yet");
    case 72: case 73: p.acc = FormatOf(DType::kI32); break;          // CUBLAS_COMPUTE_32I: exact
    default:
      return absl::UnimplementedError(absl::StrCat("compute type ", compute_type, " has no error model"));
  }
  std::string inputs = absl::StrCat(FormatOf(a).name, (a == b ? "" : absl::StrCat("/", FormatOf(b).name)));
  if (conv != nullptr && (a == DType::kF32 || b == DType::kF32)) {
    p.u_in = conv->u;
    p.eta_in = conv->eta;
    p.in_max = conv->max;
    p.products_per_term = conv->products_per_term;
    absl::StrAppend(&inputs, " as ", conv->name, " (u_in=", UnitName(p.u_in), ")");
  }
  const FloatFormat out = FormatOf(c);
  p.out_max = out.max_finite;
  if (out.u > p.acc.u) {
    p.u_out = out.u;
    p.eta_out = out.eta;
  }
  p.description = absl::StrCat(p.acc.name, " accumulation (u_acc=", UnitName(p.acc.u), "), ", inputs,
                               " inputs, ", out.name, " output",
                               p.u_out > 0 ? absl::StrCat(" (u_out=", UnitName(p.u_out), ")") : "", note);
  return p;
}

const char* BoundKindName(BoundKind kind) {
  return kind == BoundKind::kProbabilistic ? "probabilistic" : "deterministic";
}

ErrorModelId GemmModel(BoundKind kind) {
  return kind == BoundKind::kProbabilistic ? ErrorModelId::kGemmProbabilistic : ErrorModelId::kGemmDeterministic;
}

double ProbabilisticLambda(double n, double u, double failure) {
  return std::sqrt(2 * std::log(2 * std::max(n, 1.0) / failure)) / (1 - u);
}

double GammaTilde(double n, double u, double lambda) {
  return std::expm1(lambda * std::sqrt(n) * u + n * u * u / (1 - u));
}

GemmBound::GemmBound(const GemmPrecision& p, int64_t k, double alpha, double beta, BoundKind kind)
    : p_(p), k_(static_cast<double>(k)), alpha_(std::fabs(alpha)), beta_(std::fabs(beta)) {
  // With α = 0 the device forms β·C0 only (A and B are not read, as BLAS specifies) and so does the replay: no
  // k-term sum on either side.
  const double terms = alpha == 0 ? 0 : k_;
  const double roundings = p_.products_per_term * terms + 2 + p_.extra_roundings;
  theta_acc_ = Theta(p_.acc.u, roundings);
  if (kind == BoundKind::kProbabilistic && p_.acc.u > 0) {
    // Higham & Mary's γ̃ replaces θ where it is smaller (long sums); the deterministic θ always holds, so the
    // minimum holds with the probability of γ̃.
    const double gt = GammaTilde(roundings, p_.acc.u, ProbabilisticLambda(roundings, p_.acc.u, kProbabilisticFailure));
    theta_acc_ = std::min(theta_acc_, gt);
  }
  theta_ref_ = Theta(kU64, terms + 3);
  eta_count_ = 2 * roundings;
}

double GemmBound::Bound(const GemmElementTerms& t) const {
  if (std::isinf(theta_acc_)) return HUGE_VAL;  // no finite bound; Inf·0 below would give NaN (a violation)
  const double inflate = 1 + 2 * theta_ref_;
  const double P = t.abs_ab * inflate, R = t.abs_row_a * inflate, S = t.abs_col_b * inflate, Z = t.abs_c0;
  const double one_in = 1 + p_.u_in;
  const double Q = one_in * one_in * P + p_.eta_in * one_in * (R + S) + k_ * p_.eta_in * p_.eta_in;
  const double e_acc = theta_acc_ * (alpha_ * Q + beta_ * Z) + alpha_ * (Q - P) +
                       eta_count_ * p_.acc.eta * std::max(1.0, alpha_) * (1 + theta_acc_);
  const double e_ref = theta_ref_ * (alpha_ * P + beta_ * Z);
  const double bound =
      (1 + p_.u_out) * e_acc + p_.u_out * (std::fabs(t.ref) + e_ref) + p_.eta_out + e_ref;
  return bound * kEvalSafety;
}

GemmBoundAffine GemmBound::Affine() const {
  GemmBoundAffine a;
  if (std::isinf(theta_acc_)) {
    a.c0 = HUGE_VAL;
    return a;
  }
  // Bound() expanded: P, R, S carry the inflation; Q = oi²P + η_in·oi(R + S) + kη_in².
  const double inflate = 1 + 2 * theta_ref_, one_in = 1 + p_.u_in, oi2 = one_in * one_in, uo = p_.u_out;
  a.p = kEvalSafety * inflate * ((1 + uo) * (theta_acc_ * alpha_ * oi2 + alpha_ * (oi2 - 1)) + (uo + 1) * theta_ref_ * alpha_);
  a.rs = kEvalSafety * inflate * (1 + uo) * (theta_acc_ * alpha_ + alpha_) * p_.eta_in * one_in;
  a.z = kEvalSafety * ((1 + uo) * theta_acc_ * beta_ + (uo + 1) * theta_ref_ * beta_);
  a.ref = kEvalSafety * uo;
  const double keta2 = k_ * p_.eta_in * p_.eta_in;
  a.c0 = kEvalSafety * ((1 + uo) * (theta_acc_ * alpha_ * keta2 + alpha_ * keta2 +
                                    eta_count_ * p_.acc.eta * std::max(1.0, alpha_) * (1 + theta_acc_)) +
                        p_.eta_out);
  return a;
}

double GemmBound::SumBound(const GemmSumTerms& s) const {
  if (std::isinf(theta_acc_)) return HUGE_VAL;
  const double one_in = 1 + p_.u_in;
  const double Q = one_in * one_in * s.abs_ab + p_.eta_in * one_in * s.abs_rs + s.count * k_ * p_.eta_in * p_.eta_in;
  const double e_acc = theta_acc_ * (alpha_ * Q + beta_ * s.abs_c0) + alpha_ * (Q - s.abs_ab) +
                       s.count * eta_count_ * p_.acc.eta * std::max(1.0, alpha_) * (1 + theta_acc_);
  return (e_acc + p_.u_out * s.abs_out + s.count * p_.eta_out) * kEvalSafety;
}

bool GemmBound::OverflowPossible(const GemmElementTerms& t) const {
  const double one_in = 1 + p_.u_in;
  const double partial = (1 + theta_acc_) * (std::max(1.0, alpha_) * one_in * one_in * t.abs_ab + beta_ * t.abs_c0);
  if (partial * kEvalSafety >= p_.acc.max_finite) return true;
  return std::fabs(t.ref) + Bound(t) >= p_.out_max;
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kAvg: return "avg";
  }
  return "?";
}

ReduceBound::ReduceBound(const FloatFormat& f, ReduceOp op, int n) : f_(f), op_(op), n_(n) {
  const double chain = op_ == ReduceOp::kAvg ? n_ + 1 : n_ - 1;
  theta_ = Theta(f_.u, chain);
  theta_ref_ = Theta(kU64, n_ + 1);
}

double ReduceBound::Bound(const ReduceElementTerms& t) const {
  if (exact()) return 0;
  if (std::isinf(theta_)) return HUGE_VAL;
  const double u = f_.u;
  double b = 0;
  switch (op_) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: {
      const double mag = op_ == ReduceOp::kAvg ? t.abs_sum / n_ : t.abs_sum;
      const double e_ref = theta_ref_ * mag;
      b = theta_ * mag * (1 + u) + u * (std::fabs(t.ref) + e_ref) + (2 * n_ + 2) * f_.eta + e_ref;
      break;
    }
    case ReduceOp::kProd: {
      const double e_ref = theta_ref_ * t.abs_prod;
      b = theta_ * t.abs_prod * (1 + u) + u * (t.abs_prod + e_ref) + n_ * f_.eta * t.prod_scale * (1 + theta_) +
          e_ref;
      break;
    }
    default:
      break;
  }
  return b * kEvalSafety;
}

bool ReduceBound::OverflowPossible(const ReduceElementTerms& t) const {
  if (f_.u == 0) return false;
  const double partial = op_ == ReduceOp::kProd ? t.prod_scale : t.abs_sum;
  if (op_ == ReduceOp::kMax || op_ == ReduceOp::kMin) return false;
  return partial * (1 + theta_) * kEvalSafety >= f_.max_finite ||
         std::fabs(t.ref) + Bound(t) >= f_.max_finite;
}

}  // namespace ttrace::analyzer
