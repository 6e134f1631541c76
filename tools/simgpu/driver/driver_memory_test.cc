// simgpu's libcuda.so.1 on its own (no libcudart in the process): allocation, copies and memsets through the
// driver API, their synchronization with the host (simgpu.h's streams run on worker threads, so a result read
// before the documented synchronization is stale), and the errors NVIDIA documents for bad pointers and ranges.
// A stream is held at a known point by enqueuing a gate on it through the core (a CUstream is a simgpu::Stream*).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"
#include "tools/simgpu/core/simgpu.h"

namespace {

using simgpu::testing::Eventually;
using simgpu::testing::Gate;

void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// Holds `stream` until the gate opens.
void Hold(CUstream stream, Gate* gate) {
  ASSERT_EQ(simgpu::Enqueue(reinterpret_cast<simgpu::Stream*>(stream), [gate] { gate->Wait(); }), cudaSuccess);
}

// Makes device `device`'s primary context current on the calling thread.
void UseDevice(int device) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, device), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

// Runs first in its process (ctest runs each test alone): nothing has initialized the driver.
TEST(DriverMemory, CallsNeedInitializationAndAContext) {
  CUdeviceptr d = 0;
  char host[8] = {};
  EXPECT_EQ(cuMemAlloc_v2(&d, 64), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuMemcpyHtoD_v2(d, host, 8), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuMemsetD8_v2(d, 0, 8), CUDA_ERROR_NOT_INITIALIZED);
  unsigned type = 0;
  EXPECT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d), CUDA_ERROR_NOT_INITIALIZED);
  size_t free = 0, total = 0;
  EXPECT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_ERROR_NOT_INITIALIZED);
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  // Initialized, but this thread has no current context (nothing in the process used the runtime).
  EXPECT_EQ(cuMemAlloc_v2(&d, 64), CUDA_ERROR_INVALID_CONTEXT);
  void* pinned = nullptr;
  EXPECT_EQ(cuMemAllocHost_v2(&pinned, 64), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuMemcpyHtoD_v2(d, host, 8), CUDA_ERROR_INVALID_CONTEXT);  // the legacy stream of no context
  UseDevice(0);
  ASSERT_EQ(cuMemAlloc_v2(&d, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(d), CUDA_SUCCESS);
}

TEST(DriverMemory, AsyncCopiesOnAStreamAreVisibleOnlyAfterSynchronization) {
  UseDevice(0);
  constexpr size_t kN = 1024;
  std::vector<uint32_t> input(kN);
  for (size_t i = 0; i < kN; ++i) input[i] = static_cast<uint32_t>(i * 2654435761u);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, kN * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc_v2(&b, kN * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD_v2(a, input.data(), kN * 4), CUDA_SUCCESS);  // synchronous: done on return
  EXPECT_EQ(memcmp(Ptr(a), input.data(), kN * 4), 0);
  uint32_t* out = nullptr;
  ASSERT_EQ(cuMemHostAlloc(reinterpret_cast<void**>(&out), kN * 4, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  memset(out, 0, kN * 4);
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent done = nullptr;
  ASSERT_EQ(cuEventCreate(&done, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  Gate gate;
  Hold(s, &gate);
  ASSERT_EQ(cuMemcpyDtoDAsync_v2(b, a, kN * 4, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync_v2(out, b, kN * 4, s), CUDA_SUCCESS);  // pinned: returns before it ran
  ASSERT_EQ(cuEventRecord(done, s), CUDA_SUCCESS);
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuEventQuery(done), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(cuEventSynchronize(done), CUDA_SUCCESS);
  EXPECT_EQ(memcmp(out, input.data(), kN * 4), 0);
  EXPECT_EQ(cuEventQuery(done), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(s), CUDA_SUCCESS);

  // Pageable host memory: the asynchronous copy returns only after it ran (behind the held stream).
  std::vector<uint32_t> pageable(kN, 0);
  Gate second;
  Hold(s, &second);
  std::atomic<bool> returned{false};
  std::thread copier([&] {
    EXPECT_EQ(cuMemcpyDtoHAsync_v2(pageable.data(), a, kN * 4, s), CUDA_SUCCESS);
    returned = true;
  });
  EXPECT_FALSE(Eventually([&] { return returned.load(); }, std::chrono::milliseconds(100)));
  second.Open();
  copier.join();
  EXPECT_EQ(memcmp(pageable.data(), input.data(), kN * 4), 0);  // no synchronization needed

  // The legacy stream (0) waits for a blocking stream's earlier work: a synchronous copy sees its result.
  CUstream blocking = nullptr;
  ASSERT_EQ(cuStreamCreate(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  Gate third;
  Hold(blocking, &third);
  ASSERT_EQ(cuMemsetD32Async(b, 7u, kN, blocking), CUDA_SUCCESS);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    third.Open();
  });
  ASSERT_EQ(cuMemcpyDtoH_v2(pageable.data(), b, kN * 4), CUDA_SUCCESS);
  opener.join();
  EXPECT_EQ(pageable[0], 7u);
  EXPECT_EQ(pageable[kN - 1], 7u);

  // CU_STREAM_PER_THREAD names this thread's default stream.
  ASSERT_EQ(cuMemcpyHtoDAsync_v2(b, input.data(), kN * 4, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(memcmp(Ptr(b), input.data(), kN * 4), 0);

  EXPECT_EQ(cuEventDestroy_v2(done), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy_v2(blocking), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(out), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
}

CUDA_MEMCPY2D Region(size_t width, size_t height) {
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.WidthInBytes = width;
  c.Height = height;
  return c;
}

TEST(DriverMemory, TwoDimensionalCopiesMoveExactlyThePitchedRegion) {
  UseDevice(0);
  constexpr size_t kHostPitch = 16, kHostRows = 6, kDevPitch = 64, kDevRows = 8;
  std::vector<unsigned char> host(kHostPitch * kHostRows);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i + 1);
  CUdeviceptr dev = 0;
  ASSERT_EQ(cuMemAlloc_v2(&dev, kDevPitch * kDevRows), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(dev, 0xAB, kDevPitch * kDevRows), CUDA_SUCCESS);  // on the legacy stream, asynchronous
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_DEFAULT), CUDA_SUCCESS);  // blocking: ordered after the memset
  // A 10 x 4 block from host (x 2, row 1) to device (x 8, row 2).
  CUDA_MEMCPY2D up = Region(10, 4);
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = kHostPitch;
  up.srcXInBytes = 2;
  up.srcY = 1;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = dev;
  up.dstPitch = kDevPitch;
  up.dstXInBytes = 8;
  up.dstY = 2;
  ASSERT_EQ(cuMemcpy2DAsync_v2(&up, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  const auto* d = static_cast<const unsigned char*>(Ptr(dev));
  for (size_t row = 0; row < kDevRows; ++row) {
    for (size_t x = 0; x < kDevPitch; ++x) {
      bool inside = row >= 2 && row < 6 && x >= 8 && x < 18;
      unsigned char want = inside ? host[(row - 2 + 1) * kHostPitch + (x - 8 + 2)] : 0xAB;
      ASSERT_EQ(d[row * kDevPitch + x], want) << "row " << row << " x " << x;
    }
  }
  // Back into a fresh host buffer, both sides named by unified addresses.
  std::vector<unsigned char> back(10 * 4, 0);
  CUDA_MEMCPY2D down = Region(10, 4);
  down.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  down.srcDevice = dev + 2 * kDevPitch + 8;
  down.srcPitch = kDevPitch;
  down.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  down.dstDevice = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(back.data()));
  down.dstPitch = 10;
  ASSERT_EQ(cuMemcpy2DAsync_v2(&down, s), CUDA_SUCCESS);  // pageable destination: done on return
  for (size_t row = 0; row < 4; ++row) {
    EXPECT_EQ(memcmp(&back[row * 10], &host[(row + 1) * kHostPitch + 2], 10), 0) << "row " << row;
  }
  // Errors: a width beyond the pitch, an array, a device range past the allocation's end.
  CUDA_MEMCPY2D bad = up;
  bad.srcPitch = 8;
  EXPECT_EQ(cuMemcpy2DAsync_v2(&bad, s), CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  EXPECT_EQ(cuMemcpy2DAsync_v2(&bad, s), CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstY = kDevRows - 3;  // 4 rows from row 5 of 8
  EXPECT_EQ(cuMemcpy2DAsync_v2(&bad, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpy2DAsync_v2(nullptr, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(dev), CUDA_SUCCESS);
}

TEST(DriverMemory, MemsetsAndTheirErrors) {
  UseDevice(0);
  CUdeviceptr dev = 0;
  ASSERT_EQ(cuMemAlloc_v2(&dev, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(dev, 0, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32_v2(dev + 4, 0xDEADBEEFu, 10), CUDA_SUCCESS);
  uint32_t words[12] = {};
  ASSERT_EQ(cuMemcpyDtoH_v2(words, dev, sizeof words), CUDA_SUCCESS);
  EXPECT_EQ(words[0], 0u);
  for (int i = 1; i <= 10; ++i) EXPECT_EQ(words[i], 0xDEADBEEFu) << i;
  EXPECT_EQ(words[11], 0u);
  EXPECT_EQ(cuMemsetD32_v2(dev + 2, 1u, 4), CUDA_ERROR_INVALID_VALUE);   // not 4-byte aligned
  EXPECT_EQ(cuMemsetD32_v2(dev, 1u, 65), CUDA_ERROR_INVALID_VALUE);      // past the allocation
  EXPECT_EQ(cuMemsetD8_v2(dev + 200, 1, 57), CUDA_ERROR_INVALID_VALUE);  // past the allocation
  std::vector<unsigned char> pageable(64);
  EXPECT_EQ(cuMemsetD8_v2(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pageable.data())), 1, 64),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD8_v2(0, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD8_v2(dev, 1, 0), CUDA_SUCCESS);  // nothing to set
  // Pinned memory: the synchronous memset is done on return.
  void* pinned = nullptr;
  ASSERT_EQ(cuMemAllocHost_v2(&pinned, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pinned)), 0x5A, 64), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<unsigned char*>(pinned)[63], 0x5A);
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  Gate gate;
  Hold(s, &gate);
  ASSERT_EQ(cuMemsetD32Async(dev, 0x01020304u, 64, s), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<uint32_t*>(Ptr(dev))[63], 0u);  // still held
  gate.Open();
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<uint32_t*>(Ptr(dev))[63], 0x01020304u);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(dev), CUDA_SUCCESS);
}

TEST(DriverMemory, AllocationErrorsAndPointerAttributes) {
  UseDevice(2);
  CUdeviceptr dev = 0;
  size_t free_before = 0, total = 0, free_after = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_before, &total), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc_v2(&dev, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAlloc_v2(nullptr, 64), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAlloc_v2(&dev, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemAlloc_v2(&dev, 1 << 20), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetInfo_v2(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_before - free_after, size_t{1} << 20);
  void* pinned = nullptr;
  EXPECT_EQ(cuMemHostAlloc(&pinned, 64, 0x8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocHost_v2(&pinned, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemHostAlloc(&pinned, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED), CUDA_SUCCESS);

  unsigned type = 0;
  ASSERT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dev + 100), CUDA_SUCCESS);
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  const auto pinned_addr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pinned));
  ASSERT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pinned_addr), CUDA_SUCCESS);
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_HOST));
  int ordinal = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev), CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 2);
  CUdeviceptr start = 0;
  size_t size = 0;
  ASSERT_EQ(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dev + 100), CUDA_SUCCESS);
  EXPECT_EQ(start, dev);
  ASSERT_EQ(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dev + 100), CUDA_SUCCESS);
  EXPECT_EQ(size, size_t{1} << 20);
  CUcontext ctx = nullptr, current = nullptr;
  ASSERT_EQ(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, dev), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(ctx, current);
  void* host_ptr = nullptr;
  EXPECT_EQ(cuPointerGetAttribute(&host_ptr, CU_POINTER_ATTRIBUTE_HOST_POINTER, dev), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuPointerGetAttribute(&host_ptr, CU_POINTER_ATTRIBUTE_HOST_POINTER, pinned_addr), CUDA_SUCCESS);
  EXPECT_EQ(host_ptr, pinned);
  int local = 0;
  const auto pageable = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(&local));
  EXPECT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pageable), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pageable), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dev), CUDA_ERROR_INVALID_VALUE);

  // Copies: the side named device must be device memory, in range; host pointers must not be NULL.
  char buf[64] = {};
  EXPECT_EQ(cuMemcpyHtoD_v2(pageable, buf, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoD_v2(dev + (1 << 20) - 8, buf, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoH_v2(nullptr, dev, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoD_v2(dev, pageable, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoDAsync_v2(dev, buf, 16, reinterpret_cast<CUstream>(buf)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemcpyHtoD_v2(dev, buf, 0), CUDA_SUCCESS);

  // Frees: only the base of a live allocation of the right kind.
  EXPECT_EQ(cuMemFree_v2(dev + 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree_v2(pinned_addr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeHost(Ptr(dev)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree_v2(0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree_v2(dev), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(dev), CUDA_ERROR_INVALID_VALUE);  // already freed
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemGetInfo_v2(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_after, free_before);
}

}  // namespace
