// Floating-point error models: the one list of models, the parameters of each number format, and the bounds the
// checks compare against. docs/error-models.md derives every formula used here; error_model.cc repeats the
// derivation next to the code.
//
// Every bound is deterministic: it holds for every summation order, blocking, split-k and FMA use, so a clean
// computation never exceeds it (no false alarm); the price is looseness for large k, which the summary's
// "tightness" (max err/bound on clean data) makes visible.
//
// Thread-compatible value types; no I/O.
#ifndef TTRACE_ANALYZER_ERROR_MODEL_H_
#define TTRACE_ANALYZER_ERROR_MODEL_H_

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ttrace/format.h"

namespace ttrace::analyzer {

// X(Enum, "name", "one-line statement of the model"): the one list of error models. Reports and JSON name the
// model a finding was judged by; docs/error-models.md has a section per entry.
#define TTRACE_ERROR_MODELS(X)                                                                            \
  X(kGemmDeterministic, "gemm.deterministic",                                                             \
    "|C^-C| <= (1+u_out)(g_{pk+2}(u_acc)(|a||A||B|+|b||C0|) + input conversion) + u_out|C| + underflow") \
  X(kGemmProbabilistic, "gemm.probabilistic",                                                             \
    "gemm.deterministic with g_{pk+2}(u_acc) replaced by min(it, exp(l*sqrt(n)*u + n*u^2/(1-u)) - 1), n = pk+2: "  \
    "Higham & Mary 2019, independent mean-zero rounding errors; each element fails with probability <= 2^-40") \
  X(kLtMatmulDeterministic, "ltmatmul.deterministic",                                                     \
    "gemm.deterministic before the epilogue, then bias, activation (Lipschitz x error + evaluation), scales, "  \
    "output rounding; FP8 accumulation precision a parameter")                                            \
  X(kConvDeterministic, "conv.deterministic",                                                             \
    "gemm.deterministic with k = products per output element (C/G*prod F forward, K/G*prod F backward data, "   \
    "N*prod O backward filter); direct and implicit-GEMM algorithms")                                     \
  X(kConvFused, "conv.fused",                                                                           \
    "conv.deterministic on the convolution, prologue errors carried through it (sum e_x|w|), each pointwise "   \
    "op (add, sub, mul, relu) propagating its inputs' bounds plus its FP32 rounding and its output type's")     \
  X(kSdpaForward, "sdpa.forward",                                                                        \
    "scores within g_{d+2}(u)|scale|sum|q||k|, softmax perturbed by e^{2E} and 7n+8 roundings, P rounded to Q's " \
    "type, P.V in FP32, output rounding; Stats within E + evaluation")                                   \
  X(kReduceDeterministic, "reduce.deterministic",                                                         \
    "sum/avg/prod over n ranks: g_{n-1}(u)*sum|x_i| + u|s| + underflow (avg, prod: see docs)")           \
  X(kExact, "exact", "result must equal the reference exactly (max, min, integer types)")

enum class ErrorModelId : uint8_t {
#define TTRACE_ERROR_MODEL_ENUM(name, str, summary) name,
  TTRACE_ERROR_MODELS(TTRACE_ERROR_MODEL_ENUM)
#undef TTRACE_ERROR_MODEL_ENUM
};

struct ErrorModelInfo {
  ErrorModelId id;
  const char* name;
  const char* summary;
};
const ErrorModelInfo& GetErrorModel(ErrorModelId id);

// A number format as the models see it.
struct FloatFormat {
  const char* name;   // "FP32", "TF32", ...
  double u;           // unit roundoff: one rounding changes x by at most u·|x| in the normal range; 0 = exact
  double eta;         // absolute error one operation may add near underflow (flush-to-zero allowed); 0 = exact
  double max_finite;  // overflow threshold
};
FloatFormat FormatOf(format::DType dtype);
FloatFormat Tf32Format();

// (1+u)^n - 1: the relative error of n chained roundings. Equal to γ_n = nu/(1-nu) to first order, never above
// it, and finite for every n (γ_n is not defined once nu >= 1).
double Theta(double u, double n);

// How one GEMM computes, as far as the error model needs to know.
struct GemmPrecision {
  std::string description;         // e.g. "FP32 accumulation, FP32 inputs as TF32, BF16 output"
  FloatFormat acc;                 // accumulation format (u_acc, eta_acc)
  double products_per_term = 1;    // partial products summed per a·b term (9 for BF16x9 emulation)
  double u_in = 0, eta_in = 0;     // conversion of FP32 inputs to a narrower compute format; 0 when none
  double in_max = 0;               // inputs above this overflow in that conversion; 0 when none
  double u_out = 0, eta_out = 0;   // conversion of the accumulator to C's type; 0 when C is not narrower
  double out_max = 0;              // overflow threshold of C's type
  double extra_roundings = 0;      // roundings on top of pk+2 (cuBLASLt's FP8 scale products)
};

// Resolves the record's compute type and math mode and the operand types into a GemmPrecision. Unimplemented,
// with the reason, for what has no model (complex types, FP64 fixed-point emulation, unknown compute types).
absl::StatusOr<GemmPrecision> ResolveGemmPrecision(uint16_t api, int32_t compute_type, int32_t math_mode,
                                                   format::DType a, format::DType b, format::DType c);

// Per-element magnitudes the GEMM bound needs, computed in FP64 by the replay (op() applied).
struct GemmElementTerms {
  double ref = 0;        // FP64 reference α·Σ_l a_il b_lj + β·c0_ij
  double abs_ab = 0;     // Σ_l |a_il|·|b_lj|
  double abs_c0 = 0;     // |c0_ij|, 0 when β = 0
  double abs_row_a = 0;  // Σ_l |a_il|
  double abs_col_b = 0;  // Σ_l |b_lj|
};

// Which accumulation term a GEMM bound uses. kDeterministic: θ_{pk+2}(u_acc), for every order and rounding
// pattern (gemm.deterministic). kProbabilistic: min(θ_{pk+2}, γ̃_{pk+2}(λ)) with λ from kProbabilisticFailure
// (gemm.probabilistic): holds with probability at least 1 - kProbabilisticFailure per element when the rounding
// errors are independent with mean zero (Higham & Mary, SIAM J. Sci. Comput. 2019); docs/error-models.md.
enum class BoundKind : uint8_t { kDeterministic, kProbabilistic };
const char* BoundKindName(BoundKind kind);  // "deterministic", "probabilistic"
ErrorModelId GemmModel(BoundKind kind);     // kGemmDeterministic, kGemmProbabilistic
inline constexpr double kProbabilisticFailure = 0x1p-40;  // per output element, about 9.1e-13

// λ such that n chained roundings exceed γ̃_n(λ) = exp(λ√n·u + n·u²/(1-u)) - 1 with probability at most
// `failure`: n·2·exp(-λ²(1-u)²/2) = failure.
double ProbabilisticLambda(double n, double u, double failure);
// γ̃_n(λ) above.
double GammaTilde(double n, double u, double lambda);

// Sums over a row (or column) of the per-element quantities of GemmElementTerms and of the captured output,
// for the projection check: Σ|a_il||b_lj| (P), Σ(R_i + S_j), Σ|c0|, Σ|Ĉ| and the number of elements summed.
struct GemmSumTerms {
  double abs_ab = 0, abs_rs = 0, abs_c0 = 0, abs_out = 0;
  double count = 0;
};

// Bound() written as an affine function of the terms: c0 + p·abs_ab + rs·(abs_row_a + abs_col_b) + z·abs_c0 +
// ref·|ref| (the same formula expanded; equal to Bound to within a few roundings, so a caller comparing against it
// keeps a relative margin, e.g. 2^-40). All coefficients are nonnegative: the bound increases with every term.
struct GemmBoundAffine {
  double c0 = 0, p = 0, rs = 0, z = 0, ref = 0;
  double At(double abs_ab, double rs_sum, double abs_c0, double abs_ref) const {
    return c0 + p * abs_ab + rs * rs_sum + z * abs_c0 + ref * abs_ref;
  }
};

// gemm.deterministic (or gemm.probabilistic) for one op: fixed precision, inner dimension k, α and β.
class GemmBound {
 public:
  GemmBound(const GemmPrecision& p, int64_t k, double alpha, double beta,
            BoundKind kind = BoundKind::kDeterministic);
  // The largest |Ĉ_ij - ref| a correct device computation can produce (includes the reference's own error).
  double Bound(const GemmElementTerms& t) const;
  // Σ over a set of elements of a bound β_ij on |Ĉ_ij - C_ij| (C exact) that uses the captured output instead of
  // the reference: β = E + u_out·|Ĉ| + η_out (round to nearest: |ŝ - fl(ŝ)| <= u·|fl(ŝ)|), E as in Bound. The
  // sums must already include their own FP64 evaluation error (inflated by the caller); the replay's error is not
  // included (the projection check adds its own).
  double SumBound(const GemmSumTerms& s) const;
  // Whether a correct computation may overflow to ±Inf (or Inf - Inf = NaN) at this element.
  bool OverflowPossible(const GemmElementTerms& t) const;
  // Bound() as an affine function of the terms (GemmBoundAffine); infinite coefficients when !finite().
  GemmBoundAffine Affine() const;
  // False when the accumulation term θ is infinite (k beyond what the accumulator's model can bound, e.g. FP16
  // accumulation with k > ~1.45M): such a GEMM cannot be checked at all.
  bool finite() const { return std::isfinite(theta_acc_); }

 private:
  GemmPrecision p_;
  double k_, alpha_, beta_;
  double theta_acc_, theta_ref_, eta_count_;
};

enum class ReduceOp : uint8_t { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };
const char* ReduceOpName(ReduceOp op);  // "sum", ...

// Per-element magnitudes of an n-rank reduction, computed in FP64.
struct ReduceElementTerms {
  double ref = 0;         // FP64 reduction (sum, prod, max, min, or sum/n)
  double abs_sum = 0;     // Σ|x_i|
  double abs_prod = 0;    // Π|x_i|
  double prod_scale = 1;  // Π max(1, |x_i|): bounds every partial product
};

// reduce.deterministic (sum, avg, prod) or exact (max, min) for an all-reduce of n ranks in format `f`. Every
// reduction of one rank is exact: its result is the input (avg scales by 1/1 or divides by 1, both exact).
class ReduceBound {
 public:
  ReduceBound(const FloatFormat& f, ReduceOp op, int n);
  bool exact() const { return op_ == ReduceOp::kMax || op_ == ReduceOp::kMin || f_.u == 0 || n_ == 1; }
  ErrorModelId model() const { return exact() ? ErrorModelId::kExact : ErrorModelId::kReduceDeterministic; }
  double Bound(const ReduceElementTerms& t) const;
  bool OverflowPossible(const ReduceElementTerms& t) const;

 private:
  FloatFormat f_;
  ReduceOp op_;
  double n_;
  double theta_, theta_ref_;
};

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_ERROR_MODEL_H_
