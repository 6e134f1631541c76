// simgpu's libcuda.so.1 on its own (no libcudart in the process): streams, events, stream capture and the
// context stack through the driver API. Streams are held at a known point by a gate enqueued through the core.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"
#include "tools/simgpu/core/simgpu.h"

namespace {

using simgpu::testing::Gate;

void Hold(CUstream stream, Gate* gate) {
  ASSERT_EQ(simgpu::Enqueue(reinterpret_cast<simgpu::Stream*>(stream), [gate] { gate->Wait(); }), cudaSuccess);
}

CUcontext Primary(int device) {
  CUcontext ctx = nullptr;
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx, device), CUDA_SUCCESS);
  return ctx;
}

CUcontext Current() {
  CUcontext ctx = reinterpret_cast<CUcontext>(1);
  EXPECT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  return ctx;
}

TEST(DriverStreams, CallsNeedInitialization) {
  CUstream s = nullptr;
  CUevent e = nullptr;
  EXPECT_EQ(cuStreamCreate(&s, 0), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuStreamQuery(nullptr), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuEventCreate(&e, 0), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuEventQuery(e), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuCtxPushCurrent_v2(nullptr), CUDA_ERROR_NOT_INITIALIZED);
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_ERROR_NOT_INITIALIZED);
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuEventCreate(&e, 0), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = nullptr;
  EXPECT_EQ(cuStreamGetCtx(CU_STREAM_LEGACY, &ctx), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxPopCurrent_v2(&ctx), CUDA_ERROR_INVALID_CONTEXT);
}

TEST(DriverStreams, ContextStackPushPop) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(Current(), nullptr);
  CUcontext c1 = Primary(1), c2 = Primary(2), c3 = Primary(3), c5 = Primary(5);
  ASSERT_EQ(cuCtxPushCurrent_v2(c2), CUDA_SUCCESS);
  EXPECT_EQ(Current(), c2);
  ASSERT_EQ(cuCtxPushCurrent_v2(c5), CUDA_SUCCESS);
  EXPECT_EQ(Current(), c5);
  CUdevice dev = -1;
  ASSERT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 5);
  CUcontext popped = nullptr;
  ASSERT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, c5);  // the popped context; the one beneath is current again
  EXPECT_EQ(Current(), c2);
  ASSERT_EQ(cuCtxSetCurrent(c3), CUDA_SUCCESS);  // replaces the top
  EXPECT_EQ(Current(), c3);
  ASSERT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, c3);
  EXPECT_EQ(Current(), nullptr);  // the stack is empty
  EXPECT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(cuCtxPushCurrent(c1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent_v2(c5), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);  // pops
  EXPECT_EQ(Current(), c1);
  EXPECT_EQ(cuCtxPushCurrent_v2(nullptr), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxPushCurrent_v2(reinterpret_cast<CUcontext>(&dev)), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(Current(), c1);
  ASSERT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, c1);
  EXPECT_EQ(Current(), nullptr);
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);  // a no-op on an empty stack
}

TEST(DriverStreams, StreamHandlesAndTheirContexts) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext c1 = Primary(1), c3 = Primary(3);
  ASSERT_EQ(cuCtxSetCurrent(c3), CUDA_SUCCESS);
  CUstream s = nullptr;
  EXPECT_EQ(cuStreamCreate(&s, 0x4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(c1), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  CUdevice dev = -1;
  ASSERT_EQ(cuStreamGetCtx(s, &ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, c3);  // the context it was created in, not the current one
  ASSERT_EQ(cuStreamGetDevice(s, &dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 3);
  CUgreenCtx green = reinterpret_cast<CUgreenCtx>(1);
  ASSERT_EQ(cuStreamGetCtx_v2(s, &ctx, &green), CUDA_SUCCESS);
  EXPECT_EQ(ctx, c3);
  EXPECT_EQ(green, nullptr);
  for (CUstream special : {static_cast<CUstream>(nullptr), CU_STREAM_LEGACY, CU_STREAM_PER_THREAD}) {
    ASSERT_EQ(cuStreamGetCtx(special, &ctx), CUDA_SUCCESS);
    EXPECT_EQ(ctx, c1);  // the special handles answer for the current context
    ASSERT_EQ(cuStreamGetDevice(special, &dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 1);
    EXPECT_EQ(cuStreamDestroy_v2(special), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(cuStreamSynchronize(special), CUDA_SUCCESS);
  }
  // An explicit stream needs no current context.
  std::thread([s] {
    EXPECT_EQ(Current(), nullptr);
    Gate gate;
    Hold(s, &gate);
    EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    gate.Open();
    EXPECT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    EXPECT_EQ(cuStreamQuery(s), CUDA_SUCCESS);
    EXPECT_EQ(cuStreamQuery(nullptr), CUDA_ERROR_INVALID_CONTEXT);
  }).join();
  ASSERT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamGetCtx(s, &ctx), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
}

TEST(DriverStreams, EventsRecordQuerySynchronizeAndTime) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent_v2(Primary(0)), CUDA_SUCCESS);
  CUevent never = nullptr, start = nullptr, end = nullptr, untimed = nullptr;
  EXPECT_EQ(cuEventCreate(&never, 0x10), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuEventCreate(&never, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);  // needs DISABLE_TIMING
  ASSERT_EQ(cuEventCreate(&never, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&start, CU_EVENT_BLOCKING_SYNC), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&end, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  // Never recorded: complete, as NVIDIA documents; no time to measure.
  EXPECT_EQ(cuEventQuery(never), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(never), CUDA_SUCCESS);
  float ms = -1.0f;
  EXPECT_EQ(cuEventElapsedTime_v2(&ms, never, never), CUDA_ERROR_INVALID_HANDLE);

  CUstream s = nullptr, waiter = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  Gate gate;
  ASSERT_EQ(cuEventRecord(start, s), CUDA_SUCCESS);
  Hold(s, &gate);
  ASSERT_EQ(cuEventRecord(end, s), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(untimed, s), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(end), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuEventElapsedTime_v2(&ms, start, end), CUDA_ERROR_NOT_READY);
  // Another stream waiting on the event is held too.
  ASSERT_EQ(cuStreamWaitEvent(waiter, end, CU_EVENT_WAIT_DEFAULT), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(waiter, end, 0x2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamQuery(waiter), CUDA_ERROR_NOT_READY);
  // `start` completes (the stream has reached it) before the 30 ms begin: a stream worker scheduled late on a
  // loaded machine would otherwise stamp it inside them.
  ASSERT_EQ(cuEventSynchronize(start), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  gate.Open();
  ASSERT_EQ(cuEventSynchronize(end), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(waiter), CUDA_SUCCESS);
  ASSERT_EQ(cuEventElapsedTime_v2(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 25.0f);
  float old_abi = -1.0f;
  ASSERT_EQ(cuEventElapsedTime(&old_abi, start, end), CUDA_SUCCESS);
  EXPECT_EQ(old_abi, ms);
  EXPECT_EQ(cuEventElapsedTime_v2(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventElapsedTime_v2(nullptr, start, end), CUDA_ERROR_INVALID_VALUE);
  // The legacy stream records behind everything of the context; a destroyed event is an invalid handle.
  ASSERT_EQ(cuEventRecord(never, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(never), CUDA_SUCCESS);
  ASSERT_EQ(cuEventDestroy_v2(never), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(never), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventSynchronize(never), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(never, s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamWaitEvent(s, never, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventDestroy_v2(never), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventDestroy(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(start, reinterpret_cast<CUstream>(&ms)), CUDA_ERROR_INVALID_HANDLE);
  for (CUevent e : {start, end, untimed}) EXPECT_EQ(cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy_v2(waiter), CUDA_SUCCESS);
}

TEST(DriverStreams, CaptureRecordsWorkAndRefusesWhatCannotBeCaptured) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent_v2(Primary(0)), CUDA_SUCCESS);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc_v2(&b, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(a, 1, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(b, 2, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  CUstream s = nullptr;
  CUevent e = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamBeginCapture_v2(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamBeginCapture_v2(s, static_cast<CUstreamCaptureMode>(7)), CUDA_ERROR_INVALID_VALUE);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);

  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ASSERT_EQ(cuMemcpyDtoDAsync_v2(b, a, 64, s), CUDA_SUCCESS);  // recorded, not run
  ASSERT_EQ(cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(e), CUDA_ERROR_CAPTURED_EVENT);
  EXPECT_EQ(cuEventSynchronize(e), CUDA_ERROR_CAPTURED_EVENT);
  cuuint64_t id1 = 0, id3 = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo(s, &status, &id1), CUDA_SUCCESS);
  EXPECT_NE(id1, 0u);
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  size_t n = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo_v3(s, &status, &id3, &graph, &deps, &edges, &n), CUDA_SUCCESS);
  EXPECT_EQ(id3, id1);
  EXPECT_NE(graph, nullptr);
  ASSERT_EQ(n, 1u);  // the copy
  ASSERT_NE(edges, nullptr);
  EXPECT_EQ(edges[0].type, 0);
  EXPECT_EQ(cuStreamGetCaptureInfo_v3(s, &status, nullptr, nullptr, nullptr, &edges, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  size_t n2 = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(s, &status, nullptr, nullptr, nullptr, &n2), CUDA_SUCCESS);
  EXPECT_EQ(n2, 1u);
  CUgraph captured = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s, &captured), CUDA_SUCCESS);
  EXPECT_EQ(captured, graph);
  unsigned char seen = 0;
  ASSERT_EQ(cuMemcpyDtoH_v2(&seen, b + 10, 1), CUDA_SUCCESS);
  EXPECT_EQ(seen, 2);  // the captured copy did not run
  EXPECT_EQ(cuEventQuery(e), CUDA_SUCCESS);  // its capture ended

  // Allocation under a global-mode capture is refused (and invalidates it) unless this thread relaxes its mode.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(cuStreamBeginCapture(s), CUDA_SUCCESS);
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUdeviceptr c = 0;
  ASSERT_EQ(cuMemAlloc_v2(&c, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
  EXPECT_EQ(cuMemFree_v2(c), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(cuStreamEndCapture(s, &captured), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(captured, nullptr);
  EXPECT_EQ(cuMemFree_v2(c), CUDA_SUCCESS);

  // A copy from pageable memory cannot be captured: refused, capture invalidated. Pinned memory can.
  void* pinned = nullptr;
  ASSERT_EQ(cuMemAllocHost_v2(&pinned, 64), CUDA_SUCCESS);
  std::vector<unsigned char> pageable(64, 9);
  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync_v2(b, pinned, 64, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo(s, &status, &id3), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_GT(id3, id1);
  EXPECT_EQ(cuMemcpyHtoDAsync_v2(b, pageable.data(), 64, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(cuMemcpyHtoDAsync_v2(b, pinned, 64, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuStreamEndCapture(s, &captured), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  // Waiting on a capturing stream is refused too.
  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamEndCapture(s, &captured), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuStreamEndCapture(s, &captured), CUDA_ERROR_ILLEGAL_STATE);  // not capturing

  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy_v2(e), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
}

// A graph captured through the driver, instantiated and launched through the driver: each launch runs the
// captured work (a memset and a host node) again, in stream order; bad handles and flags are refused.
TEST(DriverStreams, CapturedGraphsInstantiateAndLaunch) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext ctx = Primary(0);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc_v2(&d, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32_v2(d, 0, 16), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  int launches = 0;
  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(d, 7, 16, s), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(s, [](void* n) { ++*static_cast<int*>(n); }, &launches), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  EXPECT_EQ(launches, 0);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(cuGraphInstantiateWithFlags(nullptr, graph, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 1ull << 40), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphInstantiateWithFlags(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH),
            CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<uint32_t*>(reinterpret_cast<void*>(d))[15], 0u) << "capture ran the work";
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(launches, 3);
  EXPECT_EQ(static_cast<uint32_t*>(reinterpret_cast<void*>(d))[15], 7u);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphLaunch(exec, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(d), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

}  // namespace
