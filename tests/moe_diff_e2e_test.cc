// ttrace diff end to end on a program that is neither tp_mlp nor gpt: tools/workloads/moe_ep, an expert-parallel
// mixture-of-experts layer on simgpu under libttrace.so. Its ranks run different experts (GEMMs of the signatures
// the one-rank reference runs for every expert) and exchange tokens with grouped ncclSend / ncclRecv to every rank,
// itself included, as PyTorch's all_to_all_single does; the one-rank reference sends to and receives from itself
// and all-gathers its routing counts on its group of one. Those exchanges are not a pipeline (each rank is aligned
// on its own), the reference's copies to itself and the count all-gather are folded into their readers, so clean
// runs diff clean with every op compared, and each --bug is found at the op where it first shows.
#include <string>

#include "analyzer/diff.h"
#include "analyzer/pipeline.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "tests/e2e_util.h"

namespace ttrace::e2e {
namespace {

using analyzer::DiffResult;
using analyzer::Verdict;

std::string RunMoe(const std::string& name, int ranks, const std::string& args) {
  const std::string dir = TempDir() + "/" + name, b = BuildDir();
  const std::string cmd = "rm -rf '" + dir + "' && env LD_LIBRARY_PATH=" + b + "/simgpu/lib TTRACE_DIR='" + dir +
                          "' TTRACE_CONTEXT=0 LD_PRELOAD=" + b + "/lib/libttrace.so " + b + "/bin/simrun -n " +
                          std::to_string(ranks) + " -- " + b + "/bin/moe_ep --rdzv '" + dir + ".rdzv' " + args;
  std::string out;
  EXPECT_EQ(Shell(cmd, &out), 0) << cmd << "\n" << out;
  return dir;
}

DiffResult Diff(const std::string& ref, const std::string& cand) {
  auto r = analyzer::LoadTraceDir(ref), c = analyzer::LoadTraceDir(cand);
  EXPECT_TRUE(r.ok() && c.ok());
  if (!r.ok() || !c.ok()) return {};
  return analyzer::RunDiff(*r, *c, analyzer::DiffOptions{});
}

std::string Describe(const DiffResult& d) {
  std::string s;
  for (const auto& f : d.report.findings())
    s += "  (" + std::to_string(f.rank) + ", " + std::to_string(f.seq) + ") " + f.message + " | " + f.detail + "\n";
  for (const auto& g : d.report.summary().gaps) s += "  gap: " + g + "\n";
  return s;
}

// Each rank of the trace in `cand` is its own chain: its exchanges were not read as pipeline hand-overs.
void ExpectNoPipeline(const std::string& cand, int ranks, const std::string& tag) {
  auto c = analyzer::LoadTraceDir(cand);
  ASSERT_TRUE(c.ok()) << tag;
  const analyzer::PipelineLayout p = analyzer::InferPipeline(*c);
  EXPECT_EQ(p.stages, 1) << tag << ranks;
  EXPECT_EQ(p.chains.size(), static_cast<size_t>(ranks)) << tag << ranks;
}

// Before exchanges were told from pipeline hand-overs, the two ranks were merged into one two-stage chain and the
// clean FP32 run had a between finding at 8.4e6 x the threshold, and the reference's 12 sends and receives to
// itself were not aligned (incomplete). "sum": the local-mean gradients averaged as PyTorch DDP's reducer does
// (divided by W, then summed); before divide-then-sum was taken as an average, the W-times-larger output gradients
// of the experts' backward GEMMs were a between finding (8.4e6 x).
TEST(MoeDiffE2e, ExpertParallelCleanRunsDiffCleanWithEveryOpCompared) {
  for (const char* dtype : {"fp32", "bf16"})
    for (const char* mean : {"local", "global", "sum"}) {
      const std::string tag = std::string(dtype) + "_" + mean;
      const std::string how = std::string(mean) == "sum" ? "--grad-reduce sum" : std::string("--loss-mean ") + mean;
      const std::string args = std::string("--dtype ") + dtype + " " + how;
      const std::string ref = RunMoe("ref_" + tag, 1, args);
      for (int ranks : {2, 4}) {
        const std::string cand = RunMoe("clean_" + tag + std::to_string(ranks), ranks, args);
        ExpectNoPipeline(cand, ranks, tag);
        const DiffResult d = Diff(ref, cand);
        EXPECT_EQ(d.mode, "sharded");
        EXPECT_EQ(d.report.verdict(), Verdict::kClean) << tag << ranks << "\n" << Describe(d);
        EXPECT_EQ(d.report.summary().not_checked_total(), 0u) << tag << ranks << "\n" << Describe(d);
        EXPECT_LT(d.report.summary().overall.max_ratio, 1.0) << tag << ranks;
      }
    }
}

// Two and three ranks whose exchanges skip the self chunk (--self-chunk copy: copied on the stream, sends and
// receives to the other ranks only, as Megatron-LM's and DeepSpeed's dispatchers do; the one-rank reference sends
// nothing). Every rank then talks to one or two others, as a pipeline stage does; the exchange shows in its first
// group, which sends to and receives from the same peer on every rank. Before: read as a 2- and a 3-stage pipeline
// whose merged chain was aligned as one: the clean 2-rank run had a false between finding (the dWg all-reduce at
// 1.002 x diff.between) and 8 ops not checked. A bug is still found where it shows, at its own rank.
TEST(MoeDiffE2e, ExchangesWithoutTheSelfChunkAreNotAPipeline) {
  for (int ranks : {2, 3}) {
    const std::string args = "--self-chunk copy --loss-mean global --experts 6 --tokens 48";
    const std::string ref = RunMoe("ref_self" + std::to_string(ranks), 1, args);
    const std::string cand = RunMoe("clean_self" + std::to_string(ranks), ranks, args);
    ExpectNoPipeline(cand, ranks, "self");
    const DiffResult d = Diff(ref, cand);
    EXPECT_EQ(d.report.verdict(), Verdict::kClean) << ranks << "\n" << Describe(d);
    EXPECT_EQ(d.report.summary().not_checked_total(), 0u) << ranks << "\n" << Describe(d);
    const DiffResult b = Diff(ref, RunMoe("stale_self" + std::to_string(ranks), ranks, args + " --bug stale-expert"));
    ASSERT_TRUE(b.first.valid) << ranks << "\n" << Describe(b);
    EXPECT_EQ(b.first.op.rank, ranks - 1) << Describe(b);
    EXPECT_EQ(b.first.kind, "between") << Describe(b);
  }
}

// Four ranks, one expert each (--loss-mean global): in step 1 experts 0 and 2 get 11 tokens each, so by signature alone rank 0's expert
// GEMMs align with expert 2's in the reference (as rank 2's do) and expert 0's are left unaligned; before the
// pairing by content, the clean run had a between finding at 3.5e6 x and 5 ops not aligned. The last rank's stale
// expert is found at its own expert's first GEMM of step 1 (reference seq 40: expert 3).
TEST(MoeDiffE2e, ExpertsOfEqualTokenCountsAlignByContent) {
  const std::string ref = RunMoe("ref4", 1, "--loss-mean global");
  const DiffResult clean = Diff(ref, RunMoe("clean4", 4, "--loss-mean global"));
  EXPECT_EQ(clean.report.verdict(), Verdict::kClean) << Describe(clean);
  EXPECT_EQ(clean.report.summary().not_checked_total(), 0u) << Describe(clean);
  const DiffResult d = Diff(ref, RunMoe("stale4", 4, "--loss-mean global --bug stale-expert"));
  ASSERT_TRUE(d.first.valid) << Describe(d);
  EXPECT_EQ(d.first.op.rank, 3);
  EXPECT_EQ(d.first.ref_seq, 40) << Describe(d);
  EXPECT_EQ(d.first.kind, "between");
  EXPECT_EQ(d.first.operand, "A");
}

struct BugCase {
  const char* bug;
  const char* args;
  int64_t ref_seq;  // reference op order per step: 0 gate GEMM, 1 count all-gather, 2-3 dispatch, 4-11 the four
                    // experts' forward GEMMs, 12-15 combine and gradient dispatch, 16-27 the experts' backward
                    // GEMMs (dW2, dA, dW1 each), 28 dWg, 29 its all-reduce; step 1 starts at 30
  const char* kind;
  const char* operand;
};
constexpr BugCase kBugs[] = {
    // Rank 0 gets rank 1's rows back reversed: the output gradients sent to expert 0 differ (its dW2 GEMM's A).
    {"combine-remote-reversed", "", 16, "between", "A"},
    // Rank 1 (experts 2 and 3) computes step 1 with its step-0 weights: expert 2's first GEMM reads them.
    {"stale-expert", "", 38, "between", "A"},
    // The experts' update is W times too large: expert 0's first GEMM of step 1 reads the moved weights.
    {"expert-grad-unscaled", "", 34, "between", "A"},
    // The gate gradient's partial sums reduced with max (the loss divided by the global token count, so the
    // all-reduce sums the partial outputs of the dWg GEMM): inside the all-reduce.
    {"gate-grad-max", "--loss-mean global", 29, "inside", "recv"},
    // The same under divide-then-sum averaging: the gate gradient's divided partial outputs link to their GEMM.
    {"expert-grad-unscaled", "--grad-reduce sum", 34, "between", "A"},
};

TEST(MoeDiffE2e, BugsAreFoundWhereTheyFirstShow) {
  for (const BugCase& b : kBugs) {
    const std::string args = std::string("--dtype fp32 ") + b.args;
    const std::string tag = std::string(b.bug) + (*b.args ? "_alt" : "");
    const std::string ref = RunMoe("bugref_" + tag, 1, args);
    const std::string cand = RunMoe("bug_" + tag, 2, args + " --bug " + b.bug);
    const DiffResult d = Diff(ref, cand);
    EXPECT_EQ(d.report.verdict(), Verdict::kFindings) << b.bug << "\n" << Describe(d);
    EXPECT_EQ(d.report.summary().not_checked_total(), 0u) << b.bug << "\n" << Describe(d);
    ASSERT_TRUE(d.first.valid) << b.bug;
    EXPECT_EQ(d.first.ref_seq, b.ref_seq) << b.bug << "\n" << Describe(d);
    EXPECT_EQ(d.first.kind, b.kind) << b.bug << "\n" << Describe(d);
    EXPECT_EQ(d.first.operand, b.operand) << b.bug << "\n" << Describe(d);
    EXPECT_GT(d.first.ratio, 100) << b.bug;
    printf("bug   %-26s first %s at ref seq %lld (%s), err/threshold %.3g\n", b.bug, d.first.kind.c_str(),
           static_cast<long long>(d.first.ref_seq), d.first.operand.c_str(), d.first.ratio);
  }
}

}  // namespace
}  // namespace ttrace::e2e
