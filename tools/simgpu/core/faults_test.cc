#include <cmath>
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

TEST(ParseFaults, EveryActionAndSite) {
  std::vector<Fault> faults;
  std::string error;
  ASSERT_TRUE(ParseFaults("conv:rank=2:call=4:elem=9:value=-1.5e3;attn:value=nan:call=1:rank=0:elem=0;"
                          "coll:rank=1:call=3:stale;coll:rank=0:call=5:swap=3,1;coll:drop=2:rank=4:call=6;"
                          "stream:rank=3:op=17:delay_ms=250;gemm:rank=0:call=0:elem=1:value=inf",
                          &faults, &error))
      << error;
  ASSERT_EQ(faults.size(), 7u);
  EXPECT_EQ(faults[0].site, FaultSite::kConv);
  EXPECT_EQ(faults[0].action, FaultAction::kValue);
  EXPECT_EQ(faults[0].rank, 2);
  EXPECT_EQ(faults[0].call, 4);
  EXPECT_EQ(faults[0].elem, 9);
  EXPECT_EQ(faults[0].value, -1500.0);
  EXPECT_EQ(faults[1].site, FaultSite::kAttention);
  EXPECT_TRUE(std::isnan(faults[1].value));
  EXPECT_EQ(faults[2].site, FaultSite::kCollective);
  EXPECT_EQ(faults[2].action, FaultAction::kStale);
  EXPECT_EQ(faults[2].call, 3);
  EXPECT_EQ(faults[3].action, FaultAction::kSwap);
  EXPECT_EQ(faults[3].swap_i, 3);
  EXPECT_EQ(faults[3].swap_j, 1);
  EXPECT_EQ(faults[4].action, FaultAction::kDrop);
  EXPECT_EQ(faults[4].drop_rank, 2);
  EXPECT_EQ(faults[4].rank, 4);
  EXPECT_EQ(faults[5].site, FaultSite::kStream);
  EXPECT_EQ(faults[5].action, FaultAction::kDelay);
  EXPECT_EQ(faults[5].rank, 3);
  EXPECT_EQ(faults[5].call, 17);
  EXPECT_EQ(faults[5].delay_ms, 250);
  EXPECT_EQ(faults[6].site, FaultSite::kGemm);
  EXPECT_TRUE(std::isinf(faults[6].value) && faults[6].value > 0);
}

TEST(ParseFaults, DescribeGivesBackAnEquivalentSpec) {
  const std::string spec =
      "gemm:rank=1:call=7:elem=12:bit=30;conv:rank=0:call=2:elem=3:value=0.10000000000000001;"
      "coll:rank=2:call=3:stale;coll:rank=0:call=1:swap=0,3;coll:rank=0:call=4:drop=1;"
      "stream:rank=0:op=5:delay_ms=20;attn:rank=0:call=0:elem=0:value=-inf";
  std::vector<Fault> faults;
  std::string error;
  ASSERT_TRUE(ParseFaults(spec, &faults, &error)) << error;
  std::string joined;
  for (const Fault& f : faults) joined += (joined.empty() ? "" : ";") + DescribeFault(f);
  EXPECT_EQ(joined, spec);
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
                      std::make_pair("gemm:rank=0:call=99999999999999999999:elem=0:bit=0", "not a non-negative"),
                      std::make_pair("gemm:rank=0:call=0:elem=0:bit=1:value=2", "more than one action"),
                      std::make_pair("coll:rank=0:call=0:stale:drop=1", "more than one action"),
                      std::make_pair("coll:rank=0:call=0", "missing bit=, value=, stale, swap= or drop="),
                      std::make_pair("gemm:rank=0:call=0:stale", "stale applies to coll faults only"),
                      std::make_pair("conv:rank=0:call=0:swap=0,1", "swap applies to coll faults only"),
                      std::make_pair("attn:rank=0:call=0:drop=1", "drop applies to coll faults only"),
                      std::make_pair("coll:rank=0:call=0:stale=1", "bad field \"stale=1\""),
                      std::make_pair("coll:rank=0:call=0:elem=3:stale", "elem= is not used"),
                      std::make_pair("coll:rank=0:call=0:swap=1", "not two rank indices"),
                      std::make_pair("coll:rank=0:call=0:swap=1,2,3", "not two rank indices"),
                      std::make_pair("coll:rank=0:call=0:swap=2,2", "names the same rank twice"),
                      std::make_pair("coll:rank=0:call=0:drop=x", "value of drop is not a non-negative"),
                      std::make_pair("gemm:rank=0:call=0:value=1", "missing elem="),
                      std::make_pair("gemm:rank=0:call=0:elem=0:value=", "value= is not a number"),
                      std::make_pair("gemm:rank=0:call=0:elem=0:value=1.5x", "value=1.5x is not a number"),
                      std::make_pair("gemm:rank=0:call=0:elem=0:value= 1", "is not a number"),
                      std::make_pair("stream:rank=0:op=3", "missing delay_ms="),
                      std::make_pair("stream:rank=0:delay_ms=3", "missing op="),
                      std::make_pair("stream:rank=0:op=1:delay_ms=3:call=1", "bad field \"call=1\""),
                      std::make_pair("stream:rank=0:op=1:delay_ms=3600001", "delay_ms=3600001 is out of range"),
                      std::make_pair("gemm:rank=0:op=1:elem=0:bit=0", "bad field \"op=1\""),
                      std::make_pair("gemm:rank=1073741825:call=0:elem=0:bit=0", "rank=1073741825 is out of range"),
                      std::make_pair("gemm:rank=0:call=0:elem=0:bit=0;conv:rank=0:call=0:elem=0:bit=99",
                                     "bit must be in [0, 63] in \"conv:rank=0:call=0:elem=0:bit=99\"")));

TEST(ParseFaults, ErrorLeavesOutputUntouched) {
  std::vector<Fault> faults;
  std::string error;
  ASSERT_TRUE(ParseFaults("gemm:rank=0:call=0:elem=0:bit=0", &faults, &error));
  EXPECT_FALSE(ParseFaults("gemm:rank=0:call=0:elem=0:bit=0;gemm:rank=0", &faults, &error));
  EXPECT_EQ(faults.size(), 1u);
}

}  // namespace
}  // namespace simgpu
