// cuBLASLt matmul replay: recomputes D = scale_d · epilogue(α·scale_a·scale_b·op(A)·op(B) + β·scale_c·C) in FP64
// from the captured operands, with the epilogue's bias, activation (ReLU, GELU in its tanh form), aux output,
// backward forms (DGELU, bias gradients BGRADA, BGRADB, DGELU_BGRAD) and amax, and compares every output against
// the ltmatmul.deterministic bound (docs/error-models.md derives it).
//
// Two layers, as gemm_check.h: ReplayLtMatmul works on decoded operands (tests drive it with synthetic problems);
// CheckLtMatmulOp takes an op of the trace model, decides whether it can be checked (reasons as in the report's
// not-checked counts) and reports into a CheckReport. Single-threaded, no I/O. The oracle shares no arithmetic
// with simgpu: it is written from NVIDIA's documented semantics.
#ifndef TTRACE_ANALYZER_LT_CHECK_H_
#define TTRACE_ANALYZER_LT_CHECK_H_

#include <cstdint>
#include <vector>

#include "analyzer/element_stats.h"
#include "analyzer/error_model.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// Parameters of ltmatmul.deterministic that no trace can tell.
struct LtModelParams {
  // Fraction bits an FP8 GEMM's tensor-core partial sums keep (truncated) before promotion to FP32: DeepSeek-V3
  // reports "around 14 bits" on H800; 13 leaves a bit of margin. 23 or more: FP32 accumulation.
  int fp8_acc_bits = 13;
  // Absolute error of the device's tanh inside GELU and its derivative (tanh.approx.f32 errs by about 2^-11;
  // 2^-10 covers it). 0 models a correctly rounded evaluation (simgpu's, in FP64).
  double tanh_abs_err = 0x1p-10;
};

// cublasLtEpilogue_t values the oracle knows.
enum LtEpilogue : uint32_t {
  kLtEpiDefault = 1, kLtEpiRelu = 2, kLtEpiBias = 4, kLtEpiReluBias = 6, kLtEpiGelu = 32, kLtEpiGeluBias = 36,
  kLtEpiGeluAux = 160, kLtEpiGeluAuxBias = 164, kLtEpiDGelu = 192, kLtEpiDGeluBGrad = 208, kLtEpiBGradA = 256,
  kLtEpiBGradB = 512,
  kLtEpiReluAux = 130, kLtEpiReluAuxBias = 134, kLtEpiDRelu = 136, kLtEpiDReluBGrad = 152,  // bit masks: unchecked
};

// One call's operands, decoded: A and B column-major as stored (the transposes say how to read them; a ROW-order
// operand arrives here as its transpose), C, D and aux m x n column-major, batches back to back; an operand of one
// batch is shared by all. Scalar FP8 scales are folded into alpha and beta by the caller; vector scales are given.
struct LtProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  uint8_t transa = 0, transb = 0;
  double alpha = 1, beta = 0;            // α·scale_a·scale_b and β·scale_c
  uint32_t epilogue = kLtEpiDefault;
  bool fp8 = false;                      // FP8 A and B: scale_d, the aux scale and 2 more roundings apply
  GemmPrecision precision;               // of the GEMM up to the epilogue (FP32 value, no output rounding)
  std::vector<double> a, b, c_in;
  std::vector<double> a_scale, b_scale;  // OUTER_VEC_32F: one per row of D / column of D; empty: none
  std::vector<double> bias;              // m (n for BGRADB) per batch
  std::vector<double> aux_in;            // DGELU's pre-activation
  double d_scale = 1, aux_scale = 1;
  // Captured outputs (empty / false when absent) and their formats.
  std::vector<double> d_out, aux_out, bias_grad;
  bool has_amax_d = false, has_aux_amax = false;
  double amax_d = 0, aux_amax = 0;
  FloatFormat d_format{}, aux_format{}, bias_format{};
};

struct LtOutputs {
  ElementStats d, aux, bias_grad, amax_d, aux_amax;
};

// Compares every captured output with the FP64 reference under ltmatmul.deterministic.
LtOutputs ReplayLtMatmul(const LtProblem& p, const LtModelParams& params);

// The GELU of NVIDIA's documentation (tanh form) and its derivative, in FP64.
double LtGelu(double x);
double LtGeluGrad(double x);
// sup |LtGeluGrad|: the Lipschitz constant of GELU (tested against a fine grid).
inline constexpr double kGeluLipschitz = 1.13;

// Checks one cublasLtMatmul op of `rank` into `report` (checked, not checked with a reason, or findings).
void CheckLtMatmulOp(int rank, const Op& op, CheckReport* report, const LtModelParams& params, uint64_t max_work);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_LT_CHECK_H_
