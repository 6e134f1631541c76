// Runs with RANK=0 and the SIMGPU_FAULT below: main() re-executes the binary with them set, because the core
// reads the environment once, when the library loads.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

TEST(ApplyFaults, EnvironmentIsParsedOnce) {
  ASSERT_EQ(Faults().size(), 7u);
  EXPECT_EQ(ProcessRank(), 0);
}

TEST(ApplyFaults, FlipsTheNamedBitOfTheNamedElementOnly) {
  std::vector<uint32_t> out(8, 0x3f800000u);  // 1.0f
  ApplyFaults(FaultSite::kCollective, 2, out.data(), sizeof(uint32_t), out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i], i == 5 ? 0x3f800000u ^ (1u << 22) : 0x3f800000u) << i;
  }
}

TEST(ApplyFaults, BitZeroIsTheLeastSignificantBitOfATwoByteElement) {
  std::vector<uint16_t> out(4, 0x3c00);  // 1.0 in FP16
  ApplyFaults(FaultSite::kCollective, 3, out.data(), sizeof(uint16_t), out.size());
  EXPECT_EQ(out[0], 0x3c00);
  EXPECT_EQ(out[1], 0x3c00 ^ 0x0001);
  EXPECT_EQ(out[2], 0x3c00 ^ 0x8000);  // bit 15: sign
}

TEST(ApplyFaults, OtherCallsSitesAndRanksAreUntouched) {
  std::vector<uint32_t> out(8, 7u);
  ApplyFaults(FaultSite::kCollective, 0, out.data(), 4, out.size());  // no fault at call 0
  ApplyFaults(FaultSite::kGemm, 2, out.data(), 4, out.size());        // call 2 is a coll fault
  ApplyFaults(FaultSite::kGemm, 9, out.data(), 4, out.size());        // rank 1 only
  for (uint32_t v : out) EXPECT_EQ(v, 7u);
  EXPECT_TRUE(MatchingFaults(FaultSite::kGemm, 9).empty());
  EXPECT_EQ(MatchingFaults(FaultSite::kCollective, 3).size(), 2u);
}

TEST(ApplyElementFaults, StoresValuesAndLeavesCollectiveActionsToTheCaller) {
  float conv_out[4] = {1, 1, 1, 1};
  ApplyElementFaults(FaultSite::kConv, 1, conv_out, CUDA_R_32F, 4);
  EXPECT_EQ(conv_out[0], 1.0f);
  EXPECT_EQ(conv_out[2], -2.5f);
  uint16_t coll_out[2] = {0, 0};
  ApplyElementFaults(FaultSite::kCollective, 4, coll_out, CUDA_R_16BF, 2);
  EXPECT_EQ(coll_out[0], 0x4040);  // 3.0 in BF16
  EXPECT_EQ(coll_out[1], 0);
  std::vector<Fault> both = MatchingFaults(FaultSite::kCollective, 4);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].action, FaultAction::kStale);
  EXPECT_EQ(both[1].action, FaultAction::kValue);
  EXPECT_EQ(StreamDelayMs(0), 0);
}

TEST(ApplyFaultsDeathTest, TypelessApplyRefusesAValueFault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint32_t> out(4, 0);
  EXPECT_EXIT(ApplyFaults(FaultSite::kConv, 1, out.data(), 4, out.size()), ::testing::ExitedWithCode(2),
              "conv:rank=0:call=1:elem=2:value=-2.5: this output takes bit= faults only");
}

TEST(ApplyFaultsDeathTest, ValueFaultOutsideTheOutputStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float out[2] = {};
  EXPECT_EXIT(ApplyElementFaults(FaultSite::kConv, 1, out, CUDA_R_32F, 2), ::testing::ExitedWithCode(2),
              "conv:call=1: elem=2 is out of range \\(the output has 2 elements; "
              "fault conv:rank=0:call=1:elem=2:value=-2.5\\)");
}

TEST(ApplyFaultsDeathTest, ElementOutsideTheOutputStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint32_t> out(5, 0);
  EXPECT_EXIT(ApplyFaults(FaultSite::kCollective, 2, out.data(), 4, out.size()), ::testing::ExitedWithCode(2),
              "elem=5 is out of range");
}

TEST(ApplyFaultsDeathTest, BitWiderThanTheElementStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint32_t> out(8, 0);
  EXPECT_EXIT(ApplyFaults(FaultSite::kCollective, 3, out.data(), 1, out.size()), ::testing::ExitedWithCode(2),
              "does not fit a 1-byte element");
}

}  // namespace
}  // namespace simgpu

int main(int argc, char** argv) {
  if (getenv("SIMGPU_FAULT") == nullptr) {
    setenv("RANK", "0", 1);
    setenv("SIMGPU_FAULT",
           "coll:rank=0:call=2:elem=5:bit=22;coll:rank=0:call=3:elem=1:bit=0;"
           "coll:rank=0:call=3:elem=2:bit=15;gemm:rank=1:call=9:elem=0:bit=0;conv:rank=0:call=1:elem=2:value=-2.5;"
           "coll:rank=0:call=4:stale;coll:rank=0:call=4:elem=0:value=3",
           1);
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
