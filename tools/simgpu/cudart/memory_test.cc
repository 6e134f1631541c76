// Allocation, copies, memsets and pointer attributes of simgpu's libcudart.so.13, with the error codes CUDA
// documents for invalid arguments.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace {

TEST(Memory, RoundTripThroughDeviceMemoryForEveryDirection) {
  constexpr size_t kBytes = 1000;
  std::vector<uint8_t> src(kBytes), dst(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  void *d1, *d2, *pinned;
  ASSERT_EQ(cudaMalloc(&d1, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d2, kBytes), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&pinned, kBytes, cudaHostAllocPortable | cudaHostAllocMapped), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d1) % 256, 0u);
  ASSERT_EQ(cudaMemcpy(d1, src.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d2, d1, kBytes, cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pinned, d2, kBytes, cudaMemcpyDefault), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dst.data(), pinned, kBytes, cudaMemcpyHostToHost), cudaSuccess);
  EXPECT_EQ(dst, src);
  ASSERT_EQ(cudaMemset(d2, 0xab, 10), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dst.data(), d2, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(dst[i], i < 10 ? 0xab : src[i]) << i;
  // A copy into the middle of an allocation is fine; one that runs past its end is not.
  ASSERT_EQ(cudaMemcpy(static_cast<char*>(d1) + 500, src.data(), 500, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(static_cast<char*>(d1) + 501, src.data(), 500, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(d1), cudaSuccess);
  EXPECT_EQ(cudaFree(d2), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  (void)cudaGetLastError();
}

TEST(Memory, AllocationErrors) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMalloc(&p, size_t{1} << 50), cudaErrorMemoryAllocation);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  ASSERT_EQ(cudaMalloc(&p, 0), cudaSuccess);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  EXPECT_EQ(cudaHostAlloc(&p, 16, 0x100), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(nullptr), cudaSuccess);
  int local = 0;
  EXPECT_EQ(cudaFree(&local), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(&local), cudaErrorInvalidValue);
  void* dev;
  ASSERT_EQ(cudaMalloc(&dev, 64), cudaSuccess);
  EXPECT_EQ(cudaFree(static_cast<char*>(dev) + 8), cudaErrorInvalidValue);  // not the allocation's base
  EXPECT_EQ(cudaFreeHost(dev), cudaErrorInvalidValue);                     // device memory is not pinned
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaFree(dev), cudaErrorInvalidValue);  // double free
  (void)cudaGetLastError();
}

TEST(Memory, MemGetInfoTracksDeviceAllocations) {
  size_t free0 = 0, total = 0, free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  void* p;
  ASSERT_EQ(cudaMalloc(&p, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, size_t{1} << 20);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
}

TEST(Memory, CopyErrors) {
  void* dev;
  ASSERT_EQ(cudaMalloc(&dev, 64), cudaSuccess);
  std::vector<char> host(64);
  EXPECT_EQ(cudaMemcpy(dev, host.data(), 64, static_cast<cudaMemcpyKind>(7)), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpy(nullptr, host.data(), 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  // A side named as device memory must be device memory.
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 32, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 32, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(dev, host.data(), 128, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(dev, host.data(), 0, static_cast<cudaMemcpyKind>(1)), cudaSuccess);
  EXPECT_EQ(cudaMemset(host.data(), 0, 8), cudaErrorInvalidValue);  // pageable host memory
  EXPECT_EQ(cudaMemcpyAsync(dev, host.data(), 8, cudaMemcpyHostToDevice, reinterpret_cast<cudaStream_t>(0x999)),
            cudaErrorInvalidResourceHandle);
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  (void)cudaGetLastError();
}

TEST(Memory, PointerAttributes) {
  void *dev, *pinned;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev, 128), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 128), cudaSuccess);
  cudaPointerAttributes a;
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(dev) + 100), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 1);
  EXPECT_EQ(a.devicePointer, static_cast<char*>(dev) + 100);
  EXPECT_EQ(a.hostPointer, nullptr);
  ASSERT_EQ(cudaPointerGetAttributes(&a, pinned), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  EXPECT_EQ(a.device, 0);
  EXPECT_EQ(a.hostPointer, pinned);
  int local;
  ASSERT_EQ(cudaPointerGetAttributes(&a, &local), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(dev) + 128), cudaSuccess);  // one past the end
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  EXPECT_EQ(cudaPointerGetAttributes(nullptr, dev), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
  (void)cudaGetLastError();
}

}  // namespace
