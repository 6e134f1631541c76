// End to end on simgpu: the tp_mlp workload (tensor + data parallel, FP32 and BF16) under libttrace.so, checked
// by the analyzer. What must hold:
// - the shim changes nothing the program computes (bitwise-identical losses and final weights);
// - clean runs are clean, with every op checked;
// - bit flips injected by simgpu into one GEMM output are found at the right (rank, seq, element) by gemm.replay,
//   every one (each flips a sign or exponent bit that changes the value by much more than any rounding could: the
//   oracle below is independent of the analyzer's error model); all-reduce flips at their (rank, seq) (and, when
//   the flipped result reaches an operand the TP ranks read identically, where those replicas part, later);
// - a rank killed mid-run leaves a trace that reads back to its last complete frame, and is incomplete.
#include <cmath>
#include <map>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "kernels/dtype.h"
#include "tests/e2e_util.h"

namespace ttrace::e2e {
namespace {

using analyzer::CheckReport;
using analyzer::Op;
using analyzer::OpKind;
using analyzer::TraceSet;
using format::TensorSlot;

TraceSet Load(const std::string& dir, bool allow_truncated = false) {
  analyzer::LoadOptions opt;
  opt.allow_truncated = allow_truncated;
  auto set = analyzer::LoadTraceDir(dir, opt);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? std::move(*set) : TraceSet{};
}

std::string Describe(const CheckReport& report) {
  std::string s;
  for (const auto& f : report.findings())
    s += "  (" + std::to_string(f.rank) + ", " + std::to_string(f.seq) + ") " + f.check + ": " + f.message + "\n";
  return s;
}

// The ops of one kind on one rank, in seq order: the simgpu call counters count exactly these.
std::vector<const Op*> OpsOf(const TraceSet& set, int rank, OpKind kind) {
  std::vector<const Op*> out;
  for (const auto& r : set.ranks)
    if (r.rank() == rank)
      for (const auto& op : r.ops)
        if (op.kind == kind) out.push_back(&op);
  return out;
}

// Element `i` of a captured tensor as a double, and the same element with bit `bit` of its storage flipped.
struct Flip {
  double before, after, rms;
};
Flip FlipElement(const analyzer::Tensor& t, uint64_t i, int bit) {
  Flip f{};
  const auto dtype = static_cast<format::DType>(t.meta.dtype);
  const size_t n = t.data.size() / format::DTypeSize(t.meta.dtype);
  auto value = [&](size_t j, uint32_t flip) -> double {
    if (dtype == format::DType::kF32) {
      uint32_t u;
      memcpy(&u, t.data.data() + 4 * j, 4);
      return kernels::BitsFloat(u ^ flip);
    }
    uint16_t h;
    memcpy(&h, t.data.data() + 2 * j, 2);
    h = static_cast<uint16_t>(h ^ flip);
    return dtype == format::DType::kBF16 ? kernels::Bf16ToFloat(h) : kernels::HalfToFloat(h);
  };
  double sq = 0;
  for (size_t j = 0; j < n; ++j) sq += value(j, 0) * value(j, 0);
  f.rms = std::sqrt(sq / static_cast<double>(n));
  f.before = value(i, 0);
  f.after = value(i, 1u << bit);
  return f;
}

// Oracle, independent of the analyzer: a change of at least a quarter of the value and of the output's RMS is far
// beyond any rounding of these small GEMMs and 2-rank sums (FP32 accumulation; BF16 output rounding is 2^-9
// relative); non-finite results always count.
bool Significant(const Flip& f) {
  if (!std::isfinite(f.after)) return true;
  const double d = std::fabs(f.after - f.before);
  return d >= 0.25 * std::max(std::fabs(f.before), std::fabs(f.after)) && d >= 0.25 * f.rms;
}

// A bit flip to inject: a random op of `kind` on a random rank (its call number among that rank's ops of the
// kind, which is what simgpu counts), a random output element, and a random bit (the top 8 bits, sign and
// exponent, on odd trials, where flips are large), with the value it turns the clean run's element into.
struct PlannedFlip {
  int rank = 0;
  const Op* op = nullptr;
  uint64_t elem = 0;
  std::string spec;  // SIMGPU_FAULT
  Flip flip{};
};
PlannedFlip PlanFlip(const TraceSet& ref, OpKind kind, std::mt19937& rng, int trial, int bits) {
  PlannedFlip p;
  p.rank = static_cast<int>(rng() % ref.ranks.size());
  auto ops = OpsOf(ref, p.rank, kind);
  if (ops.empty()) return p;
  const size_t call = rng() % ops.size();
  p.op = ops[call];
  const bool gemm = kind == OpKind::kGemm;
  const analyzer::Tensor* out = p.op->tensor(gemm ? TensorSlot::kCOut : TensorSlot::kRecv);
  if (out == nullptr) return PlannedFlip{};
  const uint64_t n = gemm ? static_cast<uint64_t>(p.op->gemm.m * p.op->gemm.n * p.op->gemm.batch_count)
                          : p.op->coll.count;
  p.elem = rng() % n;
  const int bit = trial % 2 ? bits - 1 - static_cast<int>(rng() % 8) : static_cast<int>(rng() % bits);
  p.flip = FlipElement(*out, p.elem, bit);
  p.spec = std::string(gemm ? "gemm" : "coll") + ":rank=" + std::to_string(p.rank) + ":call=" +
           std::to_string(call) + ":elem=" + std::to_string(p.elem) + ":bit=" + std::to_string(bit);
  return p;
}

// A flip the oracle calls significant: redrawn (the next element, op and bit of `rng`) until one is.
PlannedFlip PlanSignificantFlip(const TraceSet& ref, OpKind kind, std::mt19937& rng, int bits) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    PlannedFlip p = PlanFlip(ref, kind, rng, /*trial=*/1, bits);  // sign and exponent bits
    if (p.op != nullptr && Significant(p.flip)) return p;
  }
  return PlannedFlip{};
}

class EndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(EndToEnd, ShimChangesNothing) {
  Job job;
  job.dtype = GetParam();
  job.steps = 3;
  job.shim = false;
  JobResult plain = RunJob("plain_" + job.dtype, job);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  job.shim = true;
  JobResult traced = RunJob("traced_" + job.dtype, job);
  ASSERT_EQ(traced.exit_code, 0) << traced.output;
  auto weights = Lines(plain.output, "rank ");
  ASSERT_EQ(weights.size(), 4u) << plain.output;
  EXPECT_EQ(weights, Lines(traced.output, "rank "));
  EXPECT_EQ(Lines(plain.output, "step "), Lines(traced.output, "step "));
  EXPECT_EQ(Lines(traced.output, "ttrace"), std::vector<std::string>{}) << "the shim had something to say";
}

TEST_P(EndToEnd, CleanRunIsCleanAndFullyChecked) {
  for (int tp : {1, 2, 4}) {
    Job job;
    job.dtype = GetParam();
    job.tp = tp;
    job.ranks = tp == 1 ? 3 : 4;  // tp 1: a 3-rank data-parallel all-reduce
    JobResult run = RunJob("clean_" + job.dtype + "_tp" + std::to_string(tp), job);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    TraceSet set = Load(run.trace_dir);
    ASSERT_EQ(set.ranks.size(), static_cast<size_t>(job.ranks));
    CheckReport report = analyzer::RunChecks(set);
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << "tp " << tp << ":\n" << Describe(report);
    const auto& s = report.summary();
    // Per rank and step: 6 GEMMs and 4 all-reduces (2 on the TP communicator, 2 on the DP one; a communicator
    // of one rank still gets its calls).
    EXPECT_EQ(s.checked.at("gemm"), 6u * job.steps * job.ranks);
    EXPECT_EQ(s.checked.at("allreduce"), 4u * job.steps * job.ranks);
    EXPECT_EQ(s.not_checked_total(), 0u);
    ASSERT_TRUE(s.overall.valid);
    EXPECT_LT(s.overall.max_ratio, 1.0);
    printf("[ measured ] %s tp=%d: max err/bound on the clean run %.3g\n", job.dtype.c_str(), tp,
           s.overall.max_ratio);
  }
}

// GPUs sum a GEMM's products in orders that vary with the kernel chosen (DESIGN.md §3): the bounds must hold
// for every order simgpu can produce, not just its default one.
TEST_P(EndToEnd, CleanUnderEveryAccumulationOrder) {
  for (const char* order : {"pairwise", "blocked:16", "splitk:3", "random:7"}) {
    Job job;
    job.dtype = GetParam();
    job.extra_env = std::string("SIMGPU_ACCUM=") + order;
    JobResult run = RunJob("order_" + job.dtype + "_" + std::to_string(order[0]), job);
    ASSERT_EQ(run.exit_code, 0) << order << "\n" << run.output;
    CheckReport report = analyzer::RunChecks(Load(run.trace_dir));
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << order << ":\n" << Describe(report);
    EXPECT_EQ(report.summary().not_checked_total(), 0u);
    printf("[ measured ] %s SIMGPU_ACCUM=%s: max err/bound %.3g\n", job.dtype.c_str(), order,
           report.summary().overall.max_ratio);
  }
}

// The clean run the sweeps plan their faults on: one per dtype, shared by the sweeps that run in one process.
const TraceSet& CleanReference(const std::string& dtype) {
  static auto* cache = new std::map<std::string, TraceSet>;
  auto it = cache->find(dtype);
  if (it != cache->end()) return it->second;
  Job job;
  job.dtype = dtype;
  JobResult clean = RunJob("sweep_ref_" + dtype, job);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  return cache->emplace(dtype, Load(clean.trace_dir)).first->second;
}

// Every trial flips a sign or exponent bit that the oracle calls significant (a change of at least a quarter of
// the value and of the output's RMS, or a non-finite value), so every trial must be found: one finding, gemm.replay,
// at the flipped (rank, seq) and element, holding the flipped value, one violating element, and an err/bound far
// above 1 (the change is >= 2^-2 relative where the bound of these k <= 64 GEMMs is about 2^-8 relative for BF16
// outputs and below 2^-16 for FP32: a ratio under 4 would mean a bound looser than any rounding explains).
TEST_P(EndToEnd, GemmBitFlipsAreCaughtWhereInjected) {
  const std::string dtype = GetParam();
  const TraceSet& ref = CleanReference(dtype);
  std::mt19937 rng(dtype == "bf16" ? 11 : 12);
  const int bits = dtype == "bf16" ? 16 : 32;
  for (int trial = 0; trial < 8; ++trial) {
    PlannedFlip p = PlanSignificantFlip(ref, OpKind::kGemm, rng, bits);
    ASSERT_NE(p.op, nullptr) << "no significant flip found to plan";
    SCOPED_TRACE(p.spec + " value " + std::to_string(p.flip.before) + " -> " + std::to_string(p.flip.after));
    Job job;
    job.dtype = dtype;
    job.fault = p.spec;
    JobResult run = RunJob("sweep_gemm_" + dtype + "_" + std::to_string(trial), job);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    CheckReport report = analyzer::RunChecks(Load(run.trace_dir));
    ASSERT_EQ(report.findings().size(), 1u) << Describe(report);
    const analyzer::Finding& f = report.findings()[0];
    EXPECT_EQ(f.check, "gemm.replay") << Describe(report);
    EXPECT_EQ(f.rank, p.rank) << Describe(report);
    EXPECT_EQ(f.seq, p.op->seq) << Describe(report);
    EXPECT_EQ(f.violations, 1u) << Describe(report);
    ASSERT_TRUE(f.has_element);
    EXPECT_EQ(f.first.index, p.elem) << Describe(report);
    if (std::isfinite(p.flip.after)) {
      EXPECT_EQ(f.first.got, p.flip.after);
      EXPECT_GT(f.ratio, 4.0) << Describe(report);
      EXPECT_TRUE(std::isfinite(f.ratio)) << Describe(report);
    } else {
      EXPECT_FALSE(std::isfinite(f.first.got));
    }
  }
}

TEST_P(EndToEnd, AllReduceBitFlipsAreCaughtWhereInjected) {
  const std::string dtype = GetParam();
  const TraceSet& ref = CleanReference(dtype);
  std::mt19937 rng(dtype == "bf16" ? 21 : 22);
  const int bits = dtype == "bf16" ? 16 : 32;
  for (int trial = 0; trial < 6; ++trial) {
    PlannedFlip p = PlanFlip(ref, OpKind::kCollective, rng, trial, bits);
    ASSERT_NE(p.op, nullptr);
    SCOPED_TRACE(p.spec + " value " + std::to_string(p.flip.before) + " -> " + std::to_string(p.flip.after));
    // Any flip breaks the bitwise identity of the ranks' results, so every flip is caught; attribution to the
    // flipped rank is asserted for large flips (a 1-ulp flip on a 2-rank communicator can look like either).
    Job bad;
    bad.dtype = dtype;
    bad.fault = p.spec;
    JobResult run = RunJob("sweep_coll_" + dtype + "_" + std::to_string(trial), bad);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    CheckReport report = analyzer::RunChecks(Load(run.trace_dir));
    // The flipped result may reach an operand the TP ranks read identically before (the next GEMM's input): that
    // parting is a later replica.identical finding, a consequence. Exactly one finding of any other check.
    ASSERT_FALSE(report.findings().empty());
    for (size_t i = 1; i < report.findings().size(); ++i) {
      EXPECT_EQ(report.findings()[i].check, "replica.identical") << Describe(report);
      EXPECT_GT(report.findings()[i].seq, p.op->seq) << Describe(report);
    }
    const auto& finding = report.findings()[0];
    EXPECT_NE(finding.check, "replica.identical") << Describe(report);
    if (Significant(p.flip)) {
      EXPECT_EQ(finding.rank, p.rank) << Describe(report);
      EXPECT_EQ(finding.seq, p.op->seq) << Describe(report);
    } else {
      EXPECT_EQ(finding.api, "ncclAllReduce") << Describe(report);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EndToEnd, ::testing::Values("fp32", "bf16"));

TEST(EndToEndCli, ExitCodesAndJson) {
  Job job;
  JobResult clean = RunJob("cli_clean", job);
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const std::string ttrace = BuildDir() + "/bin/ttrace";
  std::string out;
  EXPECT_EQ(Shell(ttrace + " check " + clean.trace_dir + " --json " + clean.trace_dir + ".json", &out), 0) << out;
  EXPECT_EQ(Shell("grep -c '\"verdict\": *\"clean\"' " + clean.trace_dir + ".json", &out), 0) << out;

  job.fault = "gemm:rank=2:call=1:elem=3:bit=14";
  JobResult bad = RunJob("cli_fault", job);
  ASSERT_EQ(bad.exit_code, 0) << bad.output;
  EXPECT_EQ(Shell(ttrace + " check " + bad.trace_dir + " --json " + bad.trace_dir + ".json", &out), 1) << out;
  EXPECT_EQ(Shell("grep -c '\"verdict\": *\"findings\"' " + bad.trace_dir + ".json", &out), 0) << out;

  // A corrupted byte in a stream: a clear message naming the file, exit 2.
  Shell("cp -r " + clean.trace_dir + " " + clean.trace_dir + "_corrupt && printf '\\x55' | dd of=" +
            clean.trace_dir + "_corrupt/rank-1.ttr bs=1 seek=300 conv=notrunc status=none",
        &out);
  EXPECT_EQ(Shell(ttrace + " check " + clean.trace_dir + "_corrupt", &out), 2) << out;
  EXPECT_NE(out.find("rank-1.ttr"), std::string::npos) << out;
  EXPECT_EQ(Shell(ttrace + " check " + TempDir() + "/no_such_dir", &out), 2) << out;
  EXPECT_EQ(Shell(ttrace + " frobnicate", &out), 2) << out;
}

TEST(EndToEndCrash, KilledRankLeavesReadableTrace) {
  // One rank, SIGKILLed after 1.5 s, while frames are flushed every 100 ms.
  JobResult r;
  r.trace_dir = TempDir() + "/killed";
  const std::string b = BuildDir();
  std::string out;
  Shell("rm -rf " + r.trace_dir + "; env LD_LIBRARY_PATH=" + b + "/simgpu/lib LD_PRELOAD=" + b +
            "/lib/libttrace.so TTRACE_DIR=" + r.trace_dir + " TTRACE_FLUSH_MS=100 timeout -s KILL 1.5 " + b +
            "/bin/tp_mlp --tp 1 --steps 100000 --rdzv " + r.trace_dir + ".rdzv",
        &out);
  TraceSet set = Load(r.trace_dir, /*allow_truncated=*/true);
  ASSERT_EQ(set.ranks.size(), 1u);
  // The kill cuts a frame (the strict reader refuses the stream as truncated) or falls between two (it reads it);
  // which one happened is what the tolerant reader saw, and each case is asserted.
  auto strict = analyzer::LoadTraceDir(r.trace_dir);
  if (set.ranks[0].truncated) {
    ASSERT_FALSE(strict.ok()) << "a cut frame was read without complaint";
    EXPECT_EQ(strict.status().code(), absl::StatusCode::kDataLoss) << strict.status();
    EXPECT_NE(strict.status().message().find("truncated"), absl::string_view::npos) << strict.status();
  } else {
    ASSERT_TRUE(strict.ok()) << strict.status();
    ASSERT_EQ(strict->ranks.size(), 1u);
    EXPECT_EQ(strict->ranks[0].ops.size(), set.ranks[0].ops.size());
  }
  EXPECT_GT(set.ranks[0].ops.size(), 12u) << "at least a couple of steps were flushed";
  CheckReport report = analyzer::RunChecks(set);
  EXPECT_TRUE(report.no_findings()) << Describe(report);
  // Killed: no end record, so the verdict is incomplete whatever frame the stream stops on.
  EXPECT_FALSE(set.ranks[0].ended);
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kIncomplete);
  ASSERT_FALSE(report.summary().gaps.empty());
  EXPECT_NE(report.summary().gaps[0].find("stream ends at seq "), std::string::npos) << report.summary().gaps[0];
}

}  // namespace
}  // namespace ttrace::e2e
