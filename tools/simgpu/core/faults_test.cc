#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

TEST(ParseFaults, AcceptsBothKindsInAnyKeyOrder) {
  std::vector<Fault> faults;
  std::string error;
  ASSERT_TRUE(ParseFaults("gemm:rank=1:call=7:elem=12:bit=30;coll:bit=0:elem=3:call=2:rank=0", &faults, &error))
      << error;
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_EQ(faults[0].site, FaultSite::kGemm);
  EXPECT_EQ(faults[0].rank, 1);
  EXPECT_EQ(faults[0].call, 7);
  EXPECT_EQ(faults[0].elem, 12);
  EXPECT_EQ(faults[0].bit, 30);
  EXPECT_EQ(faults[1].site, FaultSite::kCollective);
  EXPECT_EQ(faults[1].rank, 0);
  EXPECT_EQ(faults[1].call, 2);
  EXPECT_EQ(faults[1].elem, 3);
  EXPECT_EQ(faults[1].bit, 0);
}

TEST(ParseFaults, EmptySpecAndEmptyItemsMeanNoFault) {
  std::vector<Fault> faults = {Fault{}};
  std::string error;
  ASSERT_TRUE(ParseFaults("", &faults, &error));
  EXPECT_TRUE(faults.empty());
  ASSERT_TRUE(ParseFaults(";gemm:rank=0:call=0:elem=0:bit=63;;", &faults, &error)) << error;
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].bit, 63);
}

TEST(ParseFaults, LargeCallAndElementIndices) {
  std::vector<Fault> faults;
  std::string error;
  ASSERT_TRUE(ParseFaults("coll:rank=3:call=123456789012:elem=9876543210:bit=5", &faults, &error)) << error;
  EXPECT_EQ(faults[0].call, 123456789012);
  EXPECT_EQ(faults[0].elem, 9876543210);
}

class MalformedFault : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(MalformedFault, IsRejectedWithAMessageNamingTheProblem) {
  std::vector<Fault> faults;
  std::string error;
  EXPECT_FALSE(ParseFaults(GetParam().first, &faults, &error));
  EXPECT_NE(error.find(GetParam().second), std::string::npos) << "error was: " << error;
}

INSTANTIATE_TEST_SUITE_P(
    Specs, MalformedFault,
    ::testing::Values(std::make_pair("flip:rank=0:call=0:elem=0:bit=0", "unknown fault kind"),
                      std::make_pair("gemm:rank=0:call=0:elem=0", "missing bit="),
                      std::make_pair("gemm:call=0:elem=0:bit=0", "missing rank="),
                      std::make_pair("gemm:rank=0:call=0:elem=0:bit=64", "bit must be in [0, 63]"),
                      std::make_pair("gemm:rank=0:call=-1:elem=0:bit=0", "not a non-negative integer"),
                      std::make_pair("gemm:rank=0:call=1x:elem=0:bit=0", "not a non-negative integer"),
                      std::make_pair("gemm:rank=0:call=:elem=0:bit=0", "not a non-negative integer"),
                      std::make_pair("gemm:rank=0:call=0:elem=0:bit=0:seed=4", "bad field"),
                      std::make_pair("gemm:rank=0:call=0:elem=0:bit", "bad field"),
                      std::make_pair("gemm:rank=0:rank=1:call=0:elem=0:bit=0", "duplicate key"),
                      std::make_pair("gemm:rank=0:call=0:elem=0:bit=0;coll", "missing rank="),
                      std::make_pair(" gemm:rank=0:call=0:elem=0:bit=0", "unknown fault kind"),
                      std::make_pair("gemm:rank=0:call=99999999999999999999:elem=0:bit=0", "not a non-negative")));

TEST(ParseFaults, ErrorLeavesOutputUntouched) {
  std::vector<Fault> faults;
  std::string error;
  ASSERT_TRUE(ParseFaults("gemm:rank=0:call=0:elem=0:bit=0", &faults, &error));
  EXPECT_FALSE(ParseFaults("gemm:rank=0:call=0:elem=0:bit=0;gemm:rank=0", &faults, &error));
  EXPECT_EQ(faults.size(), 1u);
}

}  // namespace
}  // namespace simgpu
