// NCCL with ranks in separate processes: each test starts testdata/nccl_rank_main through simrun (the test
// process itself never loads libnccl, so nothing it does can leak into the ranks) and checks what the ranks
// report in a scratch directory.
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
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
