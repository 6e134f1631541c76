// replica.identical end to end: the gpt workload on simgpu under libttrace.so, data parallel over three ranks.
// --bug optimizer-before-reduce makes rank 0 take its optimizer step on its local gradient before the DP
// reduction: from step 1 on its weights differ from its replicas' while every op it runs is correct for its
// inputs (GEMM replay and the collective checks find nothing). What must hold: clean runs (FP32, BF16) have no
// finding and compare every weight read after step 0; the buggy run has exactly one finding, replica.identical on
// rank 0 at a GEMM of step 1, naming ranks 1 and 2 as the majority; with --dist-opt the updated weights are
// all-gathered from their owners, the replicas stay identical and the run is clean.
#include <sstream>
#include <string>

#include "analyzer/check.h"
#include "analyzer/cli.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "tests/e2e_util.h"

namespace ttrace::e2e {
namespace {

constexpr int kSteps = 3;

analyzer::CheckReport RunGpt(const std::string& name, const std::string& args, analyzer::TraceSet* set) {
  const std::string b = BuildDir(), dir = TempDir() + "/" + name;
  std::string out;
  const int rc = Shell("rm -rf '" + dir + "' && env LD_LIBRARY_PATH=" + b + "/simgpu/lib LD_PRELOAD=" + b +
                           "/lib/libttrace.so TTRACE_DIR='" + dir + "' " + b + "/bin/simrun -n 3 -- " + b +
                           "/bin/gpt --dp 3 --batch 6 --steps " + std::to_string(kSteps) + " " + args +
                           " --rdzv '" + dir + ".rdzv'",
                       &out);
  EXPECT_EQ(rc, 0) << out;
  auto loaded = analyzer::LoadTraceDir(dir);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return analyzer::CheckReport();
  *set = std::move(*loaded);
  return analyzer::RunChecks(*set);
}

std::string Describe(const analyzer::CheckReport& r) {
  std::string s = analyzer::ReplicaText(r.summary().replicas) + "\n";
  for (const auto& f : r.findings())
    s += "(" + std::to_string(f.rank) + ", " + std::to_string(f.seq) + ") " + f.check + ": " + f.message + "\n";
  return s;
}

class ReplicaE2e : public ::testing::TestWithParam<std::string> {};

TEST_P(ReplicaE2e, CleanDataParallelRunIsClean) {
  analyzer::TraceSet set;
  const analyzer::CheckReport r = RunGpt("clean-" + GetParam(), "--dtype " + GetParam(), &set);
  EXPECT_EQ(r.verdict(), analyzer::Verdict::kClean) << Describe(r);
  const analyzer::ReplicaSummary& s = r.summary().replicas;
  EXPECT_EQ(s.sets, (std::set<std::vector<int>>{{0, 1, 2}})) << Describe(r);
  // Every operand established at step 0 is read again at each later step.
  EXPECT_GT(s.operands_established, 0u);
  EXPECT_EQ(s.uses_compared, s.operands_established * (kSteps - 1)) << Describe(r);
}

TEST_P(ReplicaE2e, ReplicaSteppingOnItsLocalGradientIsFoundAtStepOne) {
  analyzer::TraceSet set;
  const analyzer::CheckReport r =
      RunGpt("bug-" + GetParam(), "--dtype " + GetParam() + " --bug optimizer-before-reduce", &set);
  ASSERT_EQ(r.findings().size(), 1u) << Describe(r);
  const analyzer::Finding& f = r.findings()[0];
  EXPECT_EQ(f.check, "replica.identical");
  EXPECT_EQ(f.rank, 0);
  EXPECT_NE(f.message.find("rank 0 differs from the majority (1, 2)"), std::string::npos) << f.message;
  EXPECT_GT(f.violations, 0u);
  // At a GEMM of step 1: every step issues the same GEMMs, so step 1 holds GEMMs [G/steps, 2G/steps) of rank 0.
  std::vector<uint64_t> gemms;
  for (const analyzer::Op& op : set.ranks[0].ops)
    if (op.kind == analyzer::OpKind::kGemm) gemms.push_back(op.seq);
  ASSERT_EQ(gemms.size() % kSteps, 0u);
  const size_t per_step = gemms.size() / kSteps;
  EXPECT_GE(f.seq, gemms[per_step]) << Describe(r);
  EXPECT_LT(f.seq, gemms[2 * per_step]) << Describe(r);
  // The same through `ttrace check`, which streams the payloads (digests taken op by op, the parting's operands
  // read again for the evidence).
  const std::string dir = TempDir() + "/bug-" + GetParam();
  std::ostringstream out, err;
  const char* argv[] = {"ttrace", "check", dir.c_str()};
  EXPECT_EQ(analyzer::RunCli(3, argv, out, err), analyzer::kExitFindings) << err.str();
  EXPECT_NE(out.str().find("[replica.identical]"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("rank 0 differs from the majority (1, 2)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(" elements differ from rank 1's, first at element "), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("could not be read again"), std::string::npos) << out.str();
}

TEST_P(ReplicaE2e, DistributedOptimizerResyncsTheReplicas) {
  analyzer::TraceSet set;
  const analyzer::CheckReport r =
      RunGpt("distopt-" + GetParam(), "--dtype " + GetParam() + " --dist-opt --bug optimizer-before-reduce", &set);
  EXPECT_TRUE(r.findings().empty()) << Describe(r);
  EXPECT_EQ(r.summary().replicas.parted, 0u);
  EXPECT_GT(r.summary().replicas.uses_compared, 0u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReplicaE2e, ::testing::Values("fp32", "bf16"));

}  // namespace
}  // namespace ttrace::e2e
