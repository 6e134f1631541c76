// The stand-in libcublas.so.13 (status_standin.h): every GEMM entry point the shim intercepts answers
// STANDIN_CUBLAS_STATUS; handles, streams, pointer and math modes are answered here (a handle is a pointer to
// this library's state: legacy stream, host pointer mode, default math).
#include "shim/testing/status_standin.h"

namespace {
int g_handle_state;
}  // namespace

extern "C" int cublasCreate_v2(void** handle) {
  *handle = &g_handle_state;
  return 0;
}
extern "C" int cublasDestroy_v2(void*) { return 0; }
extern "C" int cublasSetStream_v2(void*, void*) { return 0; }
extern "C" int cublasGetStream_v2(void*, void** stream) {
  *stream = nullptr;
  return 0;
}
extern "C" int cublasGetPointerMode_v2(void*, int* mode) {
  *mode = 0;  // CUBLAS_POINTER_MODE_HOST
  return 0;
}
extern "C" int cublasGetMathMode(void*, int* mode) {
  *mode = 0;  // CUBLAS_DEFAULT_MATH
  return 0;
}

#define STANDIN_CUBLAS(name) STANDIN_ANSWER(name, "STANDIN_CUBLAS_STATUS")
STANDIN_CUBLAS(cublasSgemm_v2)
STANDIN_CUBLAS(cublasSgemm_v2_64)
STANDIN_CUBLAS(cublasDgemm_v2)
STANDIN_CUBLAS(cublasDgemm_v2_64)
STANDIN_CUBLAS(cublasHgemm)
STANDIN_CUBLAS(cublasHgemm_64)
STANDIN_CUBLAS(cublasSgemmStridedBatched)
STANDIN_CUBLAS(cublasSgemmStridedBatched_64)
STANDIN_CUBLAS(cublasDgemmStridedBatched)
STANDIN_CUBLAS(cublasDgemmStridedBatched_64)
STANDIN_CUBLAS(cublasHgemmStridedBatched)
STANDIN_CUBLAS(cublasHgemmStridedBatched_64)
STANDIN_CUBLAS(cublasGemmEx)
STANDIN_CUBLAS(cublasGemmEx_64)
STANDIN_CUBLAS(cublasGemmStridedBatchedEx)
STANDIN_CUBLAS(cublasGemmStridedBatchedEx_64)
STANDIN_CUBLAS(cublasSgemmBatched)
STANDIN_CUBLAS(cublasSgemmBatched_64)
STANDIN_CUBLAS(cublasDgemmBatched)
STANDIN_CUBLAS(cublasDgemmBatched_64)
STANDIN_CUBLAS(cublasHgemmBatched)
STANDIN_CUBLAS(cublasHgemmBatched_64)
STANDIN_CUBLAS(cublasCgemmBatched)
STANDIN_CUBLAS(cublasCgemmBatched_64)
STANDIN_CUBLAS(cublasZgemmBatched)
STANDIN_CUBLAS(cublasZgemmBatched_64)
STANDIN_CUBLAS(cublasGemmBatchedEx)
STANDIN_CUBLAS(cublasGemmBatchedEx_64)
