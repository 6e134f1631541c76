// cuDNN convolution replay: recomputes a convolution (forward, backward data, backward filter) in FP64 from the
// captured operands and compares every element of the captured output against conv.deterministic: the GEMM bound
// (error_model.h, gemm.deterministic) with k = the products each output element sums (docs/error-models.md).
//
// Two layers, as gemm_check.h: ReplayConv works on decoded operands (tests drive it with synthetic problems and
// simgpu-style accumulation orders); CheckConvOp takes an op of the trace model, decides whether it can be checked
// (the not-checked reasons of the report) and reports into a CheckReport. Single-threaded, no I/O. The oracle is
// written from cuDNN's documented definitions, sharing no code with simgpu.
#ifndef TTRACE_ANALYZER_CONV_CHECK_H_
#define TTRACE_ANALYZER_CONV_CHECK_H_

#include <cstdint>
#include <vector>

#include "analyzer/element_stats.h"
#include "analyzer/error_model.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"
#include "ttrace/format.h"

namespace ttrace::analyzer {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// A strided tensor, decoded: element (i_0, ..., i_{r-1}) is data[sum i_j * strides[j]].
struct ConvTensor {
  std::vector<double> data;
  int64_t strides[format::kConvMaxDims] = {};
};

// One convolution in forward terms (format.h: ConvRecord): x [N, C, in...], w [K, C/G, filter...],
// y [N, K, out...]. The direction says which two are inputs and which one is written; `out_before` holds the
// written tensor before the call (needed when beta != 0) with the written tensor's strides, `out_after` the
// captured result.
struct ConvProblem {
  ConvDirection direction = ConvDirection::kForward;
  int spatial = 2;
  int64_t n = 0, c = 0, k = 0, groups = 1;
  int64_t in[format::kConvMaxSpatial] = {}, filter[format::kConvMaxSpatial] = {}, out[format::kConvMaxSpatial] = {};
  int64_t pad[format::kConvMaxSpatial] = {}, stride[format::kConvMaxSpatial] = {},
          dilation[format::kConvMaxSpatial] = {};
  bool flip = false;  // CUDNN_CONVOLUTION: the filter is read flipped
  double alpha = 1, beta = 0;
  ConvTensor x, w, y;              // the two inputs of the direction (the written one may be empty)
  ConvTensor out_before, out_after;
  // Empty, or a bound on |x̂ − x| per element of x (x's strides) when the device reads x̂, not x: x computed on the
  // device by a pointwise prologue in a cuDNN graph (conv.fused, docs/error-models.md).
  ConvTensor x_err;
};

// One output element: the FP64 reference, conv.deterministic's bound on |ŷ − ref| (plus |α|·Σ e_x·|other operand|
// over the element's products, and conv.deterministic's magnitudes taken over |x| + e_x, when p.x_err is set) and
// whether a correct computation may overflow there.
struct ConvElement {
  double ref = 0, bound = 0;
  bool overflow = false;
};

// The elements of memory a strided tensor of `rank` dims occupies (1 + Σ (dims[i] - 1)·strides[i]: format.h,
// kConvX), or 0 when it cannot index a captured span safely: a dim below 1, a negative stride, arithmetic that
// overflows, or elements that overlap (more elements than the span holds, a stride of 0 under a dim above 1).
// Dims and strides come from the trace: untrusted.
int64_t StridedSpan(int rank, const int64_t* dims, const int64_t* strides);

// Products each output element sums: C/G·ΠF forward, K/G·ΠF backward data, N·ΠO backward filter (padding and
// stride holes count: their products are zero but a device may add them).
int64_t ConvTermsPerOutput(const ConvProblem& p);
// Output elements (row-major over the written tensor's logical dimensions).
int64_t ConvOutputElements(const ConvProblem& p);

// Compares p.out_after with the FP64 reference under conv.deterministic. Element index = row-major logical index
// of the written tensor (n, c, spatial... for x and y; k, c', filter... for w).
ElementStats ReplayConv(const ConvProblem& p, const GemmPrecision& precision);
// The reference and bound of every output element, in ReplayConv's element order (p.out_after not read).
std::vector<ConvElement> ConvReference(const ConvProblem& p, const GemmPrecision& precision);

// The GemmPrecision of a convolution's data, compute and math types (cuDNN's FLOAT, PSEUDO_HALF, PSEUDO_BFLOAT16,
// TRUE_HALF and DOUBLE configurations; FP32 data may be rounded to TF32 unless the math type is FMA, or to FP16
// with TENSOR_OP_MATH_ALLOW_CONVERSION). Unimplemented, with the reason, for the others.
absl::StatusOr<GemmPrecision> ResolveConvPrecision(int32_t data_type, int32_t compute_type, int32_t math_type,
                                                   int32_t out_type);

// Checks one convolution op of `rank` into `report`. Work (outputs × terms) is checked against max_work first.
void CheckConvOp(int rank, const Op& op, CheckReport* report, uint64_t max_work);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_CONV_CHECK_H_
