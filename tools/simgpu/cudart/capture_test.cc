// Stream capture and graphs through the CUDA runtime API: what is recorded, when it runs, cross-stream forks
// and joins, and the refusals CUDA documents for calls made during capture.
#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"

namespace {

using simgpu::testing::Eventually;
using simgpu::testing::Gate;

struct Log {
  std::mutex mu;
  std::vector<int> order;
  std::vector<int> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return order;
  }
};
struct Entry {
  Log* log;
  int tag;
};
void Append(void* p) {
  auto* e = static_cast<Entry*>(p);
  std::lock_guard<std::mutex> lock(e->log->mu);
  e->log->order.push_back(e->tag);
}
void Increment(void* p) { ++*static_cast<std::atomic<int>*>(p); }

cudaStream_t NewStream(unsigned flags = cudaStreamNonBlocking) {
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
  return s;
}

cudaStreamCaptureStatus Status(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusInvalidated;
  EXPECT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  return status;
}

TEST(Capture, RecordedWorkRunsOnlyAtLaunchAndOncePerLaunch) {
  cudaStream_t s = NewStream();
  std::atomic<int> runs{0};
  EXPECT_EQ(Status(s), cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(Status(s), cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaLaunchHostFunc(s, Increment, &runs), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, Increment, &runs), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(Status(s), cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(runs.load(), 0);
  size_t n = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &n), cudaSuccess);
  EXPECT_EQ(n, 2u);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);  // the executable does not need the graph
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(runs.load(), 6);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);  // any stream, the legacy one included
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(runs.load(), 8);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, s), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaErrorInvalidValue);
  cudaGetLastError();
  cudaStreamDestroy(s);
}

TEST(Capture, ReplayReadsOperandsAtLaunchTime) {
  cudaStream_t s = NewStream();
  float *src, *dst, *pinned;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&src), 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dst), 64), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 64), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dst, src, 64, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, dst, 64, cudaMemcpyDeviceToHost, s), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch), cudaSuccess);
  for (float value : {1.5f, -7.0f}) {
    std::vector<float> host(16, value);
    ASSERT_EQ(cudaMemcpy(src, host.data(), 64, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    for (int i = 0; i < 16; ++i) ASSERT_EQ(pinned[i], value) << i;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(src);
  cudaFree(dst);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
}

// s1 forks s2 through an event, both record work, s2 joins back through another event.
TEST(Capture, CrossStreamForkAndJoin) {
  cudaStream_t s1 = NewStream(), s2 = NewStream();
  cudaEvent_t fork, join;
  ASSERT_EQ(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), cudaSuccess);
  Log log;
  Entry a{&log, 1}, b{&log, 2}, c{&log, 3};
  ASSERT_EQ(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s1, Append, &a), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(fork, s1), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(fork), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaEventSynchronize(fork), cudaErrorCapturedEvent);
  cudaGetLastError();
  EXPECT_EQ(Status(s2), cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamWaitEvent(s2, fork, 0), cudaSuccess);
  EXPECT_EQ(Status(s2), cudaStreamCaptureStatusActive);
  unsigned long long id1 = 0, id2 = 0;
  cudaStreamCaptureStatus st;
  cudaGraph_t g1 = nullptr, g2 = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t ndeps = 9;
  ASSERT_EQ(cudaStreamGetCaptureInfo(s1, &st, &id1, &g1, nullptr, nullptr, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamGetCaptureInfo(s2, &st, &id2, &g2, &deps, &edges, &ndeps), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  EXPECT_NE(id1, 0u);
  EXPECT_EQ(id1, id2);
  EXPECT_EQ(g1, g2);
  ASSERT_EQ(ndeps, 1u);  // s2's next node depends on host func a
  EXPECT_EQ(edges[0].type, 0);
  size_t count = 1;
  cudaGraphNode_t first = nullptr;
  ASSERT_EQ(cudaGraphGetNodes(g1, &first, &count), cudaSuccess);
  EXPECT_EQ(deps[0], first);
  ASSERT_EQ(cudaLaunchHostFunc(s2, Append, &b), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(join, s2), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s1, join, 0), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s1, Append, &c), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s1, &graph), cudaSuccess);
  EXPECT_EQ(Status(s2), cudaStreamCaptureStatusNone);  // the joined stream left the capture too
  EXPECT_EQ(cudaEventQuery(fork), cudaSuccess);         // its capture is over
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s2), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_EQ(log.Get(), std::vector<int>({1, 2, 3}));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST(Capture, AForkThatIsNotJoinedFailsEndCapture) {
  cudaStream_t s1 = NewStream(), s2 = NewStream();
  cudaEvent_t fork;
  ASSERT_EQ(cudaEventCreate(&fork), cudaSuccess);
  std::atomic<int> runs{0};
  ASSERT_EQ(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(fork, s1), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2, fork, 0), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s2, Increment, &runs), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(s2, nullptr), cudaErrorInvalidValue);
  cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(&runs);
  ASSERT_EQ(cudaStreamEndCapture(s1, &graph), cudaErrorStreamCaptureUnjoined);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(Status(s2), cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaLaunchHostFunc(s2, Increment, &runs), cudaSuccess);  // s2 runs work again
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_EQ(runs.load(), 1);
  cudaGetLastError();
  cudaEventDestroy(fork);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST(Capture, BeginAndEndErrors) {
  cudaStream_t s = NewStream(), other = NewStream();
  cudaGraph_t graph;
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamBeginCapture(s, static_cast<cudaStreamCaptureMode>(7)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
  cudaError_t from_other_thread = cudaSuccess;
  std::thread([&] { from_other_thread = cudaStreamEndCapture(s, &graph); }).join();
  EXPECT_EQ(from_other_thread, cudaErrorStreamCaptureWrongThread);
  EXPECT_EQ(Status(s), cudaStreamCaptureStatusActive);  // the wrong-thread attempt left it alone
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  size_t n = 7;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &n), cudaSuccess);
  EXPECT_EQ(n, 0u);  // an empty capture gives an empty graph, which still launches
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagDeviceLaunch), cudaErrorNotSupported);
  EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 1ull << 40), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphInstantiate(nullptr, graph, 0), cudaErrorInvalidValue);
  // A relaxed capture may be ended from another thread.
  ASSERT_EQ(cudaStreamBeginCapture(other, cudaStreamCaptureModeRelaxed), cudaSuccess);
  cudaGraph_t relaxed = nullptr;
  std::thread([&] { from_other_thread = cudaStreamEndCapture(other, &relaxed); }).join();
  EXPECT_EQ(from_other_thread, cudaSuccess);
  EXPECT_NE(relaxed, nullptr);
  cudaGraphDestroy(relaxed);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaGetLastError();
  cudaStreamDestroy(s);
  cudaStreamDestroy(other);
}

TEST(Capture, WaitingOnTheCapturingStreamIsRefusedAndInvalidates) {
  cudaStream_t s = NewStream();
  std::atomic<int> runs{0};
  for (int which = 0; which < 3; ++which) {
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    ASSERT_EQ(cudaLaunchHostFunc(s, Increment, &runs), cudaSuccess);
    cudaError_t refused = which == 0   ? cudaStreamSynchronize(s)
                          : which == 1 ? cudaStreamQuery(s)
                                       : cudaDeviceSynchronize();
    EXPECT_EQ(refused, cudaErrorStreamCaptureUnsupported) << which;
    EXPECT_EQ(Status(s), cudaStreamCaptureStatusInvalidated);
    EXPECT_EQ(cudaLaunchHostFunc(s, Increment, &runs), cudaErrorStreamCaptureInvalidated);
    cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(&runs);
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(Status(s), cudaStreamCaptureStatusNone);
  }
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(runs.load(), 0);
  cudaGetLastError();
  cudaStreamDestroy(s);
}

TEST(Capture, UnsafeCallsFollowTheCaptureMode) {
  cudaStream_t s = NewStream();
  void* p = nullptr;
  cudaGraph_t graph = nullptr;
  // Global capture on this thread: cudaMalloc is refused and the capture invalidated.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, 256), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(Status(s), cudaStreamCaptureStatusInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  // Relaxed capture: allowed.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  // A global capture on another thread forbids it here, unless this thread relaxes its own mode.
  Gate began, finish;
  cudaError_t other_end = cudaErrorUnknown;
  std::thread other([&] {
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    began.Open();
    finish.Wait();
    cudaGraph_t g = nullptr;
    other_end = cudaStreamEndCapture(s, &g);
    if (g != nullptr) cudaGraphDestroy(g);
  });
  began.Wait();
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);  // the default
  ASSERT_EQ(cudaMallocHost(&p, 64), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(p), cudaSuccess);
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);  // back to global
  EXPECT_EQ(mode, cudaStreamCaptureModeRelaxed);
  EXPECT_EQ(cudaMalloc(&p, 256), cudaErrorStreamCaptureUnsupported);
  finish.Open();
  other.join();
  EXPECT_EQ(other_end, cudaErrorStreamCaptureInvalidated);
  // A thread-local capture elsewhere does not concern this thread.
  Gate began2, finish2;
  std::thread local([&] {
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    began2.Open();
    finish2.Wait();
    cudaGraph_t g = nullptr;
    other_end = cudaStreamEndCapture(s, &g);
    if (g != nullptr) cudaGraphDestroy(g);
  });
  began2.Wait();
  ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  finish2.Open();
  local.join();
  EXPECT_EQ(other_end, cudaSuccess);
  mode = static_cast<cudaStreamCaptureMode>(9);
  EXPECT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaErrorInvalidValue);
  cudaGetLastError();
  cudaStreamDestroy(s);
}

TEST(Capture, LegacyStreamWorkWhileABlockingStreamCaptures) {
  cudaStream_t blocking = NewStream(cudaStreamDefault), nonblocking = NewStream();
  float* dev;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 64), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(nonblocking, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(dev, 0, 64, nullptr), cudaSuccess);  // no implicit dependency on it
  cudaStreamCaptureStatus st;
  EXPECT_EQ(cudaStreamIsCapturing(cudaStreamLegacy, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamEndCapture(nonblocking, &graph), cudaSuccess);
  cudaGraphDestroy(graph);

  ASSERT_EQ(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamIsCapturing(cudaStreamLegacy, &st), cudaErrorStreamCaptureImplicit);
  EXPECT_EQ(Status(blocking), cudaStreamCaptureStatusActive);  // a query does not invalidate
  EXPECT_EQ(cudaMemsetAsync(dev, 0, 64, nullptr), cudaErrorStreamCaptureImplicit);
  EXPECT_EQ(Status(blocking), cudaStreamCaptureStatusInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(blocking, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  cudaFree(dev);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

TEST(Capture, EventsAcrossTheCaptureBoundary) {
  cudaStream_t s = NewStream(), other = NewStream(), third = NewStream();
  cudaEvent_t outside, inside;
  ASSERT_EQ(cudaEventCreate(&outside), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&inside), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(outside, other), cudaSuccess);
  cudaEvent_t never;
  ASSERT_EQ(cudaEventCreate(&never), cudaSuccess);
  cudaGraph_t graph;
  // Waiting on an event never recorded is a no-op in capture too; on one recorded outside: isolation.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s, never, 0), cudaSuccess);
  EXPECT_EQ(Status(s), cudaStreamCaptureStatusActive);
  EXPECT_EQ(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
  EXPECT_EQ(Status(s), cudaStreamCaptureStatusInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  // Two separate captures cannot merge.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(third, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(inside, s), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(third, inside, 0), cudaErrorStreamCaptureMerge);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(third, &graph), cudaErrorStreamCaptureInvalidated);
  // Ending on a joined stream rather than the origin.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(inside, s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(other, inside, 0), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(other, &graph), cudaErrorStreamCaptureUnmatched);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  for (cudaEvent_t e : {outside, inside, never}) cudaEventDestroy(e);
  for (cudaStream_t t : {s, other, third}) cudaStreamDestroy(t);
}

TEST(Graphs, LaunchesOfOneExecutableAreOrderedAcrossStreams) {
  cudaStream_t s1 = NewStream(), s2 = NewStream(), cap = NewStream();
  Gate gate;
  std::atomic<int> runs{0};
  ASSERT_EQ(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(cap, Increment, &runs), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(cap, &graph), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s1, Gate::WaitFn, &gate), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s1), cudaSuccess);  // held behind the gate
  ASSERT_EQ(cudaGraphUpload(exec, s2), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s2), cudaSuccess);  // must wait for the launch on s1
  EXPECT_FALSE(Eventually([&] { return runs.load() > 0; }, std::chrono::milliseconds(100)));
  EXPECT_EQ(cudaStreamQuery(s2), cudaErrorNotReady);
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_EQ(runs.load(), 2);
  cudaGetLastError();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (cudaStream_t t : {s1, s2, cap}) cudaStreamDestroy(t);
}

TEST(Graphs, AGraphLaunchedDuringCaptureIsRecordedIntoTheOuterGraph) {
  cudaStream_t s = NewStream();
  std::atomic<int> runs{0};
  cudaGraph_t inner, outer;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, Increment, &runs), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s, &inner), cudaSuccess);
  cudaGraphExec_t inner_exec, outer_exec;
  ASSERT_EQ(cudaGraphInstantiate(&inner_exec, inner, 0), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(inner_exec, s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(inner_exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s, &outer), cudaSuccess);
  EXPECT_EQ(runs.load(), 0);
  ASSERT_EQ(cudaGraphInstantiate(&outer_exec, outer, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(outer_exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(runs.load(), 2);
  cudaGraphExecDestroy(outer_exec);
  cudaGraphExecDestroy(inner_exec);
  cudaGraphDestroy(outer);
  cudaGraphDestroy(inner);
  cudaStreamDestroy(s);
}

TEST(Graphs, CaptureIntoAnExistingGraphAndGetNodes) {
  cudaStream_t s = NewStream();
  cudaGraph_t graph;
  ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphCreate(&graph, 1), cudaErrorInvalidValue);
  Log log;
  Entry a{&log, 1}, b{&log, 2};
  for (Entry* e : {&a, &b}) {
    std::vector<cudaGraphNode_t> prior(2);
    size_t n = prior.size();
    ASSERT_EQ(cudaGraphGetNodes(graph, prior.data(), &n), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCaptureToGraph(s, graph, prior.data(), nullptr, n, cudaStreamCaptureModeGlobal),
              cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(graph), cudaErrorIllegalState);  // in use by the capture
    ASSERT_EQ(cudaLaunchHostFunc(s, Append, e), cudaSuccess);
    cudaGraph_t same = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s, &same), cudaSuccess);
    EXPECT_EQ(same, graph);
  }
  std::vector<cudaGraphNode_t> nodes(3, reinterpret_cast<cudaGraphNode_t>(&log));
  size_t n = nodes.size();
  ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &n), cudaSuccess);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(nodes[2], nullptr);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(log.Get(), std::vector<int>({1, 2}));
  cudaGetLastError();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

TEST(Streams, IdsDevicesAndPriorities) {
  cudaStream_t a = NewStream(), b = NewStream();
  unsigned long long ida = 0, idb = 0, idl = 0;
  ASSERT_EQ(cudaStreamGetId(a, &ida), cudaSuccess);
  ASSERT_EQ(cudaStreamGetId(b, &idb), cudaSuccess);
  ASSERT_EQ(cudaStreamGetId(nullptr, &idl), cudaSuccess);
  EXPECT_NE(ida, idb);
  EXPECT_NE(ida, idl);
  EXPECT_EQ(cudaStreamGetId(a, nullptr), cudaErrorInvalidValue);
  int least = 1, greatest = 1, priority = 1;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  EXPECT_EQ(least, 0);
  EXPECT_LT(greatest, 0);
  ASSERT_EQ(cudaStreamGetPriority(a, &priority), cudaSuccess);
  EXPECT_EQ(priority, 0);
  cudaStream_t low;
  ASSERT_EQ(cudaStreamCreateWithPriority(&low, cudaStreamDefault, least + 3), cudaSuccess);
  ASSERT_EQ(cudaStreamGetPriority(low, &priority), cudaSuccess);
  EXPECT_EQ(priority, least);  // clamped to the range
  int device = -1;
  ASSERT_EQ(cudaStreamGetDevice(low, &device), cudaSuccess);
  EXPECT_EQ(device, 0);
  cudaGetLastError();
  for (cudaStream_t t : {a, b, low}) cudaStreamDestroy(t);
}

}  // namespace
