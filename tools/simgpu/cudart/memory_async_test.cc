// Pitched copies and stream-ordered allocation (cudaMallocAsync / cudaFreeAsync, default memory pools),
// including allocations made during stream capture.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"

namespace {

using simgpu::testing::Gate;

cudaMemoryType TypeOf(const void* p) {
  cudaPointerAttributes a;
  EXPECT_EQ(cudaPointerGetAttributes(&a, p), cudaSuccess);
  return a.type;
}

// A 5 x 3 block of bytes (width 5, height 3) copied between host rows of pitch 8 and device rows of pitch 16,
// and back into a host buffer of pitch 7: every copied byte lands at row * pitch + column, padding is untouched.
TEST(Memcpy2D, CopiesRowsBetweenPitchesAndLeavesPaddingAlone) {
  constexpr size_t kWidth = 5, kHeight = 3;
  std::vector<uint8_t> src(8 * kHeight);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i + 1);
  uint8_t* dev;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 16 * kHeight), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0xee, 16 * kHeight), cudaSuccess);
  ASSERT_EQ(cudaMemcpy2D(dev, 16, src.data(), 8, kWidth, kHeight, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<uint8_t> mirror(16 * kHeight);
  ASSERT_EQ(cudaMemcpy(mirror.data(), dev, mirror.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t r = 0; r < kHeight; ++r) {
    for (size_t c = 0; c < 16; ++c) {
      ASSERT_EQ(mirror[r * 16 + c], c < kWidth ? src[r * 8 + c] : 0xee) << r << "," << c;
    }
  }
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  uint8_t* pinned;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 7 * kHeight), cudaSuccess);
  memset(pinned, 0, 7 * kHeight);
  ASSERT_EQ(cudaMemcpy2DAsync(pinned, 7, dev, 16, kWidth, kHeight, cudaMemcpyDefault, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (size_t r = 0; r < kHeight; ++r) {
    for (size_t c = 0; c < 7; ++c) ASSERT_EQ(pinned[r * 7 + c], c < kWidth ? src[r * 8 + c] : 0) << r << "," << c;
  }
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  cudaFree(dev);
}

TEST(Memcpy2D, Errors) {
  uint8_t* dev;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 64), cudaSuccess);
  std::vector<uint8_t> host(256);
  EXPECT_EQ(cudaMemcpy2D(dev, 4, host.data(), 8, 5, 2, cudaMemcpyHostToDevice), cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaMemcpy2D(dev, 8, host.data(), 4, 5, 2, cudaMemcpyHostToDevice), cudaErrorInvalidPitchValue);
  // 8 rows of pitch 8 need 7 * 8 + 8 = 64 bytes: fits; 9 rows do not.
  EXPECT_EQ(cudaMemcpy2D(dev, 8, host.data(), 8, 8, 8, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy2D(dev, 8, host.data(), 8, 8, 9, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy2D(dev, 8, host.data(), 8, 0, 9, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy2D(dev, 8, nullptr, 8, 4, 2, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy2D(dev, 8, host.data(), 8, 4, 2, static_cast<cudaMemcpyKind>(9)),
            cudaErrorInvalidMemcpyDirection);
  cudaGetLastError();
  cudaFree(dev);
}

TEST(MallocAsync, FreeIsOrderedAfterEarlierWorkOnTheStream) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaMemPool_t pool;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  uint64_t used_before = 0, used = 0, high = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used_before), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, 1000, s), cudaSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  EXPECT_EQ(TypeOf(p), cudaMemoryTypeDevice);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_EQ(used, used_before + 1000);
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(s, Gate::WaitFn, &gate), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(p, 1, 1000, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(p, s), cudaSuccess);
  EXPECT_EQ(TypeOf(p), cudaMemoryTypeDevice);  // not freed before the stream reaches the free
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(TypeOf(p), cudaMemoryTypeUnregistered);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_EQ(used, used_before);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), cudaSuccess);
  EXPECT_GE(high, used_before + 1000);
  uint64_t zero = 0, one = 1;
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), cudaSuccess);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &one), cudaErrorInvalidValue);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), cudaSuccess);
  EXPECT_EQ(high, used_before);
  uint64_t threshold = UINT64_MAX;
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  threshold = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  EXPECT_EQ(threshold, UINT64_MAX);
  int attr = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&attr, cudaDevAttrMemoryPoolsSupported, 0), cudaSuccess);
  EXPECT_EQ(attr, 1);
  cudaStreamDestroy(s);
}

TEST(MallocAsync, Errors) {
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaMallocAsync(nullptr, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocAsync(&p, 0, nullptr), cudaSuccess);
  EXPECT_EQ(p, nullptr);
  int host = 0;
  EXPECT_EQ(cudaFreeAsync(&host, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeAsync(nullptr, nullptr), cudaErrorInvalidValue);
  ASSERT_EQ(cudaMallocAsync(&p, 512, nullptr), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(static_cast<char*>(p) + 8, nullptr), cudaErrorInvalidValue);  // not the base
  EXPECT_EQ(cudaFree(p), cudaSuccess);  // cudaFree releases stream-ordered memory too
  cudaMemPool_t pool, other;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 9999), cudaErrorInvalidDevice);
  ASSERT_EQ(cudaDeviceGetMemPool(&pool, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&other, 1), cudaSuccess);
  EXPECT_NE(pool, other);
  EXPECT_EQ(cudaDeviceSetMemPool(0, pool), cudaSuccess);
  EXPECT_EQ(cudaDeviceSetMemPool(0, other), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  EXPECT_EQ(cudaMemPoolGetAttribute(reinterpret_cast<cudaMemPool_t>(&host), cudaMemPoolAttrUsedMemCurrent, &p),
            cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST(MallocAsync, AllocationInCaptureHasOneAddressForEveryLaunch) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int* out;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&out), sizeof(int)), cudaSuccess);
  void* scratch = nullptr;
  void* kept = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&scratch, 64, s), cudaSuccess);  // stream-ordered allocation is allowed in capture
  ASSERT_EQ(cudaMallocAsync(&kept, 64, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(scratch, 0x11, 64, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(out, scratch, sizeof(int), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(scratch, s), cudaSuccess);  // freed in the graph: the graph owns it
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 2; ++i) {
    *out = 0;
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(*out, 0x11111111);
    EXPECT_EQ(TypeOf(scratch), cudaMemoryTypeDevice);
  }
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(TypeOf(scratch), cudaMemoryTypeDevice);  // the executable still holds it
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(TypeOf(scratch), cudaMemoryTypeUnregistered);
  EXPECT_EQ(TypeOf(kept), cudaMemoryTypeDevice);  // not freed in the graph: the application's to free
  EXPECT_EQ(cudaFree(kept), cudaSuccess);

  // A free captured of memory allocated outside the capture runs at the first launch only.
  void* outside = nullptr;
  ASSERT_EQ(cudaMallocAsync(&outside, 64, s), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(outside, s), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  EXPECT_EQ(TypeOf(outside), cudaMemoryTypeDevice);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(TypeOf(outside), cudaMemoryTypeUnregistered);
  void* reused = nullptr;
  ASSERT_EQ(cudaMalloc(&reused, 64), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(TypeOf(reused), cudaMemoryTypeDevice);  // whatever address it got, the second launch freed nothing
  cudaFree(reused);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFreeHost(out);
  cudaStreamDestroy(s);
}

TEST(MallocAsync, PageableCopyCannotBeCaptured) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* dev;
  ASSERT_EQ(cudaMalloc(&dev, 64), cudaSuccess);
  std::vector<char> pageable(64);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(dev, pageable.data(), 64, cudaMemcpyHostToDevice, s),
            cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  cudaFree(dev);
  cudaStreamDestroy(s);
}

}  // namespace
