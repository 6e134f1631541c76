// NCCL with ranks in separate processes: each test starts testdata/nccl_rank_main through simrun (the test
// process itself never loads libnccl, so nothing it does can leak into the ranks) and checks what the ranks
// report in a scratch directory.
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/nccl/testdata/reference.h"
#include "tools/simgpu/simrun/simrun.h"

namespace {

using simgpu::simrun::Options;
using simgpu::simrun::Result;

class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/simgpu_nccl_test.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~ScratchDir() {
    nftw(path_.c_str(), [](const char* p, const struct stat*, int, FTW*) { return remove(p); }, 16,
         FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// key=value pairs of the first line of DIR/result.RANK; "error" takes the rest of the line.
std::map<std::string, std::string> ReadResult(const std::string& dir, int rank) {
  std::map<std::string, std::string> kv;
  std::istringstream in(ReadFile(dir + "/result." + std::to_string(rank)));
  std::string line;
  while (std::getline(in, line)) {
    size_t err = line.find(" error=");
    if (err != std::string::npos) {
      kv["error"] = line.substr(err + 7);
      line = line.substr(0, err);
    }
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      size_t eq = word.find('=');
      if (eq != std::string::npos) kv[word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
  return kv;
}

Result RunRanks(int n, const std::string& scenario, const std::string& dir, std::vector<std::string> env = {}) {
  Options o;
  o.nprocs = n;
  o.command = {SIMGPU_NCCL_RANK_MAIN, scenario, dir};
  o.grace_seconds = 2;
  o.extra_env = std::move(env);
  return simgpu::simrun::Run(o, stderr);
}

void ExpectSameDigestsOnAllRanks(const std::string& dir, int n) {
  std::string first = ReadFile(dir + "/digest.0");
  EXPECT_FALSE(first.empty());
  for (int r = 1; r < n; ++r) EXPECT_EQ(ReadFile(dir + "/digest." + std::to_string(r)), first) << "rank " << r;
}

struct CollectivesCase {
  int ranks;
  std::string env;  // an order setting, or empty for the defaults
};

void PrintTo(const CollectivesCase& c, std::ostream* os) { *os << c.ranks << " ranks " << c.env; }

class NcclCollectives : public ::testing::TestWithParam<CollectivesCase> {};

// Every rank checks every result bit for bit against reference.cc, whose ring order is a step-by-step
// transcription of NCCL's schedule (counts 1, 3, 777, 2601: mostly not divisible by the rank count), and all
// ranks must report identical all-reduce results. A small SIMGPU_NCCL_RING_CHUNK_BYTES makes the buffers span
// several ring loops, so both chunk sizes of NCCL's loop are exercised.
TEST_P(NcclCollectives, EveryCollectiveTypeOpAndPlacementMatchesTheReference) {
  ScratchDir dir;
  const CollectivesCase& c = GetParam();
  std::vector<std::string> env = {"SIMGPU_NCCL_CHUNK_BYTES=4096"};
  if (!c.env.empty()) env.push_back(c.env);
  Result r = RunRanks(c.ranks, "collectives", dir.path(), env);
  ASSERT_EQ(r.exit_code, 0) << "a rank reported failures (see stderr)";
  ExpectSameDigestsOnAllRanks(dir.path(), c.ranks);
}

INSTANTIATE_TEST_SUITE_P(Orders, NcclCollectives,
                         ::testing::Values(CollectivesCase{2, ""}, CollectivesCase{3, ""}, CollectivesCase{4, ""},
                                           CollectivesCase{5, ""},
                                           CollectivesCase{3, "SIMGPU_NCCL_RING_CHUNK_BYTES=64"},
                                           CollectivesCase{5, "SIMGPU_NCCL_RING_CHUNK_BYTES=48"},
                                           CollectivesCase{4, "SIMGPU_NCCL_ORDER=rank"}),
                         [](const ::testing::TestParamInfo<CollectivesCase>& info) {
                           std::string name = std::to_string(info.param.ranks) + "ranks";
                           if (info.param.env.find("RING_CHUNK") != std::string::npos) name += "_smallchunks";
                           if (info.param.env.find("ORDER=rank") != std::string::npos) name += "_rankorder";
                           return name;
                         });

TEST(NcclCollectivesOrder, ResultsDoNotDependOnTheStagingChunkButOnTheOrder) {
  auto digests = [](std::vector<std::string> env) {
    ScratchDir dir;
    EXPECT_EQ(RunRanks(3, "collectives", dir.path(), env).exit_code, 0);
    return ReadFile(dir.path() + "/digest.0");
  };
  std::string ring_small = digests({"SIMGPU_NCCL_CHUNK_BYTES=256"});
  std::string ring_large = digests({"SIMGPU_NCCL_CHUNK_BYTES=65536"});
  std::string rank_order = digests({"SIMGPU_NCCL_CHUNK_BYTES=4096", "SIMGPU_NCCL_ORDER=rank"});
  EXPECT_FALSE(ring_small.empty());
  EXPECT_EQ(ring_small, ring_large);
  EXPECT_NE(ring_small, rank_order) << "the floating-point inputs are chosen so that the order shows";
}

TEST(NcclSendRecv, GroupedRingsWithMessagesLargerThanTheRing) {
  for (int n : {3, 2}) {
    ScratchDir dir;
    Result r = RunRanks(n, "sendrecv", dir.path(), {"SIMGPU_NCCL_CHUNK_BYTES=4096", "SIMGPU_NCCL_TIMEOUT_S=60"});
    EXPECT_EQ(r.exit_code, 0) << n << " ranks";
  }
}

// CUDA graphs: a captured all-reduce and send/recv ring replay on each launch with the inputs of that launch,
// interleaved with uncaptured all-reduces on the same communicator and stream (testdata/rank_graph.cc).
TEST(NcclGraph, CapturedCollectivesReplayOnEveryLaunchAmongUncapturedOnes) {
  ScratchDir dir;
  Result r = RunRanks(3, "graph", dir.path(), {"SIMGPU_NCCL_CHUNK_BYTES=4096"});
  ASSERT_EQ(r.exit_code, 0) << "a rank reported failures (see stderr)";
  ExpectSameDigestsOnAllRanks(dir.path(), 3);
  EXPECT_NE(ReadFile(dir.path() + "/digest.0").find("captured (launch 2)"), std::string::npos);
}

// A captured collective takes its fault call number once, at capture: call 1 (the captured all-reduce) is
// faulted at every launch, and the uncaptured calls numbered after it are not.
TEST(NcclGraph, AFaultOnACapturedCollectiveAppliesAtEveryLaunch) {
  ScratchDir dir;
  Result r = RunRanks(3, "graph", dir.path(),
                      {"SIMGPU_NCCL_CHUNK_BYTES=4096", "SIMGPU_FAULT=coll:rank=1:call=1:elem=5:value=7"});
  ASSERT_EQ(r.exit_code, 0) << "a rank reported failures (see stderr)";
  EXPECT_EQ(ReadFile(dir.path() + "/digest.0"), ReadFile(dir.path() + "/digest.2"));
  EXPECT_NE(ReadFile(dir.path() + "/digest.0"), ReadFile(dir.path() + "/digest.1"));
}

TEST(NcclLarge, AllReduceOf16MiBWithDefaultChunks) {
  ScratchDir dir;
  Result r = RunRanks(3, "large", dir.path());
  ASSERT_EQ(r.exit_code, 0);
  ExpectSameDigestsOnAllRanks(dir.path(), 3);
  std::printf("timing rank 0: %s", ReadFile(dir.path() + "/timing.0").c_str());
}

struct FaultCase {
  std::string spec;
  int rank;
  std::string diff;  // the one line the faulty rank must report
};

TEST(NcclFault, FlipsExactlyTheChosenBitOfTheChosenCollectiveOnTheChosenRank) {
  const std::vector<FaultCase> cases = {
      {"coll:rank=1:call=2:elem=5:bit=3", 1, "call=2 elem=5 xor=8"},           // AllReduce
      {"coll:rank=2:call=3:elem=15:bit=31", 2, "call=3 elem=15 xor=80000000"},  // ReduceScatter
      {"coll:rank=0:call=0:elem=47:bit=22", 0, "call=0 elem=47 xor=400000"},    // AllGather, last element
      {"coll:rank=2:call=1:elem=0:bit=0", 2, "call=1 elem=0 xor=1"},            // Broadcast, after send/recv
      {"coll:rank=0:call=5:elem=63:bit=30", 0, "call=5 elem=63 xor=40000000"},  // Reduce at its root
  };
  for (const FaultCase& c : cases) {
    ScratchDir dir;
    Result r = RunRanks(3, "fault", dir.path(), {"SIMGPU_FAULT=" + c.spec});
    ASSERT_EQ(r.exit_code, 0) << c.spec;
    for (int rank = 0; rank < 3; ++rank) {
      std::string diffs = ReadFile(dir.path() + "/diffs." + std::to_string(rank));
      EXPECT_EQ(diffs, rank == c.rank ? c.diff + "\n" : "") << c.spec << " on rank " << rank;
    }
  }
  ScratchDir clean;
  ASSERT_EQ(RunRanks(3, "fault", clean.path()).exit_code, 0);
  for (int rank = 0; rank < 3; ++rank) EXPECT_FALSE(Exists(clean.path() + "/diffs." + std::to_string(rank)));
}

// The fault scenario's calls on its one communicator (3 ranks): 0 AllGather (16 floats per rank), 1 Broadcast
// (64 floats), 2 AllReduce (64 floats), 3 ReduceScatter (16 floats per rank), 4 in-place AllReduce (64 floats),
// 5 Reduce to rank 0 (64 floats), 6 AllReduce (10 int32). Each rank dumps its results as res.RANK.CALL.
constexpr int kFaultRanks = 3;
constexpr int kFaultCalls = 7;

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::string s = ReadFile(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

using Results = std::map<std::pair<int, int>, std::vector<uint8_t>>;  // (rank, call) -> result bytes

Results RunFaultScenario(const std::string& spec, const std::string& dir, int* exit_code) {
  Result r = RunRanks(kFaultRanks, "fault", dir, spec.empty() ? std::vector<std::string>{}
                                                             : std::vector<std::string>{"SIMGPU_FAULT=" + spec});
  *exit_code = r.exit_code;
  Results out;
  for (int rank = 0; rank < kFaultRanks; ++rank) {
    for (int call = 0; call < kFaultCalls; ++call) {
      std::string path = dir + "/res." + std::to_string(rank) + "." + std::to_string(call);
      if (Exists(path)) out[{rank, call}] = ReadBytes(path);
    }
  }
  return out;
}

// The clean result of `call` on `rank` with rank `dropped`'s contribution left out of the reduction, from the
// reference model with the same order minus that rank.
std::vector<uint8_t> WithoutRank(const std::string& dir, int call, int rank, int dropped) {
  using simgpu::nccl::testing::Chain;
  using simgpu::nccl::testing::RefColl;
  std::vector<std::vector<uint8_t>> inputs;
  for (int r = 0; r < kFaultRanks; ++r) {
    inputs.push_back(ReadBytes(dir + "/in." + std::to_string(call) + "." + std::to_string(r)));
  }
  const ncclDataType_t t = call == 6 ? ncclInt32 : ncclFloat32;
  const size_t count = call == 3 ? 16 : call == 6 ? 10 : 64;
  const RefColl coll = call == 3 ? RefColl::kReduceScatter : call == 5 ? RefColl::kReduce : RefColl::kAllReduce;
  auto chains = simgpu::nccl::testing::ReferenceChains(coll, kFaultRanks, count, 4, rank, 0);
  auto kept = std::make_shared<std::map<size_t, Chain>>();
  auto without = [chains, kept, dropped](size_t i) -> const Chain& {
    Chain c;
    for (int r : chains(i)) {
      if (r != dropped) c.push_back(r);
    }
    return (*kept)[i] = c;
  };
  return simgpu::nccl::testing::ReferenceReduce(t, ncclSum, inputs, call == 3 ? rank * count : 0, count, without);
}

struct ActionCase {
  std::string spec;
  int rank;
  int call;
  // The faulted rank's result of `call`, from the clean results and the clean run's directory.
  std::function<std::vector<uint8_t>(const Results&, const std::string&)> expected;
};

std::vector<uint8_t> Float32Bytes(float v) {
  std::vector<uint8_t> b(4);
  std::memcpy(b.data(), &v, 4);
  return b;
}

TEST(NcclFault, EachActionChangesExactlyItsTargetAndNothingElse) {
  ScratchDir clean_dir;
  int code = -1;
  const Results clean = RunFaultScenario("", clean_dir.path(), &code);
  ASSERT_EQ(code, 0);
  ASSERT_EQ(clean.size(), size_t{kFaultRanks * (kFaultCalls - 1) + 1});  // Reduce: the root only
  auto replace = [](std::vector<uint8_t> v, size_t at, const std::vector<uint8_t>& bytes) {
    std::copy(bytes.begin(), bytes.end(), v.begin() + at);
    return v;
  };
  const std::vector<ActionCase> cases = {
      {"coll:rank=1:call=2:elem=5:value=0.5", 1, 2,
       [&](const Results& c, const std::string&) { return replace(c.at({1, 2}), 5 * 4, Float32Bytes(0.5f)); }},
      {"coll:rank=0:call=6:elem=9:value=-7", 0, 6,
       [&](const Results& c, const std::string&) { return replace(c.at({0, 6}), 9 * 4, {0xf9, 0xff, 0xff, 0xff}); }},
      // The previous collective on the communicator: call 1 (same size) and call 3 (16 of call 4's 64 floats).
      {"coll:rank=2:call=2:stale", 2, 2, [](const Results& c, const std::string&) { return c.at({2, 1}); }},
      {"coll:rank=1:call=4:stale", 1, 4,
       [&](const Results& c, const std::string&) { return replace(c.at({1, 4}), 0, c.at({1, 3})); }},
      {"coll:rank=1:call=0:swap=0,2", 1, 0,
       [](const Results& c, const std::string&) {
         std::vector<uint8_t> v = c.at({1, 0});
         std::swap_ranges(v.begin(), v.begin() + 64, v.begin() + 128);
         return v;
       }},
      {"coll:rank=0:call=6:drop=1", 0, 6,
       [](const Results& c, const std::string& d) { return WithoutRank(d, 6, 0, 1); }},
      {"coll:rank=2:call=2:drop=0", 2, 2,
       [](const Results& c, const std::string& d) { return WithoutRank(d, 2, 2, 0); }},
      {"coll:rank=1:call=3:drop=2", 1, 3,
       [](const Results& c, const std::string& d) { return WithoutRank(d, 3, 1, 2); }},
      {"coll:rank=0:call=5:drop=1", 0, 5,
       [](const Results& c, const std::string& d) { return WithoutRank(d, 5, 0, 1); }},
  };
  for (const ActionCase& a : cases) {
    ScratchDir dir;
    const Results got = RunFaultScenario(a.spec, dir.path(), &code);
    ASSERT_EQ(code, 0) << a.spec;
    ASSERT_EQ(got.size(), clean.size()) << a.spec;
    const std::vector<uint8_t> want = a.expected(clean, clean_dir.path());
    ASSERT_EQ(want.size(), clean.at({a.rank, a.call}).size()) << a.spec;
    EXPECT_NE(want, clean.at({a.rank, a.call})) << a.spec << ": the case must change something";
    for (const auto& [key, bytes] : got) {
      if (key == std::make_pair(a.rank, a.call)) {
        EXPECT_EQ(bytes, want) << a.spec;
      } else {
        EXPECT_EQ(bytes, clean.at(key)) << a.spec << ": rank " << key.first << " call " << key.second;
      }
    }
  }
}

TEST(NcclFault, AFaultThatCannotApplyStopsTheRankWithStatus2) {
  for (const std::string spec : {"coll:rank=1:call=5:elem=0:bit=1",   // Reduce has no result off the root
                                 "coll:rank=0:call=0:stale",          // the communicator's first collective
                                 "coll:rank=0:call=2:swap=0,1",       // not an all-gather
                                 "coll:rank=2:call=2:drop=3",         // no rank 3
                                 "coll:rank=1:call=1:drop=0",         // a broadcast reduces nothing
                                 "coll:rank=0:call=0:elem=48:value=1"}) {  // 48 elements: 0..47
    ScratchDir dir;
    int code = -1;
    RunFaultScenario(spec, dir.path(), &code);
    EXPECT_EQ(code, 2) << spec;
  }
}

TEST(NcclTimeout, InitGivesUpWhenAPeerNeverJoins) {
  ScratchDir dir;
  Result r = RunRanks(3, "init_timeout", dir.path(), {"SIMGPU_NCCL_TIMEOUT_S=2"});
  EXPECT_EQ(r.exit_code, 0);
  bool some_timed_out = false;
  for (int rank = 0; rank < 2; ++rank) {
    auto kv = ReadResult(dir.path(), rank);
    // The first rank to time out gets ncclSystemError and tells the others, which stop with ncclRemoteError.
    EXPECT_TRUE(kv["code"] == "2" || kv["code"] == "6") << kv["code"];
    some_timed_out |= kv["code"] == "2";
    EXPECT_GE(std::stod(kv["seconds"]), 1.5);
    EXPECT_LT(std::stod(kv["seconds"]), 10.0);
    EXPECT_NE(kv["error"].find("timed out after 2 s waiting for rank(s) 2"), std::string::npos) << kv["error"];
  }
  EXPECT_TRUE(some_timed_out);
  std::string shm = ReadResult(dir.path(), 0)["shm"];
  ASSERT_FALSE(shm.empty());
  EXPECT_FALSE(Exists("/dev/shm" + shm)) << "the segment of a failed init must be unlinked";
}

TEST(NcclTimeout, CollectiveGivesUpWhenAPeerNeverCallsIt) {
  ScratchDir dir;
  Result r = RunRanks(3, "op_timeout", dir.path(), {"SIMGPU_NCCL_TIMEOUT_S=2"});
  EXPECT_EQ(r.exit_code, 0);
  bool some_timed_out = false;
  for (int rank = 0; rank < 2; ++rank) {
    auto kv = ReadResult(dir.path(), rank);
    EXPECT_EQ(kv["issued"], "0");  // ncclSuccess: the failure happens on the stream
    EXPECT_TRUE(kv["async"] == "2" || kv["async"] == "6") << kv["async"];  // system or remote error
    EXPECT_EQ(kv["next"], kv["async"]) << "later calls must return the communicator's error";
    EXPECT_LT(std::stod(kv["seconds"]), 10.0);
    some_timed_out |= kv["error"].find("timed out after 2 s waiting for rank(s) 2") != std::string::npos;
  }
  EXPECT_TRUE(some_timed_out);
}

TEST(NcclTimeout, DeadPeerIsReportedLongBeforeTheTimeout) {
  ScratchDir dir;
  Result r = RunRanks(3, "peer_exit", dir.path(), {"SIMGPU_NCCL_TIMEOUT_S=100"});
  EXPECT_EQ(r.exit_code, 0);
  for (int rank = 0; rank < 2; ++rank) {
    auto kv = ReadResult(dir.path(), rank);
    EXPECT_EQ(kv["code"], "6") << "ncclRemoteError expected on rank " << rank;
    EXPECT_LT(std::stod(kv["seconds"]), 20.0);
    EXPECT_TRUE(kv["error"].find("rank 2 (pid") != std::string::npos ||
                kv["error"].find("gave up") != std::string::npos)
        << kv["error"];
  }
}

TEST(NcclUsage, MismatchedCollectivesFailOnEveryRank) {
  ScratchDir dir;
  Result r = RunRanks(3, "mismatch", dir.path(), {"SIMGPU_NCCL_TIMEOUT_S=30"});
  EXPECT_EQ(r.exit_code, 0);
  for (int rank = 0; rank < 3; ++rank) {
    auto kv = ReadResult(dir.path(), rank);
    EXPECT_TRUE(kv["code"] == "5" || kv["code"] == "6") << kv["code"];  // invalid usage, or a peer's report
    EXPECT_NE(kv["error"].find("mismatched collectives"), std::string::npos) << kv["error"];
  }
}

TEST(NcclUsage, TwoRanksOnOneDeviceAreRejected) {
  ScratchDir dir;
  Result r = RunRanks(3, "duplicate_device", dir.path(), {"SIMGPU_NCCL_TIMEOUT_S=30"});
  EXPECT_EQ(r.exit_code, 0);
  for (int rank = 0; rank < 3; ++rank) {
    auto kv = ReadResult(dir.path(), rank);
    EXPECT_EQ(kv["code"], "5") << "ncclInvalidUsage expected on rank " << rank;
    EXPECT_NE(kv["error"].find("Duplicate GPU"), std::string::npos) << kv["error"];
  }
}

}  // namespace
