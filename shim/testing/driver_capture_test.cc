// libttrace.so preloaded into programs that have no CUDA runtime in their process (shim_driver_workload: the
// driver API, cuBLAS and NCCL only, as a closed binary with cudart linked statically), on simgpu: the shim's
// copies go through libcuda.so.1. The same program bound to a stand-in libcublas.so.12 exercises the CUDA 12
// version node: its GEMMs reach the shim's cublas*@libcublas.so.12 exports, which call cuBLAS 12, and their
// tensors are captured too; with --both-majors one process calls cuBLAS 12 and cuBLAS 13 entry points.
#include <sys/stat.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "shim/testing/dump.h"
#include "shim/testing/process.h"
#include "shim/testing/trace_compare.h"
#include "ttrace/format.h"

namespace ttrace::shim::testing {
namespace {

using Env = std::map<std::string, std::string>;

const std::string kShim = TTRACE_SHIM_LIB;
const std::string kSimgpu = TTRACE_SIMGPU_LIBDIR;
const std::string kCublas12 = TTRACE_CUBLAS12_DIR;
const std::string kSimrun = TTRACE_SIMRUN;

struct Job {
  RunResult result;
  std::vector<std::vector<DumpEntry>> dumps;  // per rank
};

// Runs `program` on `ranks` ranks under simrun; with a trace dir, under the shim in full mode.
Job RunJob(const ScratchDir& scratch, const std::string& tag, const std::string& program, int ranks,
           const std::string& trace_dir, Env env = {}, const std::string& extra = "") {
  const std::string rdzv = scratch / ("rdzv-" + tag);
  mkdir(rdzv.c_str(), 0755);
  env["LD_LIBRARY_PATH"] = kSimgpu + ":" + kCublas12;
  if (!trace_dir.empty()) {
    env["LD_PRELOAD"] = kShim;
    env["TTRACE_DIR"] = trace_dir;
    env["TTRACE_MODE"] = "full";
  }
  Job job;
  job.result = RunProgram({kSimrun, "-n", std::to_string(ranks), "--", "/bin/sh", "-c",
                           program + " --rdzv " + rdzv + " --dump " + scratch.path() + "/" + tag + "-$RANK.dump " +
                               extra},
                          env);
  for (int r = 0; r < ranks; ++r) {
    job.dumps.emplace_back();
    EXPECT_TRUE(ReadDump(scratch / (tag + "-" + std::to_string(r) + ".dump"), &job.dumps.back())) << tag << r;
  }
  return job;
}

std::vector<format::GemmRecord> Gemms(const std::vector<DumpEntry>& trace) {
  std::vector<format::GemmRecord> out;
  for (const DumpEntry& e : trace)
    if (e.type == format::RecordType::kGemm) out.push_back(e.As<format::GemmRecord>());
  return out;
}

// Every operand captured and equal to what the program saw, no notice, results unchanged by the shim, no cudart in
// the process, and `ttrace check` clean over every op.
void ExpectCapturedAndClean(const std::string& program, const std::string& extra, size_t gemms,
                            long standin_calls) {
  ScratchDir scratch;
  const Job plain = RunJob(scratch, "plain", program, 2, "", {}, extra);
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  const std::string traces = scratch / "traces";
  const Job traced = RunJob(scratch, "traced", program, 2, traces, {}, extra);
  ASSERT_EQ(traced.result.exit_code, 0) << traced.result.err;
  EXPECT_EQ(traced.result.err.find("ttrace"), std::string::npos) << "the shim complained:\n" << traced.result.err;
  const std::string summary = "cudart_loaded=0 standin_calls=" + std::to_string(standin_calls);
  EXPECT_NE(traced.result.out.find(summary), std::string::npos) << traced.result.out;
  for (int r = 0; r < 2; ++r) {
    const std::string where = "rank " + std::to_string(r);
    const auto want = TensorsByKey(traced.dumps[r]);
    const auto want_plain = TensorsByKey(plain.dumps[r]);
    ASSERT_EQ(want.size(), want_plain.size()) << where;
    for (const auto& [key, entry] : want)
      EXPECT_TRUE(want_plain.at(key).payload == entry.payload) << where << " seq " << key.first << ": changed";
    const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-" + std::to_string(r) + ".ttr");
    EXPECT_TRUE(Notices(trace).empty()) << where << ": " << Notices(trace)[0].payload;
    EXPECT_EQ(Gemms(trace).size(), gemms) << where;
    ExpectSameTensors(want, TensorsByKey(trace));
  }
  auto set = analyzer::LoadTraceDir(traces);
  ASSERT_TRUE(set.ok()) << set.status();
  const analyzer::CheckReport report = analyzer::RunChecks(*set);
  ASSERT_TRUE(report.no_findings()) << report.findings()[0].message;
  EXPECT_EQ(report.summary().checked.at("gemm"), 2 * gemms);
  EXPECT_EQ(report.summary().not_checked_total(), 0u);
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
}

TEST(DriverCaptureTest, ProgramWithoutCudartIsCapturedThroughTheDriver) {
  ExpectCapturedAndClean(TTRACE_DRIVER_WORKLOAD, "", 2, -1);
}

TEST(DriverCaptureTest, Cublas12CallsReachCublas12AndAreCaptured) {
  ExpectCapturedAndClean(TTRACE_DRIVER_WORKLOAD12, "", 2, 2);
}

// One process, both majors: seqs 0 and 1 through cuBLAS 12, seq 3 through cuBLAS 13's entry point. The stand-in
// counts exactly its two GEMMs: the shim called each major's own function.
TEST(DriverCaptureTest, BothMajorsInOneProcessEachReachTheirOwnLibrary) {
  ExpectCapturedAndClean(TTRACE_DRIVER_WORKLOAD12, "--both-majors", 3, 2);
}

// A flipped bit in GEMM 1 (the GemmEx) of rank 1 is found at that op and element, in the program bound to cuBLAS 13
// and in the one bound to cuBLAS 12.
TEST(DriverCaptureTest, FaultInAGemmIsFoundAtItsOp) {
  for (const std::string program : {TTRACE_DRIVER_WORKLOAD, TTRACE_DRIVER_WORKLOAD12}) {
    ScratchDir scratch;
    const std::string traces = scratch / "traces";
    const Job job =
        RunJob(scratch, "fault", program, 2, traces, {{"SIMGPU_FAULT", "gemm:rank=1:call=1:elem=5:bit=27"}});
    ASSERT_EQ(job.result.exit_code, 0) << job.result.err;
    auto set = analyzer::LoadTraceDir(traces);
    ASSERT_TRUE(set.ok()) << set.status();
    const analyzer::CheckReport report = analyzer::RunChecks(*set);
    ASSERT_EQ(report.findings().size(), 1u) << program;
    const analyzer::Finding& f = report.findings()[0];
    EXPECT_EQ(f.check, "gemm.replay") << program;
    EXPECT_EQ(f.rank, 1) << program;
    EXPECT_EQ(f.seq, 1u) << program;
    EXPECT_EQ(f.api, "cublasGemmEx") << program;
    EXPECT_EQ(f.first.index, 5u) << program;
  }
}

// GEMMs captured into a CUDA graph (seq 3 and 4) and launched three times with new inputs: the templates are
// marked and carry no tensors; each launch is an op of its own (seqs 5..10, in launch order) whose record is the
// template's and whose operands are the launch's; results are unchanged by the shim and `ttrace check` checks
// every launch. A bit flipped in the GemmEx output of every launch (the fault matches the captured call, which
// every launch replays) is found at each launch's op.
TEST(DriverCaptureTest, GraphLaunchesAreCapturedAsOps) {
  ScratchDir scratch;
  const Job plain = RunJob(scratch, "plain", TTRACE_DRIVER_WORKLOAD, 2, "", {}, "--graph 3");
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  const std::string traces = scratch / "traces";
  const Job traced = RunJob(scratch, "traced", TTRACE_DRIVER_WORKLOAD, 2, traces, {}, "--graph 3");
  ASSERT_EQ(traced.result.exit_code, 0) << traced.result.err;
  for (int r = 0; r < 2; ++r) {
    const std::string where = "rank " + std::to_string(r);
    const auto want = TensorsByKey(traced.dumps[r]);
    ASSERT_EQ(want.size(), TensorsByKey(plain.dumps[r]).size()) << where;
    for (const auto& [key, entry] : want)
      EXPECT_TRUE(TensorsByKey(plain.dumps[r]).at(key).payload == entry.payload) << where << " seq " << key.first;
    const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-" + std::to_string(r) + ".ttr");
    ExpectSameTensors(want, TensorsByKey(trace));
    std::map<uint64_t, uint64_t> launches;  // launch seq -> template seq
    std::set<uint64_t> templates;
    for (const DumpEntry& n : Notices(trace)) {
      const auto notice = n.As<format::NoticeRecord>();
      if (notice.code == static_cast<uint32_t>(format::NoticeCode::kGraphCaptured)) templates.insert(notice.seq);
      else if (notice.code == static_cast<uint32_t>(format::NoticeCode::kGraphReplay))
        launches[notice.seq] = notice.count;
      else
        ADD_FAILURE() << where << ": unexpected notice " << n.payload;
    }
    EXPECT_EQ(templates, (std::set<uint64_t>{3, 4})) << where;
    EXPECT_EQ(launches, (std::map<uint64_t, uint64_t>{{5, 3}, {6, 4}, {7, 3}, {8, 4}, {9, 3}, {10, 4}})) << where;
    const std::vector<format::GemmRecord> gemms = Gemms(trace);
    ASSERT_EQ(gemms.size(), 2u + 2u + 6u) << where;
    for (const format::GemmRecord& g : gemms) {
      if (g.seq < 3) continue;
      const format::GemmRecord& tmpl = gemms[2 + (g.seq - 3) % 2];  // seq 3 or 4, in record order
      EXPECT_EQ(g.api, tmpl.api) << where << " seq " << g.seq;
      EXPECT_EQ(g.c_ptr, tmpl.c_ptr) << where << " seq " << g.seq;
    }
  }
  auto set = analyzer::LoadTraceDir(traces);
  ASSERT_TRUE(set.ok()) << set.status();
  const analyzer::CheckReport report = analyzer::RunChecks(*set);
  ASSERT_TRUE(report.no_findings()) << report.findings()[0].message;
  EXPECT_EQ(report.summary().checked.at("gemm"), 2u * (2 + 6));
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);

  // GEMM call 3 is the captured GemmEx (calls 0, 1 before the graph, 2 the captured Sgemm).
  const std::string faulty = scratch / "faulty";
  const Job fault = RunJob(scratch, "fault", TTRACE_DRIVER_WORKLOAD, 2, faulty,
                           {{"SIMGPU_FAULT", "gemm:rank=0:call=3:elem=2:bit=29"}}, "--graph 3");
  ASSERT_EQ(fault.result.exit_code, 0) << fault.result.err;
  auto bad = analyzer::LoadTraceDir(faulty);
  ASSERT_TRUE(bad.ok()) << bad.status();
  const analyzer::CheckReport found = analyzer::RunChecks(*bad);
  std::set<uint64_t> seqs;
  for (const analyzer::Finding& f : found.findings()) {
    EXPECT_EQ(f.rank, 0);
    EXPECT_EQ(f.api, "cublasGemmEx");
    EXPECT_EQ(f.first.index, 2u);
    seqs.insert(f.seq);
  }
  EXPECT_EQ(seqs, (std::set<uint64_t>{6, 8, 10}));
}

}  // namespace
}  // namespace ttrace::shim::testing
