// Handle management. Handles are tracked so that a destroyed or foreign handle returns
// CUBLAS_STATUS_NOT_INITIALIZED instead of touching freed memory.
#include "tools/simgpu/cublas/handle.h"

#include <cstdint>

#include "tools/simgpu/common/live_set.h"
#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cublas/status_names.h"

namespace simgpu::cublas {
namespace {

LiveSet<cublasContext>& Handles() {
  static auto* handles = new LiveSet<cublasContext>;
  return *handles;
}

}  // namespace

bool IsLiveHandle(cublasHandle_t handle) { return Handles().Contains(handle); }

}  // namespace simgpu::cublas

using simgpu::cublas::IsLiveHandle;

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int device = simgpu::CurrentDevice();
  if (device < 0 || device >= simgpu::DeviceCount()) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new cublasContext;
  h->device = device;
  simgpu::cublas::Handles().Insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

// cublasDestroy synchronizes the device first, as cuBLAS documents, so no queued GEMM outlives its handle.
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  simgpu::SynchronizeDevice(handle->device);
  simgpu::cublas::Handles().Erase(handle);
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

// SetStream also resets the workspace to the default pool, as cuBLAS documents.
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* streamId) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (streamId == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *streamId = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  // cuBLAS requires a workspace aligned to at least 256 bytes.
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = workspace == nullptr ? 0 : workspaceSizeInBytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  unsigned base = static_cast<unsigned>(mode) & 0xfu;
  unsigned flags = static_cast<unsigned>(mode) & ~0xfu;
  bool known_base = base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH || base == CUBLAS_PEDANTIC_MATH ||
                    base == CUBLAS_TF32_TENSOR_OP_MATH || base == CUBLAS_FP32_EMULATED_BF16X9_MATH ||
                    base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
  if (!known_base || (flags & ~static_cast<unsigned>(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) != 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) { return simgpu::cublas::StatusName(status); }

const char* cublasGetStatusString(cublasStatus_t status) { return simgpu::cublas::StatusString(status); }

}  // extern "C"
