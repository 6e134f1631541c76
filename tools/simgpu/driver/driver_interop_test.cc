// simgpu's libcuda.so.1 next to its libcudart.so.13: a runtime stream is a driver stream, a runtime event a driver
// event, runtime memory driver memory, and a capture begun by either API is seen by both.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"

namespace {

using simgpu::testing::Gate;

CUdeviceptr Dev(void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

TEST(DriverInterop, RuntimeStreamsAreDriverStreamsAndBack) {
  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);  // initializes the driver and makes device 2's context current
  std::vector<int> input(256), output(256, 0);
  for (int i = 0; i < 256; ++i) input[i] = i * 7 - 3;
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, sizeof(int) * 256), cudaSuccess);
  cudaStream_t rt = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&rt, cudaStreamNonBlocking), cudaSuccess);
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(rt, Gate::WaitFn, &gate), cudaSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, sizeof(int) * 256), cudaSuccess);
  memcpy(pinned, input.data(), sizeof(int) * 256);
  ASSERT_EQ(cuMemcpyHtoDAsync_v2(Dev(d), pinned, sizeof(int) * 256, rt), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(rt), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(cuStreamSynchronize(rt), CUDA_SUCCESS);
  EXPECT_EQ(memcmp(d, input.data(), sizeof(int) * 256), 0);
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
  CUdevice dev = -1;
  ASSERT_EQ(cuStreamGetDevice(rt, &dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 2);

  CUstream drv = nullptr;
  ASSERT_EQ(cuStreamCreate(&drv, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cudaMemcpyAsync(output.data(), d, sizeof(int) * 256, cudaMemcpyDeviceToHost, drv), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(drv), cudaSuccess);
  EXPECT_EQ(output, input);
  int runtime_device = -1;
  ASSERT_EQ(cudaStreamGetDevice(drv, &runtime_device), cudaSuccess);
  EXPECT_EQ(runtime_device, 2);
  unsigned flags = 99;
  ASSERT_EQ(cudaStreamGetFlags(drv, &flags), cudaSuccess);
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamDefault));
  ASSERT_EQ(cudaStreamDestroy(drv), cudaSuccess);  // either API destroys either's stream
  EXPECT_EQ(cuStreamQuery(drv), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(cuStreamDestroy_v2(rt), CUDA_SUCCESS);
  EXPECT_EQ(cudaStreamQuery(rt), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  // The runtime's special handles are the driver's.
  CUcontext ctx = nullptr, current = nullptr;
  ASSERT_EQ(cuStreamGetCtx(reinterpret_cast<CUstream>(cudaStreamPerThread), &ctx), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(ctx, current);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  cudaSetDevice(0);
}

TEST(DriverInterop, EventsAndMemoryAreShared) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaEvent_t rt_event = nullptr;
  CUevent drv_event = nullptr;
  ASSERT_EQ(cudaEventCreate(&rt_event), cudaSuccess);
  ASSERT_EQ(cuEventCreate(&drv_event, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(s, Gate::WaitFn, &gate), cudaSuccess);
  ASSERT_EQ(cuEventRecord(rt_event, s), CUDA_SUCCESS);
  ASSERT_EQ(cudaEventRecord(drv_event, s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(rt_event), cudaErrorNotReady);
  EXPECT_EQ(cuEventQuery(drv_event), CUDA_ERROR_NOT_READY);
  gate.Open();
  ASSERT_EQ(cuEventSynchronize(rt_event), CUDA_SUCCESS);
  ASSERT_EQ(cudaEventSynchronize(drv_event), cudaSuccess);
  float ms = -1.0f;
  EXPECT_EQ(cuEventElapsedTime_v2(&ms, rt_event, drv_event), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  ASSERT_EQ(cuEventDestroy_v2(rt_event), CUDA_SUCCESS);
  EXPECT_EQ(cudaEventQuery(rt_event), cudaErrorInvalidResourceHandle);
  ASSERT_EQ(cudaEventDestroy(drv_event), cudaSuccess);
  EXPECT_EQ(cuEventQuery(drv_event), CUDA_ERROR_INVALID_HANDLE);
  cudaGetLastError();

  void* rt_mem = nullptr;
  CUdeviceptr drv_mem = 0;
  ASSERT_EQ(cudaMalloc(&rt_mem, 128), cudaSuccess);
  ASSERT_EQ(cuMemAlloc_v2(&drv_mem, 128), CUDA_SUCCESS);
  unsigned type = 0;
  ASSERT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, Dev(rt_mem)), CUDA_SUCCESS);
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  cudaPointerAttributes attrs;
  ASSERT_EQ(cudaPointerGetAttributes(&attrs, reinterpret_cast<void*>(static_cast<uintptr_t>(drv_mem))), cudaSuccess);
  EXPECT_EQ(attrs.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attrs.device, 0);
  EXPECT_EQ(cuMemFree_v2(Dev(rt_mem)), CUDA_SUCCESS);
  EXPECT_EQ(cudaFree(reinterpret_cast<void*>(static_cast<uintptr_t>(drv_mem))), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(DriverInterop, ACaptureBegunByTheRuntimeIsSeenByTheDriver) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);  // blocking: the legacy stream may not be used meanwhile
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  cudaEvent_t e = nullptr;
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(cuStreamIsCapturing(CU_STREAM_LEGACY, &status), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  cuuint64_t drv_id = 0;
  unsigned long long rt_id = 0;
  cudaStreamCaptureStatus rt_status;
  ASSERT_EQ(cuStreamGetCaptureInfo(s, &status, &drv_id), CUDA_SUCCESS);
  ASSERT_EQ(cudaStreamGetCaptureInfo(s, &rt_status, &rt_id), cudaSuccess);
  EXPECT_EQ(drv_id, rt_id);
  ASSERT_EQ(cuEventRecord(e, s), CUDA_SUCCESS);  // a driver record in the runtime's capture
  EXPECT_EQ(cudaEventQuery(e), cudaErrorCapturedEvent);
  std::vector<char> pageable(64);
  EXPECT_EQ(cuMemcpyDtoHAsync_v2(pageable.data(), Dev(d), 64, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(cudaStreamIsCapturing(s, &rt_status), cudaSuccess);
  EXPECT_EQ(rt_status, cudaStreamCaptureStatusInvalidated);
  cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(1);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  cudaGetLastError();

  // And the other way round: a driver capture ends through the runtime, its graph usable by the runtime.
  ASSERT_EQ(cudaMemset(d, 0, 64), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(Dev(d), 0x11223344u, 16, s), CUDA_SUCCESS);
  ASSERT_EQ(cudaStreamIsCapturing(s, &rt_status), cudaSuccess);
  EXPECT_EQ(rt_status, cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  EXPECT_EQ(static_cast<uint32_t*>(d)[15], 0u);  // recorded, not run
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<uint32_t*>(d)[15], 0x11223344u);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  cudaSetDevice(0);
}

TEST(DriverInterop, CudaSetDeviceReplacesTheTopOfTheContextStack) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  CUcontext c0 = nullptr, c2 = nullptr, c4 = nullptr, ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&c2, 2), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&c4, 4), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent_v2(c2), CUDA_SUCCESS);
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 2);
  ASSERT_EQ(cudaSetDevice(4), cudaSuccess);
  ASSERT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, c4);
  ASSERT_EQ(cuCtxPopCurrent_v2(&ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, c4);
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 0);  // the context beneath, current before the push
  ASSERT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, c0);
}

// cuLaunchHostFunc: runs after the stream's earlier work, in order; on a capturing stream it becomes a host node
// that runs at every launch of the graph, and not at capture.
TEST(DriverInterop, HostFunctionsRunInStreamOrderAndAtEveryGraphLaunch) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cuLaunchHostFunc(s, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  struct Log {
    std::vector<int> order;
    int next = 0;
  } log;
  auto note = [](void* p) {
    auto* l = static_cast<Log*>(p);
    l->order.push_back(l->next++);
  };
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(s, Gate::WaitFn, &gate), cudaSuccess);
  ASSERT_EQ(cuLaunchHostFunc(s, note, &log), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(log.order.empty()) << "ran before the stream's earlier work";
  gate.Open();
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(log.order.size(), 1u);

  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(s, note, &log), CUDA_SUCCESS);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  EXPECT_EQ(log.order.size(), 1u) << "a captured host function must not run at capture";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(log.order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

}  // namespace
