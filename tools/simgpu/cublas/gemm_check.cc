// GEMM argument checks and the compute-type table of gemm.h (cuBLAS's cublasGemmEx table), in one place so that
// every entry point accepts and rejects the same combinations.
#include "tools/simgpu/cublas/gemm.h"
#include "tools/simgpu/cublas/handle.h"

namespace simgpu::cublas {
namespace {

bool KnownOp(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }
bool AtLeast(int64_t ld, int64_t rows) { return ld >= (rows > 1 ? rows : 1); }

// A cudaDataType passed as computeType, mapped as cublasMigrateComputeType (cublas_api.h) maps it.
bool MigrateLegacy(int value, bool pedantic, cublasComputeType_t* out) {
  switch (value) {
    case CUDA_R_32F: *out = pedantic ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F; return true;
    case CUDA_R_64F: *out = pedantic ? CUBLAS_COMPUTE_64F_PEDANTIC : CUBLAS_COMPUTE_64F; return true;
    case CUDA_R_16F: *out = pedantic ? CUBLAS_COMPUTE_16F_PEDANTIC : CUBLAS_COMPUTE_16F; return true;
    case CUDA_R_32I: *out = pedantic ? CUBLAS_COMPUTE_32I_PEDANTIC : CUBLAS_COMPUTE_32I; return true;
    default: return false;
  }
}

}  // namespace

size_t ScaleBytes(GemmMath math) {
  switch (math) {
    case GemmMath::kF16: return 2;
    case GemmMath::kF64: return 8;
    default: return 4;  // float, int32
  }
}

cublasComputeType_t RoutineCompute(cublasHandle_t handle, cudaDataType type) {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  MigrateLegacy(type, (handle->math_mode & 0xf) == CUBLAS_PEDANTIC_MATH, &compute);
  return compute;
}

cublasStatus_t CheckGemm(const GemmDesc& d, cublasComputeType_t compute, cublasMath_t math_mode, GemmMath* math) {
  if (!KnownOp(d.trans_a) || !KnownOp(d.trans_b)) return CUBLAS_STATUS_INVALID_VALUE;
  if (d.m < 0 || d.n < 0 || d.k < 0 || d.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (!AtLeast(d.lda, d.trans_a == CUBLAS_OP_N ? d.m : d.k)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!AtLeast(d.ldb, d.trans_b == CUBLAS_OP_N ? d.k : d.n)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!AtLeast(d.ldc, d.m)) return CUBLAS_STATUS_INVALID_VALUE;

  const unsigned base_mode = static_cast<unsigned>(math_mode) & 0xfu;
  MigrateLegacy(static_cast<int>(compute), base_mode == CUBLAS_PEDANTIC_MATH, &compute);
  if (d.a_type != d.b_type) return CUBLAS_STATUS_NOT_SUPPORTED;
  const cudaDataType ab = d.a_type, c = d.c_type;
  auto only = [&](cudaDataType want_ab, cudaDataType want_c, GemmMath m) {
    if (ab != want_ab || c != want_c) return CUBLAS_STATUS_NOT_SUPPORTED;
    *math = m;
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return only(CUDA_R_16F, CUDA_R_16F, GemmMath::kF16);
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      return only(CUDA_R_64F, CUDA_R_64F, GemmMath::kF64);
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
      return only(CUDA_R_8I, CUDA_R_32I, GemmMath::kI32);
    case CUBLAS_COMPUTE_32F_FAST_16F:
      return only(CUDA_R_32F, CUDA_R_32F, GemmMath::kF32Fast16F);
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return only(CUDA_R_32F, CUDA_R_32F, GemmMath::kF32Fast16BF);
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return only(CUDA_R_32F, CUDA_R_32F, GemmMath::kF32Tf32);
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: {
      bool ok = (ab == CUDA_R_32F && c == CUDA_R_32F) || (ab == CUDA_R_8I && c == CUDA_R_32F) ||
                ((ab == CUDA_R_16F || ab == CUDA_R_16BF) && (c == ab || c == CUDA_R_32F));
      if (!ok) return CUBLAS_STATUS_NOT_SUPPORTED;
      *math = GemmMath::kF32;
      if (compute == CUBLAS_COMPUTE_32F && ab == CUDA_R_32F) {
        if (base_mode == CUBLAS_TF32_TENSOR_OP_MATH) *math = GemmMath::kF32Tf32;
        if (base_mode == CUBLAS_TENSOR_OP_MATH) *math = GemmMath::kF32Fast16F;
      }
      return CUBLAS_STATUS_SUCCESS;
    }
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

}  // namespace simgpu::cublas
