// libcuda.so.1 (simgpu): the driver entry points the runtime and frameworks reach for (device queries, primary
// contexts, cuGetProcAddress), over the simgpu core so that they describe the same devices and share the
// runtime's current device and initialization (simgpu.h, "driver state"). Contexts are the devices' primary
// contexts only; CUcontext values point at one static object per device. The thread's context stack
// (cuCtxPushCurrent / cuCtxPopCurrent) keeps its top in the core, as the thread's current device, so that the
// runtime's cudaSetDevice replaces the top as NVIDIA's runtime does; the contexts beneath it are kept here.
// Memory is in driver_memory.cc and driver_copy.cc, streams and capture in driver_streams.cc, events in
// driver_events.cc.
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare every ABI version of a function under its own name (cuDevice-
// PrimaryCtxRelease and cuDevicePrimaryCtxRelease_v2, ...), so each definition below is checked against NVIDIA's
// declaration of that exact symbol.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/driver/driver_internal.h"

// A context is known by its address: contexts[d] is the primary context of device d.
struct CUctx_st {};

namespace simgpu::driver {
namespace {

constexpr int kDriverVersion = 13000;

CUctx_st contexts[kMaxDevices] = {};
std::atomic<int> retained[kMaxDevices] = {};
std::atomic<unsigned> primary_flags[kMaxDevices] = {};
// The calling thread's context stack below its current context (device ordinals, bottom first). Not empty only
// while a context is current: popping the last context leaves none.
thread_local std::vector<int> contexts_below;

// CUdevice_attribute and cudaDeviceAttr share their values; spot checks across the enumerations' range.
static_assert(static_cast<int>(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == cudaDevAttrMaxThreadsPerBlock);
static_assert(static_cast<int>(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) == cudaDevAttrMultiProcessorCount);
static_assert(static_cast<int>(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) == cudaDevAttrComputeCapabilityMajor);
static_assert(static_cast<int>(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) ==
              cudaDevAttrMaxSharedMemoryPerBlockOptin);
static_assert(static_cast<int>(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) == cudaDevAttrMemoryPoolsSupported);
static_assert(static_cast<int>(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID) == cudaDevAttrHostNumaId);

bool ValidDevice(CUdevice dev) { return dev >= 0 && dev < DeviceCount(); }

// Initialized and `dev` valid.
CUresult ReadyDevice(CUdevice dev) {
  if (!DriverInitialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return ValidDevice(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// The device of `ctx`, or of the current context when ctx is null; -1 when there is none.
int DeviceOf(CUcontext ctx) {
  if (ctx != nullptr) return ContextDevice(ctx);
  return ContextBound() ? CurrentDevice() : -1;
}

CUresult Synchronize(CUcontext ctx) {
  if (!DriverInitialized()) return CUDA_ERROR_NOT_INITIALIZED;
  int device = DeviceOf(ctx);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (CheckDeviceWait(device) != cudaSuccess) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  SynchronizeDevice(device);
  return CUDA_SUCCESS;
}

CUresult SetPrimaryFlags(CUdevice dev, unsigned flags) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  // Scheduling policy (at most one of spin, yield, blocking sync), and the local-memory, coredump and
  // synchronous-memops flags. simgpu records them; none changes how it runs.
  constexpr unsigned kKnown = CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE |
                              CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS;
  const unsigned sched = flags & CU_CTX_SCHED_MASK;
  if ((flags & ~kKnown) != 0 || (sched != 0 && (sched & (sched - 1)) != 0)) return CUDA_ERROR_INVALID_VALUE;
  primary_flags[dev] = flags;
  return CUDA_SUCCESS;
}

CUresult ReleasePrimary(CUdevice dev) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  int count = retained[dev].load();
  do {
    if (count == 0) return CUDA_ERROR_INVALID_CONTEXT;
  } while (!retained[dev].compare_exchange_weak(count, count - 1));
  return CUDA_SUCCESS;
}

CUresult GetUuid(CUuuid* uuid, CUdevice dev) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp prop;
  DeviceProperties(dev, &prop);
  static_assert(sizeof uuid->bytes == sizeof prop.uuid.bytes);
  memcpy(uuid->bytes, prop.uuid.bytes, sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

// Pops the top of the thread's context stack: the context beneath becomes current, or none.
void PopContext() {
  if (contexts_below.empty()) {
    UnbindContext();
    return;
  }
  SetCurrentDevice(contexts_below.back());
  contexts_below.pop_back();
}

}  // namespace

CUresult Ready() { return DriverInitialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

CUresult ReadyContext() {
  if (!DriverInitialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return ContextBound() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUcontext PrimaryContext(int device) { return &contexts[device]; }

int ContextDevice(CUcontext ctx) {
  for (int d = 0; d < DeviceCount(); ++d) {
    if (ctx == &contexts[d]) return d;
  }
  return -1;
}

}  // namespace simgpu::driver

using simgpu::driver::Ready;
using simgpu::driver::ReadyDevice;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  simgpu::InitializeDriver();
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = simgpu::driver::kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define SIMGPU_CU_ERROR(code, text) \
  case code:                        \
    *pStr = #code;                  \
    return CUDA_SUCCESS;
#include "tools/simgpu/driver/error_table.inc"
#undef SIMGPU_CU_ERROR
  }
  *pStr = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define SIMGPU_CU_ERROR(code, text) \
  case code:                        \
    *pStr = text;                   \
    return CUDA_SUCCESS;
#include "tools/simgpu/driver/error_table.inc"
#undef SIMGPU_CU_ERROR
  }
  *pStr = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!simgpu::driver::ValidDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = simgpu::DeviceCount();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp prop;
  simgpu::DeviceProperties(dev, &prop);
  size_t n = strnlen(prop.name, sizeof prop.name);
  if (n > static_cast<size_t>(len) - 1) n = static_cast<size_t>(len) - 1;
  memcpy(name, prop.name, n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return simgpu::DeviceAttribute(static_cast<cudaDeviceAttr>(attrib), dev, pi) ? CUDA_SUCCESS
                                                                                : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = simgpu::kDeviceMemoryBytes;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return simgpu::driver::GetUuid(uuid, dev); }
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) { return simgpu::driver::GetUuid(uuid, dev); }

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp prop;
  simgpu::DeviceProperties(dev, &prop);
  *major = prop.major;
  *minor = prop.minor;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int device = simgpu::driver::DeviceOf(nullptr);
  *pctx = device >= 0 && device < simgpu::DeviceCount() ? &simgpu::driver::contexts[device] : nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  // NULL pops the stack (a no-op when it is empty); a context replaces its top.
  if (ctx == nullptr) {
    if (simgpu::ContextBound()) simgpu::driver::PopContext();
    return CUDA_SUCCESS;
  }
  int device = simgpu::driver::ContextDevice(ctx);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  simgpu::SetCurrentDevice(device);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  int device = simgpu::driver::ContextDevice(ctx);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (simgpu::ContextBound()) simgpu::driver::contexts_below.push_back(simgpu::CurrentDevice());
  simgpu::SetCurrentDevice(device);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  CUresult r = simgpu::driver::ReadyContext();
  if (r != CUDA_SUCCESS) return r;
  if (pctx != nullptr) *pctx = simgpu::driver::PrimaryContext(simgpu::CurrentDevice());
  simgpu::driver::PopContext();
  return CUDA_SUCCESS;
}

// The CUDA 2.0 ABIs of push and pop: the same calls on primary contexts.
CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }
CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }

CUresult cuCtxGetDevice(CUdevice* device) { return cuCtxGetDevice_v2(device, nullptr); }

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int d = simgpu::driver::DeviceOf(ctx);
  if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = d;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() { return simgpu::driver::Synchronize(nullptr); }
CUresult cuCtxSynchronize_v2(CUcontext ctx) { return simgpu::driver::Synchronize(ctx); }

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ++simgpu::driver::retained[dev];
  *pctx = &simgpu::driver::contexts[dev];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return simgpu::driver::ReleasePrimary(dev); }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return simgpu::driver::ReleasePrimary(dev); }

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return simgpu::driver::SetPrimaryFlags(dev, flags);
}
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return simgpu::driver::SetPrimaryFlags(dev, flags);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  CUresult r = ReadyDevice(dev);
  if (r != CUDA_SUCCESS) return r;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = simgpu::driver::primary_flags[dev];
  *active = simgpu::driver::retained[dev] > 0 || simgpu::PrimaryContextUsed(dev) ? 1 : 0;
  return CUDA_SUCCESS;
}

}  // extern "C"
