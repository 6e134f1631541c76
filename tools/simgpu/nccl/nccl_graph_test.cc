// libnccl.so.2 under CUDA stream capture, in one process (ncclCommInitAll): a group whose operations use two
// streams of one communicator, captured and replayed, and NCCL's refusal of a group that mixes captured and
// uncaptured streams. The multi-process replays are in nccl_multiproc_test (NcclGraph).
#include <nccl.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/core/simgpu.h"

namespace {

simgpu::Stream* NewStream(int device) {
  simgpu::SetCurrentDevice(device);
  simgpu::Stream* s = simgpu::CreateStream(cudaStreamNonBlocking, 0);
  simgpu::SetCurrentDevice(0);
  return s;
}
cudaStream_t Handle(simgpu::Stream* s) { return reinterpret_cast<cudaStream_t>(s); }

// Makes `to` wait for the work on `from` so far (a fork into, or a join back to, a capture).
void Depend(simgpu::Stream* from, simgpu::Stream* to) {
  simgpu::Event* ev = simgpu::CreateEvent(cudaEventDisableTiming);
  ASSERT_EQ(simgpu::RecordEvent(ev, from), cudaSuccess);
  ASSERT_EQ(simgpu::StreamWaitEvent(to, ev), cudaSuccess);
  simgpu::DestroyEvent(ev);
}

TEST(NcclGraph, AGroupOnTwoCapturedStreamsReplaysOnEveryLaunch) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 1000;  // several 1 KiB staging chunks
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess);
  simgpu::Stream* main[kRanks];
  simgpu::Stream* side[kRanks];
  float* sum_in[kRanks];
  float* sum_out[kRanks];
  int32_t* gather_in[kRanks];
  int32_t* gather_out[kRanks];
  simgpu::Graph* graphs[kRanks];
  simgpu::GraphExec* execs[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    main[r] = NewStream(r);
    side[r] = NewStream(r);
    sum_in[r] = static_cast<float*>(simgpu::AllocDevice(kCount * 4));
    sum_out[r] = static_cast<float*>(simgpu::AllocDevice(kCount * 4));
    gather_in[r] = static_cast<int32_t*>(simgpu::AllocDevice(kCount * 4));
    gather_out[r] = static_cast<int32_t*>(simgpu::AllocDevice(kRanks * kCount * 4));
    ASSERT_EQ(simgpu::BeginCapture(main[r], cudaStreamCaptureModeRelaxed), cudaSuccess);
    Depend(main[r], side[r]);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(sum_in[r], sum_out[r], kCount, ncclFloat32, ncclSum, comms[r], Handle(main[r])),
              ncclSuccess);
    ASSERT_EQ(ncclAllGather(gather_in[r], gather_out[r], kCount, ncclInt32, comms[r], Handle(side[r])),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    Depend(side[r], main[r]);
    ASSERT_EQ(simgpu::EndCapture(main[r], &graphs[r]), cudaSuccess);
    ASSERT_NE(graphs[r], nullptr);
    execs[r] = simgpu::InstantiateGraph(graphs[r]);
  }
  for (int launch = 0; launch < 3; ++launch) {
    for (int r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < kCount; ++i) {
        sum_in[r][i] = static_cast<float>(launch * 1000 + r * 10) + static_cast<float>(i);
        gather_in[r][i] = launch * 100000 + r * 10000 + static_cast<int32_t>(i);
      }
    }
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(simgpu::LaunchGraph(execs[r], main[r]), cudaSuccess);
    for (int r = 0; r < kRanks; ++r) simgpu::SynchronizeStream(main[r]);
    for (int r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < kCount; ++i) {
        const float want = static_cast<float>(launch * 1000) + static_cast<float>(i) +
                           static_cast<float>(launch * 1000 + 10) + static_cast<float>(i);
        ASSERT_EQ(sum_out[r][i], want) << "launch " << launch << " rank " << r << " element " << i;
        for (int q = 0; q < kRanks; ++q) {
          ASSERT_EQ(gather_out[r][q * kCount + i], launch * 100000 + q * 10000 + static_cast<int32_t>(i))
              << "launch " << launch << " rank " << r << " block " << q << " element " << i;
        }
      }
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    ncclResult_t async = ncclInProgress;
    EXPECT_EQ(ncclCommGetAsyncError(comms[r], &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess);
    simgpu::DestroyGraphExec(execs[r]);
    simgpu::DestroyGraph(graphs[r]);
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  }
}

TEST(NcclGraph, AGroupMixingCapturedAndUncapturedStreamsIsRefused) {
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  simgpu::Stream* captured = NewStream(0);
  simgpu::Stream* plain = NewStream(0);
  auto* buf = static_cast<float*>(simgpu::AllocDevice(64 * 4));
  std::vector<float> ones(64, 1.0f);
  std::memcpy(buf, ones.data(), 64 * 4);
  ASSERT_EQ(simgpu::BeginCapture(captured, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(buf, buf, 32, ncclFloat32, ncclSum, comm, Handle(captured)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(buf + 32, buf + 32, 32, ncclFloat32, ncclSum, comm, Handle(plain)), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  simgpu::Graph* graph = nullptr;
  ASSERT_EQ(simgpu::EndCapture(captured, &graph), cudaSuccess);
  EXPECT_TRUE(simgpu::GraphNodes(graph).empty()) << "nothing of the refused group may be recorded";
  simgpu::DestroyGraph(graph);
  // The communicator is still usable.
  ASSERT_EQ(ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, Handle(plain)), ncclSuccess);
  simgpu::SynchronizeStream(plain);
  EXPECT_EQ(buf[0], 1.0f);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
