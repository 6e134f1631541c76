// libnccl.so.2 in one process, for the API beyond the basic collectives: non-blocking communicators
// (ncclCommInitRankConfig with blocking = 0, ncclCommGetAsyncError, operations returning ncclInProgress),
// ncclCommSplit, ncclRedOpCreatePreMulSum/ncclRedOpDestroy, ncclAlltoAll/Gather/Scatter, grouped all-to-all
// send/recv and ncclBcast. The test sets SIMGPU_NCCL_ASYNC_DELAY_MS=40 (every background job takes at least that
// long, so a call made before polling is reliably refused) and small staging chunks.
#include <nccl.h>

#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/core/simgpu.h"

namespace {

// Set before libnccl reads its parameters (once, on first use).
const bool kEnvironment = [] {
  setenv("SIMGPU_NCCL_ASYNC_DELAY_MS", "40", 1);
  setenv("SIMGPU_NCCL_CHUNK_BYTES", "1024", 1);
  setenv("SIMGPU_NCCL_TIMEOUT_S", "30", 1);
  return true;
}();

cudaStream_t NewStream(int device) {
  simgpu::SetCurrentDevice(device);
  auto s = reinterpret_cast<cudaStream_t>(simgpu::CreateStream(cudaStreamNonBlocking, 0));
  simgpu::SetCurrentDevice(0);
  return s;
}
void Sync(cudaStream_t s) { simgpu::SynchronizeStream(simgpu::ResolveStream(s)); }

template <typename T>
T* Device(const std::vector<T>& v) {
  auto* p = static_cast<T*>(simgpu::AllocDevice(v.size() * sizeof(T) + 1));
  std::memcpy(p, v.data(), v.size() * sizeof(T));
  return p;
}

// Polls ncclCommGetAsyncError until it leaves ncclInProgress; returns the final state and how many polls saw
// ncclInProgress.
ncclResult_t Poll(ncclComm_t comm, int* in_progress_polls = nullptr) {
  ncclResult_t state = ncclInProgress;
  int polls = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
    EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    if (state == ncclInProgress) {
      ++polls;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  if (in_progress_polls != nullptr) *in_progress_polls = polls;
  return state;
}

// n communicators made with ncclCommInitRankConfig from this one thread: non-blocking inits return at once, so
// no group is needed.
std::vector<ncclComm_t> NonBlockingComms(int n) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(n, nullptr);
  for (int r = 0; r < n; ++r) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    simgpu::SetCurrentDevice(r);
    EXPECT_EQ(ncclCommInitRankConfig(&comms[r], n, id, r, &config), ncclInProgress);
    EXPECT_NE(comms[r], nullptr) << "NCCL sets *newcomm at once";
  }
  simgpu::SetCurrentDevice(0);
  return comms;
}

TEST(NcclNonBlocking, InitReturnsInProgressAndCompletesInTheBackground) {
  const int n = 3;
  std::vector<ncclComm_t> comms = NonBlockingComms(n);
  ncclResult_t state = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  // Using a communicator before it is ready is refused (ncclCommEnsureReady).
  float* buf = Device(std::vector<float>{1});
  cudaStream_t s0 = NewStream(0);
  EXPECT_EQ(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comms[0], s0), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(comms[0])).find("before the previous operation"), std::string::npos);
  for (int r = 0; r < n; ++r) {
    int polls = 0;
    EXPECT_EQ(Poll(comms[r], &polls), ncclSuccess) << r;
    if (r == 0) EXPECT_GT(polls, 0);
    int count = 0, rank = -1, device = -1;
    EXPECT_EQ(ncclCommCount(comms[r], &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(comms[r], &device), ncclSuccess);
    EXPECT_EQ(count, n);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(device, r);
  }
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(NcclNonBlocking, OperationsReturnInProgressAndResultsFollowThePoll) {
  const int n = 3;
  std::vector<ncclComm_t> comms = NonBlockingComms(n);
  for (ncclComm_t c : comms) ASSERT_EQ(Poll(c), ncclSuccess);
  std::vector<float*> bufs;
  std::vector<cudaStream_t> streams;
  for (int r = 0; r < n; ++r) {
    bufs.push_back(Device(std::vector<float>{float(r + 1), 0.5f}));
    streams.push_back(NewStream(r));
  }
  // Ungrouped: each call is its own (implicit) non-blocking group.
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ncclAllReduce(bufs[r], bufs[r], 2, ncclFloat32, ncclSum, comms[r], streams[r]), ncclInProgress);
  }
  // The next call before the poll is refused and changes nothing.
  EXPECT_EQ(ncclAllReduce(bufs[0], bufs[0], 2, ncclFloat32, ncclSum, comms[0], streams[0]), ncclInvalidArgument);
  for (int r = 0; r < n; ++r) ASSERT_EQ(Poll(comms[r]), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    Sync(streams[r]);
    EXPECT_EQ(bufs[r][0], 6.0f);
    EXPECT_EQ(bufs[r][1], 1.5f);
  }
  // Grouped: calls inside the group succeed, the group end returns ncclInProgress.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ncclAllReduce(bufs[r], bufs[r], 2, ncclFloat32, ncclMax, comms[r], streams[r]), ncclSuccess);
  }
  EXPECT_EQ(ncclGroupEnd(), ncclInProgress);
  for (int r = 0; r < n; ++r) ASSERT_EQ(Poll(comms[r]), ncclSuccess);
  for (int r = 0; r < n; ++r) Sync(streams[r]);
  EXPECT_EQ(bufs[2][0], 6.0f);
  // Finalize: ncclInProgress, then ncclSuccess once the work issued has run; finalizing twice is an error.
  for (int r = 0; r < n; ++r) EXPECT_EQ(ncclCommFinalize(comms[r]), ncclInProgress);
  for (int r = 0; r < n; ++r) EXPECT_EQ(Poll(comms[r]), ncclSuccess);
  EXPECT_EQ(ncclCommFinalize(comms[0]), ncclInvalidArgument);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(NcclNonBlocking, ConfigErrorsAndMixedGroups) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.blocking = 2;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument);
  bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument);
  // Blocking and non-blocking inits in one group are refused, as in NCCL's ncclAsyncLaunch.
  ncclUniqueId id2;
  ASSERT_EQ(ncclGetUniqueId(&id2), ncclSuccess);
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
  nonblocking.blocking = 0;
  ncclComm_t a = nullptr, b = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommInitRankConfig(&a, 1, id, 0, &blocking), ncclSuccess);
  EXPECT_EQ(ncclCommInitRankConfig(&b, 1, id2, 0, &nonblocking), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_EQ(b, nullptr);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(ncclCommDestroy(a), ncclSuccess);
}

class SplitTest : public ::testing::Test {
 protected:
  static constexpr int kRanks = 5;
  void SetUp() override {
    ASSERT_EQ(ncclCommInitAll(comms_, kRanks, nullptr), ncclSuccess);
    for (int i = 0; i < kRanks; ++i) streams_[i] = NewStream(i);
  }
  void TearDown() override {
    for (ncclComm_t c : comms_) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
  // All-reduces (sum) one float per member of `comms` (null entries skipped), each contributing `values[i]`.
  std::vector<float> AllReduce(const std::vector<ncclComm_t>& comms, const std::vector<float>& values) {
    std::vector<float*> bufs;
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    for (size_t i = 0; i < comms.size(); ++i) {
      bufs.push_back(Device(std::vector<float>{values[i]}));
      if (comms[i] != nullptr) {
        EXPECT_EQ(ncclAllReduce(bufs[i], bufs[i], 1, ncclFloat32, ncclSum, comms[i], streams_[i]), ncclSuccess);
      }
    }
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    std::vector<float> out;
    for (size_t i = 0; i < comms.size(); ++i) {
      Sync(streams_[i]);
      out.push_back(bufs[i][0]);
    }
    return out;
  }
  ncclComm_t comms_[kRanks] = {};
  cudaStream_t streams_[kRanks] = {};
};

TEST_F(SplitTest, ColorsKeysAndNoColor) {
  // Colors: ranks 0, 2, 4 -> 0; ranks 1, 3 -> 1; keys descending, so the child ranks reverse the parent order;
  // rank 4 ties with rank 0 on key and comes after it (ties keep parent order).
  const int color[kRanks] = {0, 1, 0, 1, 0};
  const int key[kRanks] = {5, 3, 1, 1, 5};
  std::vector<ncclComm_t> children(kRanks, nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    ASSERT_EQ(ncclCommSplit(comms_[i], color[i], key[i], &children[i], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  const int want_rank[kRanks] = {1, 1, 0, 0, 2};
  const int want_count[kRanks] = {3, 2, 3, 2, 3};
  for (int i = 0; i < kRanks; ++i) {
    ASSERT_NE(children[i], nullptr) << i;
    int count = 0, rank = -1, device = -1;
    EXPECT_EQ(ncclCommCount(children[i], &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(children[i], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(children[i], &device), ncclSuccess);
    EXPECT_EQ(count, want_count[i]) << i;
    EXPECT_EQ(rank, want_rank[i]) << i;
    EXPECT_EQ(device, i) << "a child keeps its parent's device";
  }
  std::vector<float> sums = AllReduce(children, {1, 10, 100, 1000, 10000});
  EXPECT_EQ(sums, (std::vector<float>{10101, 1010, 10101, 1010, 10101}));
  // A second split with the same colors makes new communicators; NOCOLOR ranks get NULL.
  std::vector<ncclComm_t> again(kRanks, reinterpret_cast<ncclComm_t>(0x1));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    int c = i == 1 || i == 4 ? NCCL_SPLIT_NOCOLOR : 7;
    ASSERT_EQ(ncclCommSplit(comms_[i], c, i, &again[i], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(again[1], nullptr);
  EXPECT_EQ(again[4], nullptr);
  std::vector<float> sums2 = AllReduce(again, {1, 10, 100, 1000, 10000});
  EXPECT_EQ(sums2[0], 1101.0f);
  EXPECT_EQ(sums2[3], 1101.0f);
  // The parent still works, and the first children too.
  EXPECT_EQ(AllReduce({comms_, comms_ + kRanks}, {1, 2, 3, 4, 5})[4], 15.0f);
  EXPECT_EQ(AllReduce(children, {1, 1, 1, 1, 1})[1], 2.0f);
  for (ncclComm_t c : children) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (ncclComm_t c : again) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST_F(SplitTest, SplitOfASplitAndArgumentErrors) {
  std::vector<ncclComm_t> halves(kRanks, nullptr), quarters(kRanks, nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) ASSERT_EQ(ncclCommSplit(comms_[i], i < 3, i, &halves[i], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  // Ranks 0, 1, 2 form one half: split it again into {0} and {1, 2}.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(ncclCommSplit(halves[i], i > 0, 0, &quarters[i], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  int count = 0;
  EXPECT_EQ(ncclCommCount(quarters[0], &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ncclCommCount(quarters[2], &count), ncclSuccess);
  EXPECT_EQ(count, 2);
  std::vector<float> sums = AllReduce({quarters[0], quarters[1], quarters[2]}, {1, 2, 4});
  EXPECT_EQ(sums, (std::vector<float>{1, 6, 6}));
  ncclComm_t out = nullptr;
  EXPECT_EQ(ncclCommSplit(nullptr, 0, 0, &out, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommSplit(comms_[0], 0, 0, nullptr, nullptr), ncclInvalidArgument);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 1;
  EXPECT_EQ(ncclCommSplit(comms_[0], 0, 0, &out, &bad), ncclInvalidArgument);
  for (ncclComm_t c : quarters) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (ncclComm_t c : halves) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(NcclNonBlocking, SplitOfANonBlockingParentReturnsTheChildOnceThePollSucceeds) {
  const int n = 3;
  std::vector<ncclComm_t> parents = NonBlockingComms(n);
  for (ncclComm_t c : parents) ASSERT_EQ(Poll(c), ncclSuccess);
  std::vector<ncclComm_t> children(n, nullptr);
  // Non-blocking split calls return at once, so one thread may make them all without a group.
  for (int r = 0; r < n; ++r) EXPECT_EQ(ncclCommSplit(parents[r], 0, n - r, &children[r], nullptr), ncclSuccess);
  ncclResult_t state = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(parents[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  EXPECT_EQ(__atomic_load_n(&children[0], __ATOMIC_ACQUIRE), nullptr) << "*newcomm is set when the split completes";
  for (int r = 0; r < n; ++r) ASSERT_EQ(Poll(parents[r]), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_NE(children[r], nullptr);
    EXPECT_EQ(Poll(children[r]), ncclSuccess) << "the child inherits non-blocking mode and is ready";
    int rank = -1;
    EXPECT_EQ(ncclCommUserRank(children[r], &rank), ncclSuccess);
    EXPECT_EQ(rank, n - 1 - r);
  }
  for (ncclComm_t c : children) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (ncclComm_t c : parents) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

class CollTest : public ::testing::Test {
 protected:
  static constexpr int kRanks = 4;
  void SetUp() override {
    ASSERT_EQ(ncclCommInitAll(comms_, kRanks, nullptr), ncclSuccess);
    for (int i = 0; i < kRanks; ++i) streams_[i] = NewStream(i);
  }
  void TearDown() override {
    for (ncclComm_t c : comms_) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
  void SyncAll() {
    for (cudaStream_t s : streams_) Sync(s);
  }
  ncclComm_t comms_[kRanks] = {};
  cudaStream_t streams_[kRanks] = {};
};

TEST_F(CollTest, PreMulSumWithHostAndDeviceScalars) {
  // Rank r scales by r + 1 (host scalars, read at creation) or by a device scalar read when the collective runs.
  std::vector<ncclRedOp_t> host_ops(kRanks), dev_ops(kRanks);
  std::vector<float*> dev_scalars;
  for (int r = 0; r < kRanks; ++r) {
    float k = float(r + 1);
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&host_ops[r], &k, ncclFloat32, ncclScalarHostImmediate, comms_[r]),
              ncclSuccess);
    EXPECT_GE(static_cast<int>(host_ops[r]), static_cast<int>(ncclNumOps));
    dev_scalars.push_back(Device(std::vector<float>{0.0f}));
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&dev_ops[r], dev_scalars[r], ncclFloat32, ncclScalarDevice, comms_[r]),
              ncclSuccess);
  }
  std::vector<float*> a;
  for (int r = 0; r < kRanks; ++r) a.push_back(Device(std::vector<float>{1.0f, float(r)}));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(a[r], a[r], 2, ncclFloat32, host_ops[r], comms_[r], streams_[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  SyncAll();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(a[r][0], 1.0f + 2 + 3 + 4);
    EXPECT_EQ(a[r][1], 0.0f * 1 + 1 * 2 + 2 * 3 + 3 * 4);
  }
  // The device scalars were 0 when the ops were made; what counts is their value when the collective runs.
  for (int r = 0; r < kRanks; ++r) *dev_scalars[r] = 0.5f * float(r);
  std::vector<float*> c;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    c.push_back(Device(std::vector<float>{2.0f}));
    ASSERT_EQ(ncclAllReduce(c[r], c[r], 1, ncclFloat32, dev_ops[r], comms_[r], streams_[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  // Destroying an op right after the last call that uses it is allowed (NCCL: once that call has returned).
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(ncclRedOpDestroy(dev_ops[r], comms_[r]), ncclSuccess);
  SyncAll();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(c[r][0], 2.0f * (0 + 0.5f + 1 + 1.5f));
  // Errors: built-in op, destroyed op, op of another communicator, datatype mismatch.
  EXPECT_EQ(ncclRedOpDestroy(ncclSum, comms_[0]), ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpDestroy(dev_ops[0], comms_[0]), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(c[0], c[0], 1, ncclFloat32, dev_ops[0], comms_[0], streams_[0]), ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpDestroy(host_ops[0], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(c[0], c[0], 1, ncclFloat64, host_ops[0], comms_[0], streams_[0]), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(comms_[0])).find("does not match"), std::string::npos);
  if (host_ops[1] != host_ops[0]) {
    EXPECT_EQ(ncclAllReduce(c[0], c[0], 1, ncclFloat32, host_ops[1], comms_[0], streams_[0]), ncclInvalidArgument);
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(ncclRedOpDestroy(host_ops[r], comms_[r]), ncclSuccess);
}

TEST_F(CollTest, PreMulSumOverIntegersWraps) {
  std::vector<ncclRedOp_t> ops(kRanks);
  std::vector<int32_t*> bufs;
  for (int r = 0; r < kRanks; ++r) {
    int32_t k = 1 << 30;  // products wrap
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[r], &k, ncclInt32, ncclScalarHostImmediate, comms_[r]), ncclSuccess);
    bufs.push_back(Device(std::vector<int32_t>{r + 1}));
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(bufs[r], bufs[r], 1, ncclInt32, ops[r], comms_[r], streams_[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  SyncAll();
  // (1 + 2 + 3 + 4) * 2^30 mod 2^32 = 10 * 2^30 mod 2^32 = 2^31, i.e. INT32_MIN.
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(bufs[r][0], INT32_MIN);
}

TEST_F(CollTest, AlltoAllGatherScatterAndBcast) {
  const size_t count = 700;  // several staging chunks (CMakeLists: SIMGPU_NCCL_CHUNK_BYTES=1024)
  auto value = [](int from, int to, size_t i) { return float(from * 1000000 + to * 10000 + int(i)); };
  std::vector<float*> send, recv, gathered, scattered;
  for (int r = 0; r < kRanks; ++r) {
    std::vector<float> s(kRanks * count);
    for (int to = 0; to < kRanks; ++to) {
      for (size_t i = 0; i < count; ++i) s[to * count + i] = value(r, to, i);
    }
    send.push_back(Device(s));
    recv.push_back(Device(std::vector<float>(kRanks * count, -1)));
    gathered.push_back(Device(std::vector<float>(kRanks * count, -1)));
    scattered.push_back(Device(std::vector<float>(count, -1)));
  }
  const int root = 2;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAlltoAll(send[r], recv[r], count, ncclFloat32, comms_[r], streams_[r]), ncclSuccess);
    // Gather rank r's block for the root; in place at the root (sendbuff == recvbuff + root * count).
    const float* gsrc = r == root ? gathered[r] + root * count : send[r] + root * count;
    if (r == root) std::memcpy(gathered[r] + root * count, send[r] + root * count, count * sizeof(float));
    ASSERT_EQ(ncclGather(gsrc, r == root ? gathered[r] : nullptr, count, ncclFloat32, root, comms_[r], streams_[r]),
              ncclSuccess);
    ASSERT_EQ(ncclScatter(r == root ? send[r] : nullptr, scattered[r], count, ncclFloat32, root, comms_[r],
                          streams_[r]),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  SyncAll();
  for (int r = 0; r < kRanks; ++r) {
    for (int from = 0; from < kRanks; ++from) {
      for (size_t i = 0; i < count; i += 97) {
        ASSERT_EQ(recv[r][from * count + i], value(from, r, i)) << r << " " << from << " " << i;
      }
      ASSERT_EQ(recv[r][from * count + count - 1], value(from, r, count - 1));
    }
    for (size_t i = 0; i < count; i += 53) ASSERT_EQ(scattered[r][i], value(root, r, i));
  }
  for (int from = 0; from < kRanks; ++from) {
    EXPECT_EQ(gathered[root][from * count], value(from, root, 0));
    EXPECT_EQ(gathered[root][from * count + count - 1], value(from, root, count - 1));
  }
  EXPECT_EQ(gathered[0][0], -1.0f) << "a non-root's recvbuff is not written";
  // ncclBcast: in place from rank 1.
  std::vector<double*> b;
  for (int r = 0; r < kRanks; ++r) b.push_back(Device(std::vector<double>{r == 1 ? 3.25 : 0.0, r == 1 ? -1.0 : 0.0}));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(ncclBcast(b[r], 2, ncclFloat64, 1, comms_[r], streams_[r]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  SyncAll();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(b[r][0] + b[r][1], 2.25);
  EXPECT_EQ(ncclGather(send[0], nullptr, count, ncclFloat32, kRanks, comms_[0], streams_[0]), ncclInvalidArgument);
  EXPECT_EQ(ncclScatter(send[0], nullptr, count, ncclFloat32, 0, comms_[0], streams_[0]), ncclInvalidArgument);
}

TEST_F(CollTest, WindowsAndRegistrationsAreHandlesOnly) {
  std::vector<float*> bufs;
  std::vector<ncclWindow_t> wins(kRanks, nullptr);
  std::vector<void*> handles(kRanks, nullptr);
  for (int r = 0; r < kRanks; ++r) {
    void* p = nullptr;
    simgpu::SetCurrentDevice(r);
    ASSERT_EQ(ncclMemAlloc(&p, 4096), ncclSuccess);
    bufs.push_back(static_cast<float*>(p));
    bufs[r][0] = float(r);
    ASSERT_EQ(ncclCommWindowRegister(comms_[r], p, 4096, &wins[r], NCCL_WIN_COLL_SYMMETRIC), ncclSuccess);
    ASSERT_EQ(ncclCommRegister(comms_[r], p, 4096, &handles[r]), ncclSuccess);
    EXPECT_NE(wins[r], nullptr);
  }
  simgpu::SetCurrentDevice(0);
  ncclWindow_t untouched = reinterpret_cast<ncclWindow_t>(0x10);
  EXPECT_EQ(ncclCommWindowRegister(comms_[0], nullptr, 0, &untouched, 0), ncclSuccess);
  EXPECT_EQ(untouched, reinterpret_cast<ncclWindow_t>(0x10)) << "NCCL registers nothing for an empty buffer";
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(bufs[r], bufs[r], 1, ncclFloat32, ncclSum, comms_[r], streams_[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  SyncAll();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(bufs[r][0], 6.0f);
    EXPECT_EQ(ncclCommDeregister(comms_[r], handles[r]), ncclSuccess);
    EXPECT_EQ(ncclCommWindowDeregister(comms_[r], wins[r]), ncclSuccess);
    EXPECT_EQ(ncclMemFree(bufs[r]), ncclSuccess);
  }
}

TEST_F(CollTest, GroupedSendRecvAllToAllWithUnequalSizes) {
  // Every rank sends to every rank (itself included) a message whose size depends on the pair, all in one
  // group; sizes reach several rings (CMakeLists: 1 KiB), so only concurrent progress completes them.
  auto size = [](int from, int to) { return size_t(100 + 333 * from + 77 * to); };
  std::vector<std::vector<int32_t*>> out(kRanks), in(kRanks);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    for (int p = 0; p < kRanks; ++p) {
      std::vector<int32_t> msg(size(r, p));
      for (size_t i = 0; i < msg.size(); ++i) msg[i] = int32_t(r * 100000 + p * 1000 + int(i % 1000));
      out[r].push_back(Device(msg));
      in[r].push_back(Device(std::vector<int32_t>(size(p, r), -1)));
    }
    for (int k = 0; k < kRanks; ++k) {
      int p = (r + k) % kRanks;
      ASSERT_EQ(ncclSend(out[r][p], size(r, p), ncclInt32, p, comms_[r], streams_[r]), ncclSuccess);
      ASSERT_EQ(ncclRecv(in[r][p], size(p, r), ncclInt32, p, comms_[r], streams_[r]), ncclSuccess);
    }
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  SyncAll();
  for (int r = 0; r < kRanks; ++r) {
    for (int p = 0; p < kRanks; ++p) {
      const size_t n = size(p, r);
      EXPECT_EQ(in[r][p][0], p * 100000 + r * 1000);
      EXPECT_EQ(in[r][p][n - 1], int32_t(p * 100000 + r * 1000 + int((n - 1) % 1000)));
    }
  }
}

}  // namespace
