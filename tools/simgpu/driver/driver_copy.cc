// Copies and memsets through the driver API: stream work on the core's streams, synchronized with the host as
// NVIDIA's "API synchronization behavior" notes say and as cudart/memory.cc does for the runtime:
// - cuMemcpyHtoD/DtoH/DtoD: on the legacy stream of the current context; they return after the copy, except
//   device to device, which is only ordered;
// - cuMemcpy*Async: ordered on their stream; a copy that reads or writes pageable host memory (memory simgpu did
//   not allocate) also returns only after it ran, and so cannot be captured: on a capturing stream it is refused
//   with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture invalidated. Pinned memory copies asynchronously;
// - cuMemsetD8/D32: asynchronous unless the target is pinned host memory; cuMemsetD32Async: ordered on its stream.
// A range named as device memory must lie inside one device or pinned allocation (pinned memory is mapped: its
// device address is its host address), else CUDA_ERROR_INVALID_VALUE; a host side must not be NULL. simgpu has
// no CUDA arrays: a 2D copy from or to CU_MEMORYTYPE_ARRAY is CUDA_ERROR_INVALID_VALUE.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/driver/driver_internal.h"

namespace simgpu::driver {
namespace {

// EnqueueMaybeWait (simgpu.h) as the driver reports it.
CUresult Submit(Stream* stream, std::function<void()> work, bool wait) {
  return ToResult(EnqueueMaybeWait(stream, std::move(work), wait));
}

void* ToPointer(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

bool DeviceAddressable(const void* p, size_t bytes) {
  return InAllocation(p, bytes, MemoryKind::kDevice) || InAllocation(p, bytes, MemoryKind::kHostPinned);
}

// One side of a copy: its first byte, whether it is device memory, whether it is pageable host memory.
struct Side {
  void* p = nullptr;
  bool device = false;
  bool pageable = false;
};

// A side the caller names as device memory (`named_device`) or as host memory, spanning `bytes`. A range that
// starts inside an allocation simgpu made must end inside it, whatever the side is named.
CUresult MakeSide(void* p, size_t bytes, bool named_device, Side* side) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Allocation a = FindAllocation(p);
  if (named_device && a.kind == MemoryKind::kUnregistered) return CUDA_ERROR_INVALID_VALUE;
  if (a.kind != MemoryKind::kUnregistered && !InAllocation(p, bytes, a.kind)) return CUDA_ERROR_INVALID_VALUE;
  side->p = p;
  side->device = a.kind == MemoryKind::kDevice;
  side->pageable = a.kind == MemoryKind::kUnregistered;
  return CUDA_SUCCESS;
}

// Initialized, the stream resolved (0 for the synchronous forms: the current context's legacy stream).
CUresult ResolveFor(CUstream handle, Stream** stream) {
  CUresult r = Ready();
  return r != CUDA_SUCCESS ? r : ResolveDriverStream(handle, stream);
}

// The synchronous forms wait unless both sides are device memory; the asynchronous ones when a side is pageable.
bool MustWait(const Side& dst, const Side& src, bool async) {
  return async ? dst.pageable || src.pageable : !(dst.device && src.device);
}

CUresult Copy(void* dst, bool dst_device, const void* src, bool src_device, size_t count, CUstream handle,
              bool async) {
  Stream* stream = nullptr;
  CUresult r = ResolveFor(handle, &stream);
  if (r != CUDA_SUCCESS || count == 0) return r;
  Side d, s;
  r = MakeSide(dst, count, dst_device, &d);
  if (r == CUDA_SUCCESS) r = MakeSide(const_cast<void*>(src), count, src_device, &s);
  if (r != CUDA_SUCCESS) return r;
  return Submit(stream, [dst, src, count] { memmove(dst, src, count); }, MustWait(d, s, async));
}

// One side of a 2D copy: its memory type picks the base address, its X and Y offset it.
CUresult MakeSide2D(CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t pitch,
                    size_t width, size_t height, Side* side) {
  if (width > pitch || x > pitch - width) return CUDA_ERROR_INVALID_VALUE;
  int max_pitch = 0;
  if (DeviceAttribute(cudaDevAttrMaxPitch, CurrentDevice(), &max_pitch) && pitch > static_cast<size_t>(max_pitch)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const void* base;
  bool named_device;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      base = host;
      named_device = false;
      break;
    case CU_MEMORYTYPE_DEVICE:
      base = ToPointer(device);
      named_device = true;
      break;
    case CU_MEMORYTYPE_UNIFIED:  // any address: device memory when it lies in a device allocation
      base = ToPointer(device);
      named_device = false;
      break;
    default:  // CU_MEMORYTYPE_ARRAY: simgpu has no arrays
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (base == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* start = const_cast<char*>(static_cast<const char*>(base)) + y * pitch + x;
  return MakeSide(start, (height - 1) * pitch + width, named_device, side);
}

CUresult Copy2D(const CUDA_MEMCPY2D* c, CUstream handle) {
  Stream* stream = nullptr;
  CUresult r = ResolveFor(handle, &stream);
  if (r != CUDA_SUCCESS) return r;
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const size_t width = c->WidthInBytes, height = c->Height;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  Side d, s;
  r = MakeSide2D(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch, width, height,
                 &d);
  if (r == CUDA_SUCCESS) {
    r = MakeSide2D(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch, width, height,
                   &s);
  }
  if (r != CUDA_SUCCESS) return r;
  auto* dp = static_cast<char*>(d.p);
  auto* sp = static_cast<const char*>(s.p);
  const size_t dpitch = c->dstPitch, spitch = c->srcPitch;
  return Submit(
      stream,
      [dp, dpitch, sp, spitch, width, height] {
        for (size_t row = 0; row < height; ++row) memmove(dp + row * dpitch, sp + row * spitch, width);
      },
      MustWait(d, s, /*async=*/true));
}

// n elements of elem_bytes (1 or 4) at dst set to value; dst must be aligned to the element.
CUresult Set(CUdeviceptr dst, uint32_t value, size_t elem_bytes, size_t n, CUstream handle, bool async) {
  Stream* stream = nullptr;
  CUresult r = ResolveFor(handle, &stream);
  if (r != CUDA_SUCCESS || n == 0) return r;
  void* p = ToPointer(dst);
  if (dst % elem_bytes != 0 || n > SIZE_MAX / elem_bytes) return CUDA_ERROR_INVALID_VALUE;
  const size_t bytes = n * elem_bytes;
  if (p == nullptr || !DeviceAddressable(p, bytes)) return CUDA_ERROR_INVALID_VALUE;
  const bool pinned = InAllocation(p, bytes, MemoryKind::kHostPinned);
  std::function<void()> work;
  if (elem_bytes == 1) {
    work = [p, value, bytes] { memset(p, static_cast<int>(value & 0xff), bytes); };
  } else {
    work = [p, value, n] {
      auto* out = static_cast<unsigned char*>(p);
      for (size_t i = 0; i < n; ++i) memcpy(out + i * 4, &value, 4);
    };
  }
  return Submit(stream, std::move(work), !async && pinned);
}

}  // namespace
}  // namespace simgpu::driver

using simgpu::driver::ToPointer;

extern "C" {

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return simgpu::driver::Copy(ToPointer(dstDevice), true, srcHost, false, ByteCount, nullptr, false);
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return simgpu::driver::Copy(dstHost, false, ToPointer(srcDevice), true, ByteCount, nullptr, false);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return simgpu::driver::Copy(ToPointer(dstDevice), true, ToPointer(srcDevice), true, ByteCount, nullptr, false);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream) {
  return simgpu::driver::Copy(ToPointer(dstDevice), true, srcHost, false, ByteCount, hStream, true);
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return simgpu::driver::Copy(dstHost, false, ToPointer(srcDevice), true, ByteCount, hStream, true);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return simgpu::driver::Copy(ToPointer(dstDevice), true, ToPointer(srcDevice), true, ByteCount, hStream, true);
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return simgpu::driver::Copy2D(pCopy, hStream);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return simgpu::driver::Set(dstDevice, uc, 1, N, nullptr, false);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return simgpu::driver::Set(dstDevice, ui, 4, N, nullptr, false);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return simgpu::driver::Set(dstDevice, ui, 4, N, hStream, true);
}

}  // extern "C"
