// Stream-ordered allocation (cudaMallocAsync / cudaFreeAsync) from each device's default memory pool. The
// allocation is made at once (its address is valid as soon as the call returns, as CUDA's is for later work on
// the stream); the free is stream work, so memory is released only after the work enqueued before it on the
// stream ran. The pool keeps nothing cached: released memory goes back at once, so "reserved" equals "used".
//
// During stream capture, cudaMallocAsync allocates at capture time and the address is fixed for every launch,
// as a graph allocation node's is; a cudaFreeAsync captured in the same capture hands the memory to the graph
// (freed when the graph and its executables are gone), and one of memory allocated outside the capture frees it
// at the first launch only (CUDA calls a second free undefined; simgpu must not free an address reused since).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudart/cudart_internal.h"

using simgpu::cudart::Report;

// cudaMemPool_t values handed to the application point at these.
struct CUmemPoolHandle_st {
  int device = 0;
  uint64_t release_threshold = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
};

namespace simgpu::cudart {
namespace {

struct PoolRegistry {
  std::mutex mu;
  CUmemPoolHandle_st pools[kMaxDevices];
  uint64_t used[kMaxDevices] = {};
  uint64_t used_high[kMaxDevices] = {};
  uint64_t reserved_high[kMaxDevices] = {};
  std::unordered_map<void*, std::pair<int, size_t>> live;  // async allocations: device, bytes
};

PoolRegistry& Pools() {
  static PoolRegistry* registry = [] {
    auto* r = new PoolRegistry;
    for (int d = 0; d < kMaxDevices; ++d) r->pools[d].device = d;
    return r;
  }();
  return *registry;
}

cudaMemPool_t PoolOf(int device) { return &Pools().pools[device]; }

int PoolDevice(cudaMemPool_t pool) {
  PoolRegistry& r = Pools();
  if (pool < &r.pools[0] || pool >= &r.pools[DeviceCount()]) return -1;
  return static_cast<int>(pool - &r.pools[0]);
}

void NoteAllocated(void* ptr, int device, size_t bytes) {
  PoolRegistry& r = Pools();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live[ptr] = {device, bytes};
  r.used[device] += bytes;
  r.used_high[device] = std::max(r.used_high[device], r.used[device]);
  r.reserved_high[device] = std::max(r.reserved_high[device], r.used[device]);
}

void Release(void* ptr) {
  ForgetAsyncAllocation(ptr);
  FreeDevice(ptr);
}

}  // namespace

void ForgetAsyncAllocation(void* ptr) {
  PoolRegistry& r = Pools();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(ptr);
  if (it != r.live.end()) {
    r.used[it->second.first] -= it->second.second;
    r.live.erase(it);
  }
}
}  // namespace simgpu::cudart

extern "C" {

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  if (devPtr == nullptr) return Report(cudaErrorInvalidValue);
  *devPtr = nullptr;
  simgpu::Stream* s = simgpu::ResolveStream(hStream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  if (size == 0) return cudaSuccess;
  const int device = simgpu::StreamDevice(s);
  const int saved = simgpu::CurrentDevice();
  simgpu::SetCurrentDevice(device);
  void* p = simgpu::AllocDevice(size);
  simgpu::SetCurrentDevice(saved);
  if (p == nullptr) return Report(cudaErrorMemoryAllocation);
  simgpu::cudart::NoteAllocated(p, device, size);
  simgpu::NoteCaptureAllocation(s, p);
  *devPtr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  simgpu::Allocation a = simgpu::FindAllocation(devPtr);
  if (devPtr == nullptr || a.kind != simgpu::MemoryKind::kDevice || a.base != devPtr) {
    return Report(cudaErrorInvalidValue);
  }
  simgpu::Stream* s = simgpu::ResolveStream(hStream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t status;
  if (simgpu::IsCapturing(s)) {
    if (simgpu::TakeCaptureAllocation(s, devPtr)) {
      status = simgpu::Enqueue(s, [] {});  // the graph's free node; the graph owns the memory now
    } else {
      auto freed = std::make_shared<std::atomic<bool>>(false);
      status = simgpu::Enqueue(s, [devPtr, freed] {
        if (!freed->exchange(true)) simgpu::cudart::Release(devPtr);
      });
    }
  } else {
    status = simgpu::Enqueue(s, [devPtr] { simgpu::cudart::Release(devPtr); });
  }
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr) return Report(cudaErrorInvalidValue);
  if (device < 0 || device >= simgpu::DeviceCount()) return Report(cudaErrorInvalidDevice);
  *memPool = simgpu::cudart::PoolOf(device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  return cudaDeviceGetDefaultMemPool(memPool, device);  // simgpu has no other pools to make current
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  if (device < 0 || device >= simgpu::DeviceCount()) return Report(cudaErrorInvalidDevice);
  if (simgpu::cudart::PoolDevice(memPool) != device) return Report(cudaErrorInvalidValue);
  return cudaSuccess;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (simgpu::cudart::PoolDevice(memPool) < 0) return Report(cudaErrorInvalidValue);
  return cudaSuccess;  // nothing is cached
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  const int d = simgpu::cudart::PoolDevice(memPool);
  if (d < 0 || value == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::cudart::PoolRegistry& r = simgpu::cudart::Pools();
  std::lock_guard<std::mutex> lock(r.mu);
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      *static_cast<int*>(value) = memPool->reuse_follow_event_dependencies;
      break;
    case cudaMemPoolReuseAllowOpportunistic: *static_cast<int*>(value) = memPool->reuse_allow_opportunistic; break;
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = memPool->reuse_allow_internal_dependencies;
      break;
    case cudaMemPoolAttrReleaseThreshold: *static_cast<uint64_t*>(value) = memPool->release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent: *static_cast<uint64_t*>(value) = r.used[d]; break;
    case cudaMemPoolAttrReservedMemHigh: *static_cast<uint64_t*>(value) = r.reserved_high[d]; break;
    case cudaMemPoolAttrUsedMemHigh: *static_cast<uint64_t*>(value) = r.used_high[d]; break;
    default: return Report(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  const int d = simgpu::cudart::PoolDevice(memPool);
  if (d < 0 || value == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::cudart::PoolRegistry& r = simgpu::cudart::Pools();
  std::lock_guard<std::mutex> lock(r.mu);
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      memPool->reuse_follow_event_dependencies = *static_cast<int*>(value);
      break;
    case cudaMemPoolReuseAllowOpportunistic: memPool->reuse_allow_opportunistic = *static_cast<int*>(value); break;
    case cudaMemPoolReuseAllowInternalDependencies:
      memPool->reuse_allow_internal_dependencies = *static_cast<int*>(value);
      break;
    case cudaMemPoolAttrReleaseThreshold: memPool->release_threshold = *static_cast<uint64_t*>(value); break;
    // The high-water marks may only be reset, to zero (then they restart from the current use).
    case cudaMemPoolAttrReservedMemHigh:
      if (*static_cast<uint64_t*>(value) != 0) return Report(cudaErrorInvalidValue);
      r.reserved_high[d] = r.used[d];
      break;
    case cudaMemPoolAttrUsedMemHigh:
      if (*static_cast<uint64_t*>(value) != 0) return Report(cudaErrorInvalidValue);
      r.used_high[d] = r.used[d];
      break;
    default: return Report(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

}  // extern "C"
