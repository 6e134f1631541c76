// Allocation, copies and memsets. Copies and memsets are stream work; their synchronization with the host
// follows NVIDIA's "API synchronization behavior" notes:
// - cudaMemcpy: returns after the copy for every direction except device to device, which is only ordered;
// - cudaMemcpyAsync: ordered on its stream; a copy that reads or writes pageable host memory also returns only
//   after it ran (NVIDIA stages pageable memory before returning; the caller may reuse the buffer at once);
// - cudaMemset: asynchronous unless the target is pinned host memory; cudaMemsetAsync: ordered on its stream;
// - cudaFree / cudaFreeHost synchronize the device first, so no queued work touches freed memory.
#include <cstring>
#include <functional>
#include <future>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudart/cudart_internal.h"

namespace simgpu::cudart {
namespace {

// Runs `work` on the stream; when `wait`, returns only after it (and everything before it on the stream) ran.
void Submit(Stream* stream, std::function<void()> work, bool wait) {
  if (!wait) {
    Enqueue(stream, std::move(work));
    return;
  }
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  Enqueue(stream, [work = std::move(work), done] {
    work();
    done->set_value();
  });
  finished.wait();
}

bool IsDeviceSide(const void* p, size_t bytes) { return InAllocation(p, bytes, MemoryKind::kDevice); }

// Validates a copy and reports whether it touches pageable host memory (pageable) and whether it is device to
// device (d2d). A side named as device memory must lie inside one device allocation.
cudaError_t CheckCopy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, bool* pageable, bool* d2d) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  bool dst_dev, src_dev;
  if (kind == cudaMemcpyDefault) {
    dst_dev = IsDeviceSide(dst, count);
    src_dev = IsDeviceSide(src, count);
  } else {
    dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dst_dev && !IsDeviceSide(dst, count)) || (src_dev && !IsDeviceSide(src, count))) {
      return cudaErrorInvalidValue;
    }
  }
  *pageable = (!dst_dev && KindOf(dst) == MemoryKind::kUnregistered) ||
              (!src_dev && KindOf(src) == MemoryKind::kUnregistered);
  *d2d = dst_dev && src_dev;
  return cudaSuccess;
}

cudaError_t Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t handle, bool async) {
  if (count == 0) return cudaSuccess;
  bool pageable = false, d2d = false;
  cudaError_t status = CheckCopy(dst, src, count, kind, &pageable, &d2d);
  if (status != cudaSuccess) return Report(status);
  Stream* stream = ResolveStream(handle);
  if (stream == nullptr) return Report(cudaErrorInvalidResourceHandle);
  bool wait = async ? pageable : !d2d;
  Submit(stream, [dst, src, count] { memmove(dst, src, count); }, wait);
  return cudaSuccess;
}

cudaError_t Set(void* ptr, int value, size_t count, cudaStream_t handle, bool async) {
  if (count == 0) return cudaSuccess;
  if (ptr == nullptr) return Report(cudaErrorInvalidValue);
  bool pinned = InAllocation(ptr, count, MemoryKind::kHostPinned);
  if (!IsDeviceSide(ptr, count) && !pinned) return Report(cudaErrorInvalidValue);
  Stream* stream = ResolveStream(handle);
  if (stream == nullptr) return Report(cudaErrorInvalidResourceHandle);
  Submit(stream, [ptr, value, count] { memset(ptr, value, count); }, !async && pinned);
  return cudaSuccess;
}

cudaError_t HostAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return Report(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  *ptr = AllocHostPinned(size);
  return *ptr == nullptr ? Report(cudaErrorMemoryAllocation) : cudaSuccess;
}

}  // namespace
}  // namespace simgpu::cudart

using simgpu::cudart::Report;

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return Report(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (simgpu::cudart::ValidCurrentDevice() < 0) return Report(cudaErrorInvalidDevice);
  if (size == 0) return cudaSuccess;
  *devPtr = simgpu::AllocDevice(size);
  return *devPtr == nullptr ? Report(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  if (devPtr == nullptr) return cudaSuccess;
  simgpu::Allocation a = simgpu::FindAllocation(devPtr);
  if (a.kind != simgpu::MemoryKind::kDevice || a.base != devPtr) return Report(cudaErrorInvalidValue);
  simgpu::SynchronizeDevice(a.device);
  return simgpu::FreeDevice(devPtr) ? cudaSuccess : Report(cudaErrorInvalidValue);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return simgpu::cudart::HostAlloc(ptr, size); }

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  constexpr unsigned kKnown = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if ((flags & ~kKnown) != 0) return Report(cudaErrorInvalidValue);
  return simgpu::cudart::HostAlloc(pHost, size);
}

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  simgpu::Allocation a = simgpu::FindAllocation(ptr);
  if (a.kind != simgpu::MemoryKind::kHostPinned || a.base != ptr) return Report(cudaErrorInvalidValue);
  simgpu::SynchronizeDevice(a.device);
  return simgpu::FreeHostPinned(ptr) ? cudaSuccess : Report(cudaErrorInvalidValue);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return simgpu::cudart::Copy(dst, src, count, kind, nullptr, false);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return simgpu::cudart::Copy(dst, src, count, kind, stream, true);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return simgpu::cudart::Set(devPtr, value, count, nullptr, false);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return simgpu::cudart::Set(devPtr, value, count, stream, true);
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Allocation a = simgpu::FindAllocation(ptr);
  void* p = const_cast<void*>(ptr);
  *attributes = cudaPointerAttributes{};
  switch (a.kind) {
    case simgpu::MemoryKind::kDevice:
      attributes->type = cudaMemoryTypeDevice;
      attributes->device = a.device;
      attributes->devicePointer = p;
      break;
    case simgpu::MemoryKind::kHostPinned:
      attributes->type = cudaMemoryTypeHost;
      attributes->device = a.device;
      attributes->devicePointer = p;
      attributes->hostPointer = p;
      break;
    case simgpu::MemoryKind::kUnregistered:
      attributes->type = cudaMemoryTypeUnregistered;
      attributes->device = -2;
      attributes->hostPointer = p;
      break;
  }
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  int device = simgpu::cudart::ValidCurrentDevice();
  if (device < 0) return Report(cudaErrorInvalidDevice);
  if (free == nullptr || total == nullptr) return Report(cudaErrorInvalidValue);
  *total = simgpu::kDeviceMemoryBytes;
  *free = simgpu::kDeviceMemoryBytes - simgpu::DeviceBytesInUse(device);
  return cudaSuccess;
}

}  // extern "C"
