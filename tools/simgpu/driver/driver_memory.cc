// Allocation, free and pointer queries through the driver API, on the core's allocations (simgpu.h, "memory"):
// memory cuMemAlloc returns is the runtime's device memory and the other way round, and a CUdeviceptr is the
// allocation's host address. As in cudart/memory.cc: allocation and free are "potentially unsafe" under stream
// capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated), and a free synchronizes the owning
// device first so that no queued work touches freed memory.
//
// Where NVIDIA's documentation says so and cudart differs: a zero-byte allocation is CUDA_ERROR_INVALID_VALUE
// (cudart returns NULL and success), and freeing anything but the base of a live allocation of the right kind,
// NULL included, is CUDA_ERROR_INVALID_VALUE. Allocation needs a current context (its device owns the memory).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/driver/driver_internal.h"

namespace simgpu::driver {
namespace {

void* ToPointer(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
CUdeviceptr ToDevicePtr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

CUresult HostAlloc(void** pp, size_t bytes) {
  CUresult r = ReadyContext();
  if (r != CUDA_SUCCESS) return r;
  if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  r = ToResult(CheckUnsafeCall());
  if (r != CUDA_SUCCESS) return r;
  *pp = AllocHostPinned(bytes);
  return *pp == nullptr ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

// Frees the allocation based at `p` when it is of `kind`.
CUresult Free(void* p, MemoryKind kind) {
  CUresult r = ReadyContext();
  if (r != CUDA_SUCCESS) return r;
  Allocation a = FindAllocation(p);
  if (p == nullptr || a.kind != kind || a.base != p) return CUDA_ERROR_INVALID_VALUE;
  r = ToResult(CheckUnsafeCall());
  if (r != CUDA_SUCCESS) return r;
  SynchronizeDevice(a.device);
  bool freed = kind == MemoryKind::kDevice ? FreeDevice(p) : FreeHostPinned(p);
  return freed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace
}  // namespace simgpu::driver

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  CUresult r = simgpu::driver::ReadyContext();
  if (r != CUDA_SUCCESS) return r;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  r = simgpu::driver::ToResult(simgpu::CheckUnsafeCall());
  if (r != CUDA_SUCCESS) return r;
  void* p = simgpu::AllocDevice(bytesize);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = simgpu::driver::ToDevicePtr(p);
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return simgpu::driver::Free(simgpu::driver::ToPointer(dptr), simgpu::MemoryKind::kDevice);
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return simgpu::driver::HostAlloc(pp, bytesize); }

// Every flag is accepted and none changes the memory: simgpu's pinned memory is portable (any context may use
// it), mapped (its device address is its host address) and not write-combined in any way a program could see.
CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  constexpr unsigned kKnown = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if ((Flags & ~kKnown) != 0) {
    CUresult r = simgpu::driver::Ready();
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
  }
  return simgpu::driver::HostAlloc(pp, bytesize);
}

CUresult cuMemFreeHost(void* p) { return simgpu::driver::Free(p, simgpu::MemoryKind::kHostPinned); }

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  CUresult r = simgpu::driver::ReadyContext();
  if (r != CUDA_SUCCESS) return r;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *total = simgpu::kDeviceMemoryBytes;
  *free = simgpu::kDeviceMemoryBytes - simgpu::DeviceBytesInUse(simgpu::CurrentDevice());
  return CUDA_SUCCESS;
}

// The attributes simgpu describes: context, memory type, device and host pointer, device ordinal, range start and
// size. A pointer into no allocation simgpu made is CUDA_ERROR_INVALID_VALUE (NVIDIA: not allocated by, mapped by
// or registered with a context); attributes simgpu does not model are CUDA_ERROR_NOT_SUPPORTED, unknown ones
// CUDA_ERROR_INVALID_VALUE. Pinned memory belongs to the device that was current when it was allocated.
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && !simgpu::ContextBound()) return CUDA_ERROR_INVALID_CONTEXT;
  void* p = simgpu::driver::ToPointer(ptr);
  simgpu::Allocation a = simgpu::FindAllocation(p);
  const bool known = a.kind != simgpu::MemoryKind::kUnregistered;
  const bool device = a.kind == simgpu::MemoryKind::kDevice;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      if (!known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUcontext*>(data) = simgpu::driver::PrimaryContext(a.device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      if (!known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned*>(data) = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (!known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!known || device) return CUDA_ERROR_INVALID_VALUE;  // device memory has no host address to hand out
      *static_cast<void**>(data) = p;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      if (!known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<int*>(data) = a.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      if (!known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = simgpu::driver::ToDevicePtr(a.base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      if (!known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<size_t*>(data) = a.bytes;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
