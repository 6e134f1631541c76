// Handles, versions, status strings and the last-error message. Versions and strings are NVIDIA's: the values
// cuDNN 9.19.0 returns (checked by the conformance transcript, conformance.h).
#include "tools/simgpu/cudnn/handle.h"

#include <cudnn.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "tools/simgpu/cudnn/unimplemented.h"

namespace simgpu::cudnn {
namespace {

std::mutex handles_mu;
std::unordered_set<cudnnHandle_t>& LiveHandles() {
  static auto* handles = new std::unordered_set<cudnnHandle_t>;
  return *handles;
}

thread_local std::string last_error;

struct Callback {
  std::mutex mu;
  unsigned mask = 0;
  void* udata = nullptr;
  cudnnCallback_t fn = nullptr;
};
Callback& TheCallback() {
  static auto* callback = new Callback;
  return *callback;
}

const char* StatusName(cudnnStatus_t status) {
  switch (static_cast<int>(status)) {
#define SIMGPU_CUDNN_STATUS(name) \
  case name:                      \
    return #name;
#include "tools/simgpu/cudnn/status_table.inc"
#undef SIMGPU_CUDNN_STATUS
  }
  return "CUDNN_UNKNOWN_STATUS";
}

}  // namespace

bool IsLiveHandle(cudnnHandle_t handle) {
  std::lock_guard<std::mutex> lock(handles_mu);
  return LiveHandles().count(handle) != 0;
}

Stream* HandleStream(cudnnHandle_t handle) {
  const int saved = CurrentDevice();
  SetCurrentDevice(handle->device);
  Stream* stream = ResolveStream(handle->stream);
  SetCurrentDevice(saved);
  return stream;
}

cudnnStatus_t Fail(cudnnStatus_t status, const char* message) {
  last_error = message;
  return status;
}

int NotImplemented(const char* name) {
  last_error = std::string("simgpu: ") + name + " is not implemented";
  return CUDNN_STATUS_NOT_SUPPORTED;
}

}  // namespace simgpu::cudnn

using simgpu::cudnn::Fail;

extern "C" {

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }
size_t cudnnGetMaxDeviceVersion(void) { return 1210; }
size_t cudnnGetCudartVersion(void) { return 13010; }

const char* cudnnGetErrorString(cudnnStatus_t status) { return simgpu::cudnn::StatusName(status); }

void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (message == nullptr || max_size == 0) return;
  std::string& last = simgpu::cudnn::last_error;
  std::strncpy(message, last.c_str(), max_size - 1);
  message[max_size - 1] = '\0';
  last.clear();
}

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "value is null");
  switch (type) {
    case MAJOR_VERSION:
      *value = CUDNN_MAJOR;
      return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUDNN_MINOR;
      return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUDNN_PATCHLEVEL;
      return CUDNN_STATUS_SUCCESS;
  }
  return Fail(CUDNN_STATUS_BAD_PARAM, "unknown libraryPropertyType");
}

cudnnStatus_t cudnnGraphVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }

cudnnStatus_t cudnnSetCallback(unsigned mask, void* udata, cudnnCallback_t fptr) {
  auto& cb = simgpu::cudnn::TheCallback();
  std::lock_guard<std::mutex> lock(cb.mu);
  cb.mask = mask;
  cb.udata = udata;
  cb.fn = fptr;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetCallback(unsigned* mask, void** udata, cudnnCallback_t* fptr) {
  if (mask == nullptr || udata == nullptr || fptr == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null output");
  auto& cb = simgpu::cudnn::TheCallback();
  std::lock_guard<std::mutex> lock(cb.mu);
  *mask = cb.mask;
  *udata = cb.udata;
  *fptr = cb.fn;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (handle == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "handle is null");
  auto* h = new cudnnContext;
  h->device = simgpu::CurrentDevice();
  {
    std::lock_guard<std::mutex> lock(simgpu::cudnn::handles_mu);
    simgpu::cudnn::LiveHandles().insert(h);
  }
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (handle == nullptr) return CUDNN_STATUS_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(simgpu::cudnn::handles_mu);
    if (simgpu::cudnn::LiveHandles().erase(handle) == 0) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "not a live cudnnHandle_t");
    }
  }
  // Work already enqueued through the handle keeps running; cudnnDestroy synchronizes the device as NVIDIA's
  // documentation says (it "implicitly calls cudaDeviceSynchronize").
  simgpu::SynchronizeDevice(handle->device);
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!simgpu::cudnn::IsLiveHandle(handle)) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live cudnnHandle_t");
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (!simgpu::cudnn::IsLiveHandle(handle)) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live cudnnHandle_t");
  if (stream == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "stream is null");
  *stream = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
