// Allocation, copies and memsets. Copies and memsets are stream work; their synchronization with the host
// follows NVIDIA's "API synchronization behavior" notes:
// - cudaMemcpy: returns after the copy for every direction except device to device, which is only ordered;
// - cudaMemcpyAsync: ordered on its stream; a copy that reads or writes pageable host memory also returns only
//   after it ran (NVIDIA stages pageable memory before returning; the caller may reuse the buffer at once);
// - cudaMemset: asynchronous unless the target is pinned host memory; cudaMemsetAsync: ordered on its stream;
// - cudaFree / cudaFreeHost synchronize the device first, so no queued work touches freed memory.
// Allocation and free are "potentially unsafe" during stream capture (simgpu::CheckUnsafeCall).
#include <cstring>
#include <functional>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudart/cudart_internal.h"

namespace simgpu::cudart {
namespace {

bool IsDeviceSide(const void* p, size_t bytes) { return InAllocation(p, bytes, MemoryKind::kDevice); }

// Validates a copy and reports whether it touches pageable host memory (pageable) and whether it is device to
// device (d2d). A side named as device memory must lie inside one device allocation.
// dst_bytes and src_bytes: the extent each side spans (a 2D copy's rows and pitches).
cudaError_t CheckCopy(void* dst, size_t dst_bytes, const void* src, size_t src_bytes, cudaMemcpyKind kind,
                      bool* pageable, bool* d2d) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  bool dst_dev, src_dev;
  if (kind == cudaMemcpyDefault) {
    dst_dev = IsDeviceSide(dst, dst_bytes);
    src_dev = IsDeviceSide(src, src_bytes);
  } else {
    dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dst_dev && !IsDeviceSide(dst, dst_bytes)) || (src_dev && !IsDeviceSide(src, src_bytes))) {
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
  cudaError_t status = CheckCopy(dst, count, src, count, kind, &pageable, &d2d);
  if (status != cudaSuccess) return Report(status);
  Stream* stream = ResolveStream(handle);
  if (stream == nullptr) return Report(cudaErrorInvalidResourceHandle);
  bool wait = async ? pageable : !d2d;
  status = EnqueueMaybeWait(stream, [dst, src, count] { memmove(dst, src, count); }, wait);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

// Row by row; each side spans (height - 1) * pitch + width bytes, which must lie in one allocation when it is
// device memory. Synchronization as for the 1D copies.
cudaError_t Copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                   cudaMemcpyKind kind, cudaStream_t handle, bool async) {
  if (width > dpitch || width > spitch) return Report(cudaErrorInvalidPitchValue);
  if (width == 0 || height == 0) return cudaSuccess;
  bool pageable = false, d2d = false;
  cudaError_t status = CheckCopy(dst, (height - 1) * dpitch + width, src, (height - 1) * spitch + width, kind,
                                 &pageable, &d2d);
  if (status != cudaSuccess) return Report(status);
  Stream* stream = ResolveStream(handle);
  if (stream == nullptr) return Report(cudaErrorInvalidResourceHandle);
  bool wait = async ? pageable : !d2d;
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  status = EnqueueMaybeWait(
      stream,
      [d, dpitch, s, spitch, width, height] {
        for (size_t row = 0; row < height; ++row) memmove(d + row * dpitch, s + row * spitch, width);
      },
      wait);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t Set(void* ptr, int value, size_t count, cudaStream_t handle, bool async) {
  if (count == 0) return cudaSuccess;
  if (ptr == nullptr) return Report(cudaErrorInvalidValue);
  bool pinned = InAllocation(ptr, count, MemoryKind::kHostPinned);
  if (!IsDeviceSide(ptr, count) && !pinned) return Report(cudaErrorInvalidValue);
  Stream* stream = ResolveStream(handle);
  if (stream == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t status = EnqueueMaybeWait(stream, [ptr, value, count] { memset(ptr, value, count); }, !async && pinned);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t HostAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return Report(cudaErrorInvalidValue);
  *ptr = nullptr;
  cudaError_t refused = CheckUnsafeCall();
  if (refused != cudaSuccess) return Report(refused);
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
  cudaError_t refused = simgpu::CheckUnsafeCall();
  if (refused != cudaSuccess) return Report(refused);
  if (size == 0) return cudaSuccess;
  *devPtr = simgpu::AllocDevice(size);
  return *devPtr == nullptr ? Report(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  if (devPtr == nullptr) {
    simgpu::NoteRuntimeUse();  // cudaFree(0) is the customary way to initialize the runtime and its context
    return cudaSuccess;
  }
  simgpu::Allocation a = simgpu::FindAllocation(devPtr);
  if (a.kind != simgpu::MemoryKind::kDevice || a.base != devPtr) return Report(cudaErrorInvalidValue);
  cudaError_t refused = simgpu::CheckUnsafeCall();
  if (refused != cudaSuccess) return Report(refused);
  simgpu::SynchronizeDevice(a.device);
  simgpu::cudart::ForgetAsyncAllocation(devPtr);
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
  cudaError_t refused = simgpu::CheckUnsafeCall();
  if (refused != cudaSuccess) return Report(refused);
  simgpu::SynchronizeDevice(a.device);
  return simgpu::FreeHostPinned(ptr) ? cudaSuccess : Report(cudaErrorInvalidValue);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return simgpu::cudart::Copy(dst, src, count, kind, nullptr, false);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return simgpu::cudart::Copy(dst, src, count, kind, stream, true);
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  return simgpu::cudart::Copy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  return simgpu::cudart::Copy2D(dst, dpitch, src, spitch, width, height, kind, stream, true);
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
