// A null libcublas.so.13 for shim_call_bench: the version node and the entry points the benchmark and the shim
// call, each doing nothing but what its contract needs (a handle that remembers its stream; GEMMs that return
// success without touching memory). With it a direct call costs a few ns, so what the shim adds is measured
// alone instead of under simgpu's ~1.5 us (and noisy) stream enqueue. Never used by tests or the demo.
#include <cublas_api.h>

namespace {
struct NullHandle {
  cudaStream_t stream = nullptr;
};
}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(new NullHandle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete reinterpret_cast<NullHandle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  reinterpret_cast<NullHandle*>(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  *stream = reinterpret_cast<NullHandle*>(handle)->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t, cublasPointerMode_t* mode) {
  *mode = CUBLAS_POINTER_MODE_HOST;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t, cublasMath_t* mode) {
  *mode = CUBLAS_DEFAULT_MATH;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                              const float*, int, const float*, int, const float*, float*, int) {
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
