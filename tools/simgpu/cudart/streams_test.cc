// Stream, event and default-stream semantics of simgpu's libcudart.so.13, observed through the CUDA API: a gate
// (a host function that blocks a stream) holds one stream at a known point while the test watches the others.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"

namespace {

using simgpu::testing::Eventually;
using simgpu::testing::Gate;

void Block(cudaStream_t stream, Gate* gate) {
  ASSERT_EQ(cudaLaunchHostFunc(stream, Gate::WaitFn, gate), cudaSuccess);
}

// A host function that appends its tag to a shared log, to observe execution order across streams.
struct Log {
  std::mutex mu;
  std::vector<int> order;
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

TEST(Streams, AsyncCopiesRunInStreamOrderAfterTheCallReturns) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  float *dev, *pinned_in, *pinned_out;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 1024 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned_in), 1024 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned_out), 1024 * sizeof(float)), cudaSuccess);
  for (int i = 0; i < 1024; ++i) {
    pinned_in[i] = static_cast<float>(i);
    pinned_out[i] = -1.0f;
  }
  Gate gate;
  Block(s, &gate);
  ASSERT_EQ(cudaMemcpyAsync(dev, pinned_in, 4096, cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev, 0, 16, s), cudaSuccess);  // zeroes elements 0..3 after the upload
  ASSERT_EQ(cudaMemcpyAsync(pinned_out, dev, 4096, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotReady);  // the runtime records NotReady as the last error
  EXPECT_EQ(pinned_out[100], -1.0f);                 // nothing ran yet
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(pinned_out[i], i < 4 ? 0.0f : static_cast<float>(i)) << i;
  EXPECT_EQ(cudaFreeHost(pinned_in), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned_out), cudaSuccess);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(Streams, AsyncCopyFromPageableMemoryHasConsumedTheSourceOnReturn) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  float* dev;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 64 * sizeof(float)), cudaSuccess);
  std::vector<float> host(64, 3.0f), back(64, 0.0f);
  ASSERT_EQ(cudaMemcpyAsync(dev, host.data(), 256, cudaMemcpyHostToDevice, s), cudaSuccess);
  std::fill(host.begin(), host.end(), 9.0f);  // allowed: the pageable source was staged before the call returned
  ASSERT_EQ(cudaMemcpyAsync(back.data(), dev, 256, cudaMemcpyDeviceToHost, s), cudaSuccess);
  for (float v : back) ASSERT_EQ(v, 3.0f);  // and a pageable destination is written on return
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(Streams, LegacyStreamWaitsForBlockingStreamsButNotNonBlockingOnes) {
  cudaStream_t blocking, nonblocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
  Log log;
  Entry legacy_entry{&log, 1};

  Gate nb_gate;
  Block(nonblocking, &nb_gate);
  ASSERT_EQ(cudaLaunchHostFunc(nullptr, Append, &legacy_entry), cudaSuccess);
  EXPECT_TRUE(Eventually([&] { return cudaStreamQuery(nullptr) == cudaSuccess; }))
      << "legacy stream waited for a non-blocking stream";
  nb_gate.Open();

  Gate b_gate;
  Block(blocking, &b_gate);
  Entry legacy_after{&log, 2};
  ASSERT_EQ(cudaLaunchHostFunc(cudaStreamLegacy, Append, &legacy_after), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady) << "legacy stream ran ahead of a blocking stream";
  {
    std::lock_guard<std::mutex> lock(log.mu);
    EXPECT_EQ(log.order, std::vector<int>({1}));
  }
  b_gate.Open();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(log.order, std::vector<int>({1, 2}));
  (void)cudaGetLastError();
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(nonblocking), cudaSuccess);
}

TEST(Streams, BlockingStreamWaitsForEarlierLegacyWork) {
  cudaStream_t blocking, nonblocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
  Gate gate;
  Block(nullptr, &gate);
  Log log;
  Entry on_blocking{&log, 1}, on_nonblocking{&log, 2};
  ASSERT_EQ(cudaLaunchHostFunc(blocking, Append, &on_blocking), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(nonblocking, Append, &on_nonblocking), cudaSuccess);
  EXPECT_TRUE(Eventually([&] { return cudaStreamQuery(nonblocking) == cudaSuccess; }));
  EXPECT_EQ(cudaStreamQuery(blocking), cudaErrorNotReady);
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  EXPECT_EQ(log.order, std::vector<int>({2, 1}));
  (void)cudaGetLastError();
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(nonblocking), cudaSuccess);
}

TEST(Streams, PerThreadDefaultStreamsAreDistinctAndSynchronizeWithTheLegacyStream) {
  Gate gate;
  Block(cudaStreamPerThread, &gate);
  std::atomic<bool> other_done{false};
  std::thread other([&] {
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);  // another thread's stream: idle
    other_done = true;
  });
  EXPECT_TRUE(Eventually([&] { return other_done.load(); }));
  other.join();
  Log log;
  Entry legacy{&log, 1};
  ASSERT_EQ(cudaLaunchHostFunc(nullptr, Append, &legacy), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(log.order.empty()) << "legacy stream did not wait for the per-thread stream";
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(log.order, std::vector<int>({1}));
}

TEST(Streams, StreamWaitEventOrdersWorkAcrossStreams) {
  cudaStream_t producer, consumer;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t ready;
  ASSERT_EQ(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), cudaSuccess);
  Gate gate;
  Block(producer, &gate);
  ASSERT_EQ(cudaEventRecord(ready, producer), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(consumer, ready, 0), cudaSuccess);
  Log log;
  Entry after_wait{&log, 1};
  ASSERT_EQ(cudaLaunchHostFunc(consumer, Append, &after_wait), cudaSuccess);
  // Re-recording the event later must not change what the consumer already waits for.
  ASSERT_EQ(cudaEventRecord(ready, consumer), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(log.order.empty());
  EXPECT_EQ(cudaEventQuery(ready), cudaErrorNotReady);
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(consumer), cudaSuccess);
  EXPECT_EQ(log.order, std::vector<int>({1}));
  EXPECT_EQ(cudaEventQuery(ready), cudaSuccess);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaEventDestroy(ready), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(producer), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(consumer), cudaSuccess);
}

void Sleep20Ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

TEST(Events, ElapsedTimeMeasuresStreamWorkBetweenRecords) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudaEvent_t start, stop;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  float ms = -1.0f;
  EXPECT_EQ(cudaEventQuery(start), cudaSuccess);  // never recorded: complete, as CUDA says
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaErrorInvalidResourceHandle);
  Gate gate;
  Block(s, &gate);
  ASSERT_EQ(cudaEventRecord(start, s), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, Sleep20Ms, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(stop, s), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaErrorNotReady);
  gate.Open();
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 19.0f);
  EXPECT_LT(ms, 5000.0f);
  EXPECT_EQ(cudaEventElapsedTime(nullptr, start, stop), cudaErrorInvalidValue);
  cudaEvent_t untimed;
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(untimed), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventDestroy(untimed), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(stop), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(Events, InvalidHandlesAndFlags) {
  cudaEvent_t e;
  EXPECT_EQ(cudaEventCreateWithFlags(&e, 0x80), cudaErrorInvalidValue);
  EXPECT_EQ(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
  EXPECT_EQ(cudaEventCreate(nullptr), cudaErrorInvalidValue);
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  ASSERT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(e, nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventSynchronize(e), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

TEST(Streams, InvalidHandlesFlagsAndPriorities) {
  cudaStream_t s;
  EXPECT_EQ(cudaStreamCreate(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, 0x4), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamDestroy(nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
  int least = 1, greatest = 1;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  EXPECT_LE(greatest, least);
  ASSERT_EQ(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest - 100), cudaSuccess);
  int priority = 0;
  unsigned flags = 0;
  ASSERT_EQ(cudaStreamGetPriority(s, &priority), cudaSuccess);
  EXPECT_EQ(priority, greatest);  // clamped
  ASSERT_EQ(cudaStreamGetFlags(s, &flags), cudaSuccess);
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamNonBlocking));
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaMemsetAsync(nullptr, 0, 0, s), cudaSuccess);  // zero bytes: nothing to do
}

TEST(Streams, DestroyStillCompletesQueuedWork) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  Log log;
  Entry e{&log, 7};
  ASSERT_EQ(cudaLaunchHostFunc(s, Sleep20Ms, nullptr), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, Append, &e), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(log.mu);
    return log.order == std::vector<int>({7});
  }));
}

}  // namespace
