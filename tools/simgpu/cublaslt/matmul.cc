// cublasLtMatmul: checks and scalars on the calling thread, arithmetic and faults on the stream (matmul.h states
// the semantics). The call number is taken on the host, in call order, so that it matches the order in which a
// tracer sees the calls, and from the core's gemm counter, so cuBLAS and cuBLASLt GEMMs share one numbering.
#include "tools/simgpu/cublaslt/matmul.h"

#include <cstring>
#include <vector>

#include "tools/simgpu/core/simgpu.h"

namespace simgpu::cublaslt {
namespace {

bool KnownOp(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }
bool IsFp8(uint32_t type) { return type == CUDA_R_8F_E4M3 || type == CUDA_R_8F_E5M2; }
bool Is16Bit(uint32_t type) { return type == CUDA_R_16F || type == CUDA_R_16BF; }

// The matrix's rows (COL) or columns (ROW): the least leading dimension.
uint64_t MinLd(const LayoutState& l) {
  uint64_t v = l.order == CUBLASLT_ORDER_ROW ? l.cols : l.rows;
  return v > 1 ? v : 1;
}

bool SupportedLayout(const LayoutState& l) {
  return (l.order == CUBLASLT_ORDER_COL || l.order == CUBLASLT_ORDER_ROW) &&
         l.batch_mode == CUBLASLT_BATCH_MODE_STRIDED && l.plane_offset == 0;
}

// The non-FP8 rows of matmul.h's table.
bool SupportedRegularTypes(int32_t compute, uint32_t a, uint32_t c, uint32_t d) {
  if (c != d) return false;
  switch (compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      if (a == CUDA_R_32F) return c == CUDA_R_32F;
      if (a == CUDA_R_16F || a == CUDA_R_16BF) return c == a || c == CUDA_R_32F;
      return false;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return a == CUDA_R_32F && c == CUDA_R_32F;
    default:
      return false;
  }
}

// The FP8 rows of matmul.h's table (A and B already known to be FP8, compute and scale checked).
bool SupportedFp8Types(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  if (a == CUDA_R_8F_E5M2 && b == CUDA_R_8F_E5M2) return false;
  if (d == CUDA_R_8F_E5M2 && a != CUDA_R_8F_E5M2 && b != CUDA_R_8F_E5M2) return false;
  if (Is16Bit(c)) return d == c || IsFp8(d);
  if (c == CUDA_R_32F) return d == CUDA_R_32F;
  return IsFp8(c) && c == d;
}

bool HasBias(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA ||
         e == CUBLASLT_EPILOGUE_BGRADB;
}
bool HasAux(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU ||
         e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}
bool SupportedEpilogue(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_GELU ||
         HasBias(e) || HasAux(e);
}

bool SameLayout(const LayoutState& x, const LayoutState& y) {
  return x.type == y.type && x.order == y.order && x.rows == y.rows && x.cols == y.cols && x.ld == y.ld &&
         x.batch_count == y.batch_count && (x.batch_count == 1 || x.batch_stride == y.batch_stride);
}

cublasStatus_t CheckShapes(MatmulProblem* p) {
  const MatmulDescState& s = p->desc;
  const LayoutState& a = p->a.layout;
  const LayoutState& b = p->b.layout;
  const LayoutState& c = p->c.layout;
  const LayoutState& d = p->d.layout;
  for (const LayoutState* l : {&a, &b, &c, &d}) {
    if (!SupportedLayout(*l)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (l->rows > INT32_MAX || l->cols > INT32_MAX) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (l->ld < 0 || static_cast<uint64_t>(l->ld) < MinLd(*l)) return CUBLAS_STATUS_INVALID_VALUE;
    if (l->batch_count < 1 || l->batch_count != d.batch_count) return CUBLAS_STATUS_INVALID_VALUE;
  }
  const uint64_t m = d.rows, n = d.cols;
  const uint64_t k = s.trans_a == CUBLAS_OP_N ? a.cols : a.rows;
  const uint64_t a_m = s.trans_a == CUBLAS_OP_N ? a.rows : a.cols;
  const uint64_t b_k = s.trans_b == CUBLAS_OP_N ? b.rows : b.cols;
  const uint64_t b_n = s.trans_b == CUBLAS_OP_N ? b.cols : b.rows;
  if (c.rows != m || c.cols != n || a_m != m || b_k != k || b_n != n) return CUBLAS_STATUS_INVALID_VALUE;
  p->m = static_cast<int64_t>(m);
  p->n = static_cast<int64_t>(n);
  p->k = static_cast<int64_t>(k);
  p->batch = d.batch_count;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CheckTypes(MatmulProblem* p) {
  const MatmulDescState& s = p->desc;
  const uint32_t a = p->a.layout.type, b = p->b.layout.type, c = p->c.layout.type, d = p->d.layout.type;
  if (s.scale_type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  p->fp8 = IsFp8(a) && IsFp8(b);
  if (p->fp8) {
    if (s.compute_type != CUBLAS_COMPUTE_32F && s.compute_type != CUBLAS_COMPUTE_32F_PEDANTIC) {
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (!SupportedFp8Types(a, b, c, d)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((s.a_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F && s.a_scale == nullptr) ||
        (s.b_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F && s.b_scale == nullptr)) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (s.trans_a == CUBLAS_OP_N || s.trans_b != CUBLAS_OP_N) return CUBLAS_STATUS_NOT_SUPPORTED;
    for (const Operand* o : {&p->a, &p->b, &p->c, &p->d}) {
      if (o->layout.order != CUBLASLT_ORDER_COL) return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  } else {
    if (a != b || !SupportedRegularTypes(s.compute_type, a, c, d)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (s.a_scale_mode || s.b_scale_mode) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (s.a_scale || s.b_scale || s.c_scale || s.d_scale || s.amax_d || s.aux_scale || s.aux_amax) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  }
  const bool fp8_default_bias = p->fp8 && !Is16Bit(c);
  const int32_t bias_default = fp8_default_bias ? CUDA_R_16BF : static_cast<int32_t>(p->fp8 ? c : d);
  const int32_t bias = s.bias_data_type == -1 ? bias_default : s.bias_data_type;
  if (bias != CUDA_R_32F && !Is16Bit(bias)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const int32_t aux = s.aux_data_type == -1 ? static_cast<int32_t>(d) : s.aux_data_type;
  if (aux != CUDA_R_32F && !Is16Bit(aux) && !IsFp8(aux)) return CUBLAS_STATUS_NOT_SUPPORTED;
  p->bias_type = static_cast<cudaDataType>(bias);
  p->aux_type = static_cast<cudaDataType>(aux);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CheckEpilogue(const MatmulProblem& p) {
  const MatmulDescState& s = p.desc;
  if (!SupportedEpilogue(s.epilogue)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (HasBias(s.epilogue) && s.bias == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (HasAux(s.epilogue)) {
    if (s.aux == nullptr || s.aux_ld < p.m || s.aux_ld % 8 != 0 || s.aux_batch_stride % 8 != 0) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

size_t ElemBytes(cudaDataType type) { return IsFp8(type) ? 1 : Is16Bit(type) ? 2 : 4; }

void ApplyMatmulFaults(const std::vector<Fault>& faults, const MatmulProblem& p) {
  const LayoutState& l = p.d.layout;
  const auto type = static_cast<cudaDataType>(l.type);
  const int64_t per_matrix = p.m * p.n;
  for (const Fault& f : faults) {
    if (f.action != FaultAction::kBitFlip && f.action != FaultAction::kValue) continue;
    CheckFaultElement(f, static_cast<uint64_t>(per_matrix * p.batch));
    const int64_t b = f.elem / per_matrix, r = f.elem % per_matrix;
    const int64_t j = r / p.m, i = r % p.m;
    const int64_t index = b * l.batch_stride + (l.order == CUBLASLT_ORDER_ROW ? i * l.ld + j : i + j * l.ld);
    auto* base = static_cast<char*>(const_cast<void*>(p.d.ptr));
    ApplyElementFault(f, base + index * static_cast<int64_t>(ElemBytes(type)), type);
  }
}

}  // namespace

cublasStatus_t CheckMatmul(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                           cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, MatmulProblem* problem) {
  if (desc == nullptr || a == nullptr || b == nullptr || c == nullptr || d == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  MatmulProblem& p = *problem;
  p.desc = *State(desc);
  p.a.layout = *State(a);
  p.b.layout = *State(b);
  p.c.layout = *State(c);
  p.d.layout = *State(d);
  const MatmulDescState& s = p.desc;
  if (!KnownOp(s.trans_a) || !KnownOp(s.trans_b)) return CUBLAS_STATUS_INVALID_VALUE;
  if (s.trans_c != CUBLAS_OP_N || s.fill_mode != CUBLAS_FILL_MODE_FULL) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (s.pointer_mode != CUBLASLT_POINTER_MODE_HOST && s.pointer_mode != CUBLASLT_POINTER_MODE_DEVICE) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  auto scalar_or_outer = [](int32_t mode) {
    return mode == CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F || mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  };
  if (!scalar_or_outer(s.a_scale_mode) || !scalar_or_outer(s.b_scale_mode) || s.c_scale_mode || s.d_scale_mode ||
      s.aux_scale_mode || s.d_out_scale_mode || s.d_out_scale != nullptr) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  cublasStatus_t status = CheckShapes(&p);
  if (status == CUBLAS_STATUS_SUCCESS) status = CheckTypes(&p);
  if (status == CUBLAS_STATUS_SUCCESS) status = CheckEpilogue(p);
  return status;
}

}  // namespace simgpu::cublaslt

extern "C" cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                         const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                         const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                         const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                         cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                         void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  using simgpu::cublaslt::MatmulProblem;
  if (lightHandle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  MatmulProblem p;
  cublasStatus_t status = simgpu::cublaslt::CheckMatmul(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (C == D && !simgpu::cublaslt::SameLayout(p.c.layout, p.d.layout)) return CUBLAS_STATUS_INVALID_VALUE;
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return CUBLAS_STATUS_EXECUTION_FAILED;

  p.a.ptr = A;
  p.b.ptr = B;
  p.c.ptr = C;
  p.d.ptr = D;
  p.call = simgpu::NextCallIndex(simgpu::FaultSite::kGemm);
  std::vector<simgpu::Fault> faults = simgpu::MatchingFaults(simgpu::FaultSite::kGemm, p.call);
  const bool device_scalars = p.desc.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE;
  const float host_alpha = device_scalars ? 0.0f : *static_cast<const float*>(alpha);
  const float host_beta = device_scalars ? 0.0f : *static_cast<const float*>(beta);
  const auto* device_alpha = static_cast<const float*>(alpha);
  const auto* device_beta = static_cast<const float*>(beta);
  simgpu::Enqueue(s, [p, faults = std::move(faults), device_scalars, host_alpha, host_beta, device_alpha,
                      device_beta] {
    simgpu::cublaslt::ComputeMatmul(p, device_scalars ? *device_alpha : host_alpha,
                                    device_scalars ? *device_beta : host_beta);
    if (!faults.empty()) simgpu::cublaslt::ApplyMatmulFaults(faults, p);
  });
  return CUBLAS_STATUS_SUCCESS;
}
