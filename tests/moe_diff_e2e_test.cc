// ttrace diff end to end on programs that are neither tp_mlp nor gpt. tools/workloads/moe_ep, an expert-parallel
// mixture-of-experts layer on simgpu under libttrace.so. Its ranks run different experts (GEMMs of the signatures
// the one-rank reference runs for every expert) and exchange tokens with grouped ncclSend / ncclRecv to every rank,
// itself included, as PyTorch's all_to_all_single does; the one-rank reference sends to and receives from itself
// and all-gathers its routing counts on its group of one. Those exchanges are not a pipeline (each rank is aligned
// on its own), the reference's copies to itself and the count all-gather are folded into their readers, so clean
// runs diff clean with every op compared, and each --bug is found at the op where it first shows.
#include <cstdint>
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

// Runs build/bin/`program` on `ranks` simgpu ranks under the shim into a fresh trace directory `name`.
std::string RunWorkload(const std::string& program, const std::string& name, int ranks, const std::string& args) {
  const std::string dir = TempDir() + "/" + name, b = BuildDir();
  const std::string cmd = "rm -rf '" + dir + "' && env LD_LIBRARY_PATH=" + b + "/simgpu/lib TTRACE_DIR='" + dir +
                          "' TTRACE_CONTEXT=0 LD_PRELOAD=" + b + "/lib/libttrace.so " + b + "/bin/simrun -n " +
                          std::to_string(ranks) + " -- " + b + "/bin/" + program + " --rdzv '" + dir + ".rdzv' " + args;
  std::string out;
  EXPECT_EQ(Shell(cmd, &out), 0) << cmd << "\n" << out;
  return dir;
}

std::string RunMoe(const std::string& name, int ranks, const std::string& args) {
  return RunWorkload("moe_ep", name, ranks, args);
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
    // The same under each rank's own token mean: the gate GEMM splits the tokens over the communicator, so the
    // gradients may carry its size and its all-reduce must average them; max is found inside it. Before: the scale
    // was allowed only on a communicator where the run averaged, so the W-times output gradient was found at the
    // first backward GEMM (reference seq 16, between at A).
    {"gate-grad-max", "", 29, "inside", "recv"},
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

// The first divergence of `d` is between at the input of the all-gather that is reference seq `ref_seq`, and its
// finding names that reference op and the input from comm rank (and rank) `rank`.
void ExpectBetweenAtGatherInput(const DiffResult& d, int64_t ref_seq, int rank, const std::string& tag) {
  ASSERT_TRUE(d.first.valid) << tag << "\n" << Describe(d);
  EXPECT_EQ(d.first.op.api, "ncclAllGather") << tag << "\n" << Describe(d);
  EXPECT_EQ(d.first.kind, "between") << tag << "\n" << Describe(d);
  EXPECT_EQ(d.first.operand, "send") << tag;
  EXPECT_EQ(d.first.ref_seq, ref_seq) << tag << "\n" << Describe(d);
  ASSERT_FALSE(d.report.findings().empty()) << tag;
  const analyzer::Finding& f = d.report.findings()[0];
  const std::string r = std::to_string(rank);
  EXPECT_NE(f.message.find("(reference seq " + std::to_string(ref_seq) + ")"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("its input from comm rank " + r + " (rank " + r + ")"), std::string::npos) << f.message;
}

// tools/workloads/fsdp_mlp: an MLP sharded as FSDP shards it. Each layer's weight is all-gathered from its W shards
// before its GEMM (the one-rank reference gathers on its group of one: the gather is reference seq 0, the GEMM that
// reads it seq 1), and the weight gradients are reduce-scattered with ncclAvg: each rank's loss is a mean over its
// own tokens, so its output gradients are W times the reference's and are compared under that scale. Clean runs
// (2 and 4 ranks, FP32 and BF16) diff clean with every op compared. A shard cut at the wrong place on the last rank
// (one row past it; or at the previous rank's place, so that two inputs hold the same chunk) is found at the
// all-gather, between at its input: the finding names the gather's own reference op and the rank whose chunk
// differs, and no scale (the weight is no averaged gradient). Before, on 2 ranks, FP32: "(reference seq 1)", "its
// input from comm rank 0", and "inputs scaled by 2 and 1 (gradients of an averaging data-parallel run)": the scale
// picker took 2 because it lowered the gathered weight's error from 0.98 to 0.86; the previous rank's chunk was
// "inside" (every input matched some chunk: taken for a gather in the wrong rank order).
TEST(FsdpDiffE2e, CleanRunsAreCleanAndAShardAtTheWrongOffsetIsFoundAtItsGather) {
  for (const char* dtype : {"fp32", "bf16"}) {
    const std::string args = std::string("--dtype ") + dtype;
    const std::string ref = RunWorkload("fsdp_mlp", std::string("fref_") + dtype, 1, args);
    for (int ranks : {2, 4}) {
      const std::string tag = std::string(dtype) + std::to_string(ranks);
      const DiffResult clean = Diff(ref, RunWorkload("fsdp_mlp", "fclean_" + tag, ranks, args));
      EXPECT_EQ(clean.report.verdict(), Verdict::kClean) << tag << "\n" << Describe(clean);
      EXPECT_EQ(clean.report.summary().not_checked_total(), 0u) << tag << "\n" << Describe(clean);
      EXPECT_GT(clean.report.summary().checked.count("diff.allgather"), 0u) << tag;
      // Every gradient reduce-scatter is compared with the reference's (linked to its GEMM), none folded (before:
      // all folded, judged where the updated weights were gathered next).
      EXPECT_EQ(clean.report.summary().checked.count("diff.folded"), 0u) << tag << "\n" << Describe(clean);
      EXPECT_GT(clean.report.summary().checked.count("diff.reducescatter"), 0u) << tag;
      for (const std::string bug : {"shard-offset", "shard-of-prev"}) {
        const DiffResult d = Diff(ref, RunWorkload("fsdp_mlp", bug + tag, ranks, args + " --bug " + bug));
        ExpectBetweenAtGatherInput(d, 0, ranks - 1, tag + bug);
        if (!d.report.findings().empty())
          EXPECT_EQ(d.report.findings()[0].detail.find("scaled"), std::string::npos) << d.report.findings()[0].detail;
      }
    }
  }
}

// The gradients reduce-scattered with a sum where the loss is a per-rank mean (--bug grad-summed). The weights' GEMMs
// split the tokens over the communicator, so the output gradients may carry its size (2), and the reduce-scatter of a
// weight gradient's partial outputs (reference seq 5, linked to its GEMM, seq 4) must give the reference's gradient:
// the sum is twice it, found inside the reduce-scatter and said so. Before: the scale was allowed only on a
// communicator where some rank averaged, so nothing did any more, and the twice-as-large output gradient was found at
// the first backward GEMM (reference seq 4, between at A); the reduce-scatters were folded, never compared.
TEST(FsdpDiffE2e, ASumWhereAnAverageBelongsIsFoundAtTheReduceScatter) {
  const std::string ref = RunWorkload("fsdp_mlp", "fref_sum", 1, "");
  const DiffResult d = Diff(ref, RunWorkload("fsdp_mlp", "fsum", 2, "--bug grad-summed"));
  ASSERT_TRUE(d.first.valid) << Describe(d);
  EXPECT_EQ(d.first.op.api, "ncclReduceScatter") << Describe(d);
  EXPECT_EQ(d.first.ref_seq, 5) << Describe(d);
  EXPECT_EQ(d.first.kind, "inside");
  EXPECT_EQ(d.first.operand, "recv");
  ASSERT_FALSE(d.report.findings().empty());
  EXPECT_NE(d.report.findings()[0].message.find("the result is 2 x the reference's: a sum where the run's per-rank "
                                                "mean losses need an average"),
            std::string::npos)
      << Describe(d);
}

// PyTorch FSDP's default (reshard_after_forward=True): each layer's gathered weight is freed after its forward GEMM
// and all-gathered again before its backward GEMMs (fsdp_mlp --reshard-after-forward true), so every weight is
// gathered twice per step. The backward's re-gather of layer l feeds dX_l = dY_l·W_lᵀ as a transposed operand
// (stored as the gather wrote it), compared at its reader like the forward's gathers (diff.allgather); a clean run
// is clean with every op compared (2 and 4 ranks, FP32 and BF16), against a reference that re-gathers too and (2
// ranks, FP32) against one that reads the forward's gathered weight in backward. A stale shard in the last rank's
// re-gather of the last layer (--bug stale-regather: its shard from before step 0's update) leaves step 0 clean and
// is found at that re-gather in step 1 (reference seq 15), between at its input from the last rank, not at the GEMM
// that reads it (reference seq 18). Before: a transposed operand was not traced to its gather, so the re-gathers
// were folded (diff.allgather 8 of 12 on 2 ranks). In BF16 the stale shard (one SGD step of lr 0.1 behind)
// differs by about 1.5 ε, inside diff.between's threshold, and is not found (docs/diff.md).
TEST(FsdpDiffE2e, AWeightGatheredAgainInBackwardIsCleanAndAStaleShardInTheRegatherIsFoundThere) {
  const std::string reshard = " --reshard-after-forward true";
  for (const char* dtype : {"fp32", "bf16"}) {
    const std::string args = std::string("--dtype ") + dtype + reshard;
    const std::string ref = RunWorkload("fsdp_mlp", std::string("frref_") + dtype, 1, args);
    for (int ranks : {2, 4}) {
      const std::string tag = std::string(dtype) + std::to_string(ranks);
      const std::string cand = RunWorkload("fsdp_mlp", "frclean_" + tag, ranks, args);
      const DiffResult clean = Diff(ref, cand);
      EXPECT_EQ(clean.report.verdict(), Verdict::kClean) << tag << "\n" << Describe(clean);
      EXPECT_EQ(clean.report.summary().not_checked_total(), 0u) << tag << "\n" << Describe(clean);
      // Per rank and step (2 layers): the 2 forward gathers and the re-gather of layer 1 that dX_1 reads are compared
      // (layer 0's re-gather has no reader: folded).
      const auto& checked = clean.report.summary().checked;
      EXPECT_EQ(checked.count("diff.allgather") ? checked.at("diff.allgather") : 0, 2u * 3 * ranks) << tag;
      if (ranks == 2 && std::string(dtype) == "fp32") {
        const DiffResult kept = Diff(RunWorkload("fsdp_mlp", "frkept", 1, ""), cand);
        EXPECT_EQ(kept.report.verdict(), Verdict::kClean) << Describe(kept);
        EXPECT_EQ(kept.report.summary().not_checked_total(), 0u) << Describe(kept);
      }
      if (std::string(dtype) != "fp32") continue;
      const DiffResult d = Diff(ref, RunWorkload("fsdp_mlp", "frstale_" + tag, ranks, args + " --bug stale-regather"));
      ExpectBetweenAtGatherInput(d, 15, ranks - 1, tag);
    }
  }
}

}  // namespace
}  // namespace ttrace::e2e
