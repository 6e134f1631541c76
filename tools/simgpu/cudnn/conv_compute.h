// Internal to libcudnn.so.9 (simgpu): the arithmetic of convolution forward, backward data and backward filter,
// shared by the legacy entry points (cudnnConvolutionForward, ...) and the backend's convolution operations.
//
// Definitions (N batch, C input channels, K output channels, G groups, C/G and K/G channels per group; spatial
// dimensions d = 0 .. D-1 with input size I_d, filter size F_d, output size O_d, padding P_d, stride S_d, dilation
// L_d). Filter tap f (a multi-index over F) reads input position i_d = o_d * S_d - P_d + f'_d * L_d, where f' = f
// for CUDNN_CROSS_CORRELATION and f'_d = F_d - 1 - f_d for CUDNN_CONVOLUTION (the filter flipped).
//   forward          y[n, k, o]  = sum over (c', f)  of x[n, g*C/G + c', i(o, f)] * w[k, c', f],   g = k / (K/G)
//   backward data    dx[n, c, i] = sum over (k', f)  of dy[n, g*K/G + k', o] * w[g*K/G + k', c', f],
//                    g = c / (C/G), c' = c % (C/G), where o_d = (i_d + P_d - f'_d * L_d) / S_d
//   backward filter  dw[k, c', f] = sum over (n, o)  of dy[n, k, o] * x[n, g*C/G + c', i(o, f)],   g = k / (K/G)
// Every output element sums the same number of products, in the order the sums are written (c' outermost, then
// f in row-major order; k' then f; n then o in row-major order): a position outside the input (padding), or an
// o that is not an integer or outside the output in backward data, contributes the product of a zero operand
// and the other operand, as a GPU's implicit GEMM over zero-filled data does (so an Inf or NaN weight at such a
// position still gives NaN). The sum follows simgpu's accumulation order (SIMGPU_ACCUM, common/accumulate.h) in
// the precision below, numbered by the call's conv fault-site number.
//
// Precision: operands are widened exactly to FP32 (FP16, BF16, FP32 data) or FP64 (FP64 data). Accumulation in
// FP32, except FP64 for FP64 data and FP16 for FP16 data with an FP16 compute type (NVIDIA's TRUE_HALF_CONFIG).
// The result is out = alpha * sum (rounded to the accumulation precision, FP32 for FP16 accumulation), then, when
// beta != 0, out = out + beta * old (each operation rounded likewise; old is the output's prior value), stored
// in the output's type rounded to nearest even. When beta == 0 the output is not read (NaN there does not
// propagate), as cuDNN documents.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_CONV_COMPUTE_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_CONV_COMPUTE_H_

#include <cudnn.h>

#include <cstdint>

#include "tools/simgpu/common/accumulate.h"

namespace simgpu::cudnn {

constexpr int kMaxSpatial = 6;

enum class ConvKind { kForward, kBackwardData, kBackwardFilter };

// A strided tensor: element (i_0, ..., i_{r-1}) lives at data + sum(i_j * strides[j]) elements.
struct TensorView {
  void* data = nullptr;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int64_t strides[CUDNN_DIM_MAX] = {};
};

struct ConvGeometry {
  int spatial = 2;
  int64_t n = 0, c = 0, k = 0, groups = 1;
  int64_t in[kMaxSpatial] = {}, filter[kMaxSpatial] = {}, out[kMaxSpatial] = {};
  int64_t pad[kMaxSpatial] = {}, stride[kMaxSpatial] = {}, dilation[kMaxSpatial] = {};
  bool flip = false;  // CUDNN_CONVOLUTION
};

// x: [N, C, I...], w: [K, C/G, F...], y: [N, K, O...] (in forward terms; backward data reads y and w and writes
// x, backward filter reads x and y and writes w).
struct ConvProblem {
  ConvKind kind = ConvKind::kForward;
  ConvGeometry geometry;
  TensorView x, w, y;
  AccumPrecision precision = AccumPrecision::kFp32;
  int64_t call = 0;  // the conv fault-site call number (also numbers random accumulation orders)
};

// The tensor a convolution of `kind` writes, and its shape (N, C, I... / K, C/G, F... / N, K, O...).
const TensorView& ConvOutput(const ConvProblem& p);
int ConvOutputShape(const ConvProblem& p, int64_t dims[CUDNN_DIM_MAX]);

// Runs the convolution above on the calling thread. alpha and beta are the host scaling factors (float for FP32
// accumulation, converted exactly; double for FP64).
void RunConvolution(const ConvProblem& p, double alpha, double beta);

// The address of element `elem` of a strided tensor in memory order (the elem-th smallest address among its
// elements: dimensions ordered by decreasing stride, ties by index), or nullptr when elem >= the element count.
void* ElementInMemoryOrder(const TensorView& t, int rank, const int64_t* dims, uint64_t elem);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_CONV_COMPUTE_H_
