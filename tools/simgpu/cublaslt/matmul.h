// simgpu's cublasLtMatmul (libcublasLt.so.13): what it checks, what it computes, in which order and precision.
//
// Operation (cuBLASLt's definition): D = epilogue(alpha * op(A) * op(B) + beta * C) for each batch b, where op(X) is
// X (CUBLAS_OP_N) or its transpose (CUBLAS_OP_T, CUBLAS_OP_C); op(A) is m x k, op(B) k x n, C and D m x n, with
// m = rows(D), n = cols(D). A layout gives its matrix as stored: A is m x k for OP_N and k x m otherwise, B likewise.
// Element (r, c) of a matrix with leading dimension ld lives at index r + c * ld (CUBLASLT_ORDER_COL) or r * ld + c
// (CUBLASLT_ORDER_ROW); batch b adds b * STRIDED_BATCH_OFFSET elements. Each matrix has its own order.
//
// Supported (anything else returns CUBLAS_STATUS_NOT_SUPPORTED):
//   compute CUBLAS_COMPUTE_32F or _32F_PEDANTIC, scale type CUDA_R_32F, A = B type:
//     32F -> C = D 32F;  16F -> C = D 16F or 32F;  16BF -> C = D 16BF or 32F
//   compute CUBLAS_COMPUTE_32F_FAST_16F / _FAST_16BF / _FAST_TF32, scale 32F, A, B, C, D all 32F: every A and B
//     element is first rounded to FP16 / BF16 / TF32 (10 fraction bits) to nearest even (simgpu's model of the
//     tensor-core input conversion), then everything proceeds as for 32F.
//   FP8 (cuBLASLt's FP8 table for Hopper, the GPU simgpu reports): compute 32F, scale 32F, A and B each E4M3 or E5M2
//     (not both E5M2), A transposed and B not (the "TN" layout), all four matrices CUBLASLT_ORDER_COL, and
//       C 16BF with D 16BF or an FP8 type;  C 16F with D 16F or an FP8 type;  C = D 32F;  C = D of one FP8 type
//     (scale_C then converts C to the compute range); D E5M2 only when A or B is E5M2. The default bias type
//     (epilogues with bias) is C's type for a 16-bit C, BF16 otherwise.
//   Epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS, GELU_AUX, GELU_AUX_BIAS, DGELU, DGELU_BGRAD, BGRADA,
//   BGRADB; pointer modes HOST and DEVICE; strided batches; TRANSC = N, FILL_MODE = FULL; scale modes SCALAR_32F,
//   and for FP8 A and B also OUTER_VEC_32F (row-wise scaling: scale_A a vector of m floats, scale_B of n, and
//   element (i, j) uses alpha * scale_A[i] * scale_B[j]; the pointer must then be set).
//   Not supported: the ReLU bit-mask epilogues (RELU_AUX, RELU_AUX_BIAS, DRELU, DRELU_BGRAD), the vector pointer
//   modes, pointer-array batches, planar complex, the tiled orders (COL32, ...), block scaling (VEC16, VEC32,
//   VEC128, BLK128x128), integer, complex, FP16 and FP64 compute.
//
// Arithmetic, per output element (i, j) of batch b (every step rounded to FP32 unless stated):
//   acc  = sum over p of op(A)(i,p) * op(B)(p,j): operands widened to FP32 exactly, summed in the order and precision
//          of tools/simgpu/common/accumulate.h (SIMGPU_ACCUM; kFp32, or kFp8 for FP8 operands so that
//          SIMGPU_FP8_ACC_BITS applies, with promotion every kFp8PromoteInterval products unless FAST_ACCUM is set,
//          which turns promotion off as cuBLASLt documents); the call number is the GEMM call number below.
//   t    = alpha * acc                                (FP8: (alpha * scale_A * scale_B) * acc, left to right)
//   t    = t + beta * C(i,j)    when beta != 0        (FP8: t + (beta * scale_C) * C(i,j)); C is not read when
//                                                      beta == 0, so C may be NULL then
//   bias epilogues:   t = t + bias[i]   (bias + b * BIAS_BATCH_STRIDE, widened from the bias type)
//   GELU_AUX(_BIAS):  aux(i,j) = t, stored in the aux type (FP8: scale_aux * t)
//   RELU:  t = t > 0 ? t : 0 (NaN gives 0, as fmaxf(t, 0))
//   GELU:  t = fl32(0.5 t (1 + tanh(sqrt(2/pi) (t + 0.044715 t^3))))   (tanh approximation, evaluated in FP64)
//   DGELU(_BGRAD): t = fl32(t * gelu'(x)), x = aux(i,j) widened, gelu' the derivative of the tanh GELU above (FP64)
//   amax_D = max over all elements and batches of |t| (NaN ignored), written as a float when AMAX_D_POINTER is set
//            (likewise amax over the unscaled aux values to EPILOGUE_AUX_AMAX_POINTER)
//   D(i,j) = t (FP8: scale_D * t) stored in D's type, rounded to nearest even; FP8 saturates to the largest finite
//            value (common/nv_dtype.h, __NV_SATFINITE) as NVIDIA's FP8 kernels store.
//   DGELU_BGRAD: bias[i] = sum over j of the final t(i,j); BGRADA: bias[i] = sum over p of op(A)(i,p);
//   BGRADB: bias[j] = sum over p of op(B)(p,j) -- FP32 sums in accumulate.h's order, stored in the bias type.
// This is NVIDIA's documented FP8 formula: D = scale_D * epilogue(alpha * scale_A * scale_B * op(A) op(B) +
// beta * scale_C * C), amax_D = absmax(epilogue(...)) before scale_D, aux = scale_aux * aux_temp. A scale pointer
// left NULL means 1. Scale, amax and aux-scale pointers are device pointers read (or written) when the matmul runs.
// FP8 needs none of them; setting one for non-FP8 A/B returns CUBLAS_STATUS_INVALID_VALUE, as cuBLASLt documents for
// unsupported combinations.
// Aux: element (i, j) of batch b at aux + (b * AUX_BATCH_STRIDE + i + j * AUX_LD) elements; AUX_LD >= m and a
// multiple of 8, AUX_BATCH_STRIDE a multiple of 8 (else INVALID_VALUE). Aux type: EPILOGUE_AUX_DATA_TYPE, or D's
// type when unset (-1); bias type: BIAS_DATA_TYPE, or the default above when unset. Both accept 32F, 16F, 16BF
// (aux also E4M3 and E5M2).
//
// Status codes: CUBLAS_STATUS_NOT_INITIALIZED for a NULL handle (any other handle is accepted:
// NVIDIA documents that a cublasHandle_t cast to cublasLtHandle_t is valid); INVALID_VALUE for a NULL descriptor,
// alpha or beta, dimensions that disagree between the layouts, a leading dimension below the matrix's rows (COL) or
// columns (ROW), batch counts that differ or are < 1, in-place C == D with different C and D layouts, an unknown
// transpose, a missing bias or aux pointer, or scale pointers without FP8; NOT_SUPPORTED as listed above;
// EXECUTION_FAILED when the stream is not a live stream. workspace and algo are not used (any value is accepted;
// algo NULL means "run the heuristic", which always finds simgpu's one algorithm).
//
// Work runs on `stream` (simgpu::Enqueue): the call returns before D is written. Descriptors may be destroyed as
// soon as the call returns; host-mode alpha and beta are read during the call, device-mode ones on the stream.
//
// Call numbering and faults: every call that passes the checks takes simgpu::NextCallIndex(FaultSite::kGemm), the
// counter cuBLAS GEMMs share, so SIMGPU_FAULT's gemm call=N counts cuBLAS and cuBLASLt GEMMs together. Element E
// of a gemm fault is the logical index b * (m * n) + j * m + i of D(i, j) in batch b (column-major whatever D's
// order); it is applied to D after everything above, on the stream (amax and the epilogue outputs see the
// unfaulted values).
#ifndef TTRACE_TOOLS_SIMGPU_CUBLASLT_MATMUL_H_
#define TTRACE_TOOLS_SIMGPU_CUBLASLT_MATMUL_H_

#include <cublasLt.h>

#include <cstdint>

#include "tools/simgpu/cublaslt/descriptors.h"

namespace simgpu::cublaslt {

// A matrix operand as one call sees it: base pointer and its layout, copied at the call.
struct Operand {
  const void* ptr = nullptr;
  LayoutState layout;
};

// Everything a validated call needs to run, copied out of the descriptors at the call.
struct MatmulProblem {
  MatmulDescState desc;
  Operand a, b, c, d;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  cudaDataType bias_type = CUDA_R_32F;  // resolved (default or BIAS_DATA_TYPE)
  cudaDataType aux_type = CUDA_R_32F;   // resolved (D's type or EPILOGUE_AUX_DATA_TYPE)
  bool fp8 = false;
  int64_t call = 0;                     // the GEMM call number
};

// The checks above, in that order, for the descriptors of a call (pointers are checked by CheckPointers). On success
// fills *problem (all but the operand pointers and the call number).
cublasStatus_t CheckMatmul(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                           cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, MatmulProblem* problem);

// Runs the arithmetic above on the calling thread (the stream worker). alpha and beta are the resolved scalars.
void ComputeMatmul(const MatmulProblem& problem, float alpha, float beta);

}  // namespace simgpu::cublaslt

#endif  // TTRACE_TOOLS_SIMGPU_CUBLASLT_MATMUL_H_
