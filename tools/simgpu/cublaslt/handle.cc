// cuBLASLt handles, versions, status strings and the algorithm heuristic. simgpu has one algorithm (the arithmetic
// of matmul.h), so the heuristic answers with it whenever cublasLtMatmul would accept the problem.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstring>

#include "tools/simgpu/common/live_set.h"
#include "tools/simgpu/cublas/status_names.h"
#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cublaslt/matmul.h"

// cublasLt.h declares cublasLtHandle_t as a pointer to this incomplete type; simgpu defines it.
struct cublasLtContext {
  int device = 0;  // current device at cublasLtCreate
};

namespace simgpu::cublaslt {
namespace {

// Marks the algorithm structs the heuristic returns ("simgpuLt" in ASCII).
constexpr uint64_t kAlgoMagic = 0x73696d6770754c74ull;

LiveSet<cublasLtContext>& Handles() {
  static auto* handles = new LiveSet<cublasLtContext>;
  return *handles;
}

}  // namespace
}  // namespace simgpu::cublaslt

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int device = simgpu::CurrentDevice();
  if (device < 0 || device >= simgpu::DeviceCount()) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new cublasLtContext;
  h->device = device;
  simgpu::cublaslt::Handles().Insert(h);
  *lightHandle = h;
  return CUBLAS_STATUS_SUCCESS;
}

// Synchronizes the handle's device first, so no queued matmul outlives the handle (as cublasDestroy does).
cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!simgpu::cublaslt::Handles().Erase(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  simgpu::SynchronizeDevice(lightHandle->device);
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

// The status table is cuBLAS's: cuBLASLt returns the same cublasStatus_t names and strings.
const char* cublasLtGetStatusName(cublasStatus_t status) { return simgpu::cublas::StatusName(status); }

const char* cublasLtGetStatusString(cublasStatus_t status) { return simgpu::cublas::StatusString(status); }

// Returns simgpu's one algorithm (configuration ID 0, split-K 1, all else 0; workspace 0; one wave) when
// cublasLtMatmul would accept these descriptors, and otherwise the status cublasLtMatmul would return, with
// *returnAlgoCount = 0.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requestedAlgoCount <= 0 || heuristicResultsArray == nullptr || returnAlgoCount == nullptr ||
      preference == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  *returnAlgoCount = 0;
  simgpu::cublaslt::MatmulProblem problem;
  cublasStatus_t status = simgpu::cublaslt::CheckMatmul(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &problem);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  cublasLtMatmulHeuristicResult_t& r = heuristicResultsArray[0];
  memset(&r, 0, sizeof r);
  r.algo.data[0] = simgpu::cublaslt::kAlgoMagic;
  simgpu::cublaslt::State(&r.algo)->splitk_num = 1;
  r.workspaceSize = 0;
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
