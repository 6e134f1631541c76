// libnccl.so.2 in one process: its exports, the API's argument checks and return codes, ncclCommInitAll with
// the group pattern, and ncclCommInitRank of several ranks from one thread inside a group.
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/core/simgpu.h"

namespace {

cudaStream_t NewStream(int device) {
  simgpu::SetCurrentDevice(device);
  auto s = reinterpret_cast<cudaStream_t>(simgpu::CreateStream(cudaStreamNonBlocking, 0));
  simgpu::SetCurrentDevice(0);
  return s;
}
void Sync(cudaStream_t s) { simgpu::SynchronizeStream(simgpu::ResolveStream(s)); }

float* DeviceFloats(const std::vector<float>& v) {
  auto* p = static_cast<float*>(simgpu::AllocDevice(v.size() * sizeof(float)));
  std::memcpy(p, v.data(), v.size() * sizeof(float));
  return p;
}

TEST(NcclExports, WeakNamesWithStrongPAliasesAndNothingElse) {
  FILE* f = popen((std::string("objdump -T ") + SIMGPU_NCCL_LIB).c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::set<std::string> weak, strong;
  std::vector<std::string> others;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string s; in >> s;) w.push_back(s);
    // "ADDR l/g/w [D] DF .text SIZE VERSION NAME" for defined symbols.
    if (w.size() < 6 || w[w.size() - 4] != ".text") continue;
    const std::string& name = w.back();
    EXPECT_EQ(w[w.size() - 2], "Base") << name << " must not carry a version node";
    if (w[1] == "w" && name.rfind("nccl", 0) == 0) {
      weak.insert(name);
    } else if (w[1] == "g" && name.rfind("pnccl", 0) == 0) {
      strong.insert(name.substr(1));
    } else {
      others.push_back(name);
    }
  }
  pclose(f);
  EXPECT_TRUE(others.empty()) << "unexpected export " << others.front();
  EXPECT_EQ(weak, strong);
  for (const char* fn : {"ncclGetUniqueId", "ncclCommInitRank", "ncclCommInitAll", "ncclCommDestroy",
                         "ncclCommAbort", "ncclCommFinalize", "ncclCommCount", "ncclCommUserRank",
                         "ncclCommCuDevice", "ncclGetVersion", "ncclGetErrorString", "ncclGetLastError",
                         "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclReduce",
                         "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd", "ncclCommInitRankConfig",
                         "ncclCommInitRankScalable", "ncclCommGetAsyncError", "ncclCommSplit", "ncclBcast",
                         "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclAlltoAll", "ncclGather", "ncclScatter",
                         "ncclCommRegister", "ncclCommDeregister", "ncclMemAlloc", "ncclMemFree"}) {
    EXPECT_EQ(weak.count(fn), 1u) << fn;
  }
}

// Every name simgpu exports is one NVIDIA's libnccl.so.2 exports (so a program linked against NVIDIA's library
// finds simgpu's definitions), checked when the real library is installed.
TEST(NcclExports, AreASubsetOfNvidiasLibnccl) {
  if (FILE* probe = std::fopen(NVIDIA_NCCL_LIB, "r")) {
    std::fclose(probe);
  } else {
    GTEST_SKIP() << NVIDIA_NCCL_LIB << " is not installed";
  }
  auto names = [](const std::string& lib) {
    std::set<std::string> out;
    FILE* f = popen(("nm -D --defined-only " + lib).c_str(), "r");
    char line[512];
    while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
      std::istringstream in(line);
      std::vector<std::string> w;
      for (std::string s; in >> s;) w.push_back(s);
      if (w.size() == 3) out.insert(w[2]);
    }
    if (f != nullptr) pclose(f);
    return out;
  };
  std::set<std::string> ours = names(SIMGPU_NCCL_LIB), theirs = names(NVIDIA_NCCL_LIB);
  ASSERT_GT(ours.size(), 40u);
  for (const std::string& name : ours) EXPECT_EQ(theirs.count(name), 1u) << name;
}

TEST(NcclApi, VersionAndErrorStrings) {
  int v = 0;
  EXPECT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_NE(std::string(ncclGetErrorString(ncclInvalidArgument)).find("invalid argument"), std::string::npos);
  EXPECT_NE(std::string(ncclGetErrorString(ncclRemoteError)).find("remote process exited"), std::string::npos);
  EXPECT_EQ(ncclGetUniqueId(nullptr), ncclInvalidArgument);
  ncclUniqueId a, b;
  ASSERT_EQ(ncclGetUniqueId(&a), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&b), ncclSuccess);
  EXPECT_NE(std::memcmp(&a, &b, sizeof a), 0);
}

TEST(NcclApi, CommInitRankArgumentErrors) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(nullptr, 2, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, -1), ncclInvalidArgument);
  ncclUniqueId zero;
  std::memset(&zero, 0, sizeof zero);
  EXPECT_EQ(ncclCommInitRank(&comm, 1, zero, 0), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("ncclGetUniqueId"), std::string::npos);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommFinalize(nullptr), ncclSuccess);  // NCCL 2.28: a no-op
  int x;
  EXPECT_EQ(ncclCommCount(nullptr, &x), ncclInvalidArgument);
  EXPECT_EQ(ncclCommUserRank(nullptr, &x), ncclInvalidArgument);
  EXPECT_EQ(ncclCommCuDevice(nullptr, &x), ncclInvalidArgument);
}

TEST(NcclApi, SingleRankCommunicator) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
  cudaStream_t s = NewStream(0);
  float* buf = DeviceFloats({1.5f, -2.0f});
  ASSERT_EQ(ncclAllReduce(buf, buf, 2, ncclFloat32, ncclAvg, comm, s), ncclSuccess);
  Sync(s);
  EXPECT_EQ(buf[0], 1.5f);
  EXPECT_EQ(buf[1], -2.0f);
  EXPECT_EQ(ncclCommFinalize(comm), ncclSuccess);
  EXPECT_EQ(ncclCommFinalize(comm), ncclInvalidArgument);  // finalized already
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

class InitAllTest : public ::testing::Test {
 protected:
  static constexpr int kRanks = 3;
  void SetUp() override {
    ASSERT_EQ(ncclCommInitAll(comms_, kRanks, nullptr), ncclSuccess);
    for (int i = 0; i < kRanks; ++i) streams_[i] = NewStream(i);
  }
  void TearDown() override {
    for (ncclComm_t c : comms_) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
  ncclComm_t comms_[kRanks] = {};
  cudaStream_t streams_[kRanks] = {};
};

TEST_F(InitAllTest, CommunicatorProperties) {
  for (int i = 0; i < kRanks; ++i) {
    int count = -1, rank = -1, device = -1;
    EXPECT_EQ(ncclCommCount(comms_[i], &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(comms_[i], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(comms_[i], &device), ncclSuccess);
    EXPECT_EQ(count, kRanks);
    EXPECT_EQ(rank, i);
    EXPECT_EQ(device, i);
    EXPECT_EQ(ncclCommCount(comms_[i], nullptr), ncclInvalidArgument);
  }
}

TEST_F(InitAllTest, GroupedAllReduceOnePerStream) {
  std::vector<float*> bufs;
  for (int i = 0; i < kRanks; ++i) bufs.push_back(DeviceFloats({float(i), 0.25f * float(i + 1), 1e8f}));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    ASSERT_EQ(ncclAllReduce(bufs[i], bufs[i], 3, ncclFloat32, ncclSum, comms_[i], streams_[i]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    Sync(streams_[i]);
    EXPECT_EQ(bufs[i][0], 3.0f);
    EXPECT_EQ(bufs[i][1], 1.5f);
    EXPECT_EQ(bufs[i][2], 3e8f);
  }
}

// The ring order decides the bits (order.h, written out here): 2 elements on 3 ranks form one last loop whose
// chunk size alignUp(divUp(2, 3), 4) = 4 covers them both, so every element is chunk 0, summed starting at rank 1:
// x1, then x2 + acc, then x0 + acc. Element 0, x = (2^24, 1, 1): x0 + (x2 + x1) = 2^24 + 2 exactly, where rank
// order (x0 + x1) + x2 ties to even twice and gives 2^24. Element 1, x = (1, 2^24, -2^24): 1 + (-2^24 + 2^24) = 1
// in ring order, (1 + 2^24) - 2^24 = 0 in rank order.
TEST_F(InitAllTest, RingOrderDecidesTheBits) {
  const float x[kRanks][2] = {{0x1p24f, 1}, {1, 0x1p24f}, {1, -0x1p24f}};
  const float ring[2] = {x[0][0] + (x[2][0] + x[1][0]), x[0][1] + (x[2][1] + x[1][1])};
  const float rank_order[2] = {(x[0][0] + x[1][0]) + x[2][0], (x[0][1] + x[1][1]) + x[2][1]};
  ASSERT_NE(ring[0], rank_order[0]);
  ASSERT_NE(ring[1], rank_order[1]);
  std::vector<float*> bufs;
  for (int i = 0; i < kRanks; ++i) bufs.push_back(DeviceFloats({x[i][0], x[i][1]}));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i)
    ASSERT_EQ(ncclAllReduce(bufs[i], bufs[i], 2, ncclFloat32, ncclSum, comms_[i], streams_[i]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    Sync(streams_[i]);
    EXPECT_EQ(bufs[i][0], ring[0]) << "rank " << i;
    EXPECT_EQ(bufs[i][1], ring[1]) << "rank " << i;
  }
}

TEST_F(InitAllTest, GroupedSendRecvRingAndAllGather) {
  const size_t n = 300000;  // far beyond one ring
  std::vector<float*> send, recv, gathered;
  for (int i = 0; i < kRanks; ++i) {
    send.push_back(DeviceFloats(std::vector<float>(n, float(i + 1))));
    recv.push_back(DeviceFloats(std::vector<float>(n, 0)));
    gathered.push_back(DeviceFloats(std::vector<float>(kRanks * 2, 0)));
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    ASSERT_EQ(ncclSend(send[i], n, ncclFloat32, (i + 1) % kRanks, comms_[i], streams_[i]), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv[i], n, ncclFloat32, (i + kRanks - 1) % kRanks, comms_[i], streams_[i]), ncclSuccess);
    ASSERT_EQ(ncclAllGather(send[i], gathered[i], 2, ncclFloat32, comms_[i], streams_[i]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    Sync(streams_[i]);
    float from = float((i + kRanks - 1) % kRanks + 1);
    EXPECT_EQ(recv[i][0], from);
    EXPECT_EQ(recv[i][n - 1], from);
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(gathered[i][2 * r + 1], float(r + 1));
  }
}

TEST_F(InitAllTest, ArgumentErrorsReturnNcclCodes) {
  float* buf = DeviceFloats({1, 2, 3, 4});
  cudaStream_t s = streams_[0];
  ncclComm_t c = comms_[0];
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, nullptr, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, static_cast<ncclDataType_t>(99), ncclSum, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, static_cast<ncclRedOp_t>(7), c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, static_cast<ncclRedOp_t>(ncclNumOps + 3), c, s),
            ncclInvalidArgument);  // a user-defined op this communicator never made
  EXPECT_NE(std::string(ncclGetLastError(c)).find("unknown to this communicator"), std::string::npos);
  EXPECT_EQ(ncclAllReduce(nullptr, buf, 4, ncclFloat32, ncclSum, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, nullptr, 4, ncclFloat32, ncclSum, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(buf, buf, 4, ncclFloat32, kRanks, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(buf, buf, 4, ncclFloat32, -1, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclReduce(buf, buf, 4, ncclFloat32, ncclSum, 5, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclSend(buf, 4, ncclFloat32, kRanks, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclRecv(buf, 4, ncclFloat32, -1, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllGather(buf, buf, SIZE_MAX / 2, ncclFloat32, c, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, c, reinterpret_cast<cudaStream_t>(0x1234)),
            ncclUnhandledCudaError);
  EXPECT_NE(std::string(ncclGetLastError(c)).find("invalid stream"), std::string::npos);
  // Zero elements need no buffers; a NULL recvbuff is fine on a non-root rank of ncclReduce.
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, c, s), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  Sync(s);
}

TEST_F(InitAllTest, GroupErrorsAreReportedAtGroupEndAndNothingIsIssued) {
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  float* buf = DeviceFloats({1, 2});
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // nested
  EXPECT_EQ(ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, comms_[0], streams_[0]), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 2, ncclFloat32, static_cast<ncclRedOp_t>(42), comms_[1], streams_[1]),
            ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);  // inner: nothing issued yet
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  Sync(streams_[0]);
  EXPECT_EQ(buf[0], 1.0f) << "an operation of a failed group ran";
  // The communicators remain usable.
  std::vector<float*> bufs;
  for (int i = 0; i < kRanks; ++i) bufs.push_back(DeviceFloats({2.0f}));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    ASSERT_EQ(ncclAllReduce(bufs[i], bufs[i], 1, ncclFloat32, ncclProd, comms_[i], streams_[i]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    Sync(streams_[i]);
    EXPECT_EQ(bufs[i][0], 8.0f);
  }
}

TEST(NcclApi, AbortStopsAPendingCollectiveAndTellsThePeers) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  cudaStream_t s0 = NewStream(0), s1 = NewStream(1);
  float* a = DeviceFloats({1});
  float* b = DeviceFloats({2});
  // Rank 1 has not called the all-reduce, so rank 0's waits on the stream (default timeout: 120 s).
  ASSERT_EQ(ncclAllReduce(a, a, 1, ncclFloat32, ncclSum, comms[0], s0), ncclSuccess);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  Sync(s0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  // Rank 1's first all-reduce may still complete (rank 0 may have staged its data before the abort); the
  // second one cannot, as rank 0 never arrives.
  ASSERT_EQ(ncclAllReduce(b, b, 1, ncclFloat32, ncclSum, comms[1], s1), ncclSuccess);
  ncclResult_t second = ncclAllReduce(b, b, 1, ncclFloat32, ncclSum, comms[1], s1);
  EXPECT_TRUE(second == ncclSuccess || second == ncclRemoteError) << second;
  Sync(s1);
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[1], &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  EXPECT_NE(std::string(ncclGetLastError(comms[1])).find("ncclCommAbort"), std::string::npos);
  EXPECT_EQ(ncclAllReduce(b, b, 1, ncclFloat32, ncclSum, comms[1], s1), ncclRemoteError);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

TEST(NcclApi, CommInitAllArgumentErrors) {
  ncclComm_t comms[4];
  EXPECT_EQ(ncclCommInitAll(nullptr, 2, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitAll(comms, 0, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitAll(comms, simgpu::DeviceCount() + 1, nullptr), ncclInvalidArgument);
  int bad[] = {0, simgpu::DeviceCount()};
  EXPECT_EQ(ncclCommInitAll(comms, 2, bad), ncclInvalidArgument);
  int dup[] = {1, 1};
  EXPECT_EQ(ncclCommInitAll(comms, 2, dup), ncclInvalidUsage);
  int order[] = {2, 0};
  ASSERT_EQ(ncclCommInitAll(comms, 2, order), ncclSuccess);
  int device = -1;
  EXPECT_EQ(ncclCommCuDevice(comms[0], &device), ncclSuccess);
  EXPECT_EQ(device, 2);
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

TEST(NcclApi, InitRankOfSeveralRanksFromOneThreadInAGroup) {
  constexpr int kRanks = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[kRanks] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    simgpu::SetCurrentDevice(i);
    ASSERT_EQ(ncclCommInitRank(&comms[i], kRanks, id, i), ncclSuccess);
    ASSERT_NE(comms[i], nullptr);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  simgpu::SetCurrentDevice(0);
  std::vector<float*> bufs;
  cudaStream_t streams[kRanks];
  for (int i = 0; i < kRanks; ++i) {
    int device = -1;
    EXPECT_EQ(ncclCommCuDevice(comms[i], &device), ncclSuccess);
    EXPECT_EQ(device, i);
    streams[i] = NewStream(i);
    bufs.push_back(DeviceFloats({float(i), 1}));
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) {
    ASSERT_EQ(ncclReduce(bufs[i], bufs[i], 2, ncclFloat32, ncclMax, 1, comms[i], streams[i]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < kRanks; ++i) Sync(streams[i]);
  EXPECT_EQ(bufs[1][0], 2.0f);
  EXPECT_EQ(bufs[0][0], 0.0f) << "a non-root buffer was written";
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

}  // namespace
