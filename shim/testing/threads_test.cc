// Several threads calling cuBLAS at once under libttrace.so (shim_threads_workload on simgpu: each thread its own
// handle and stream, chains of Sgemm and GemmEx): the program's results are bitwise those of a run without the
// shim in every mode; every call is recorded once, with seqs 0, 1, 2, ... in stream order across threads and each
// thread's calls in its own order; in full mode every operand is captured and `ttrace check` is clean.
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "shim/testing/process.h"
#include "shim/testing/trace_compare.h"
#include "ttrace/format.h"

namespace ttrace::shim::testing {
namespace {

const std::string kShim = TTRACE_SHIM_LIB;
const std::string kSimgpu = TTRACE_SIMGPU_LIBDIR;
const std::string kProgram = TTRACE_THREADS_WORKLOAD;
constexpr int kThreads = 4, kGemms = 150;

struct WorkloadRun {
  RunResult result;
  std::map<uint64_t, std::string> hash_by_handle;  // the program's final-output hash per thread's handle
};

WorkloadRun RunWorkload(std::map<std::string, std::string> env) {
  env["LD_LIBRARY_PATH"] = kSimgpu;
  WorkloadRun run;
  run.result = RunProgram({kProgram, "--threads", std::to_string(kThreads), "--gemms", std::to_string(kGemms)}, env);
  std::istringstream in(run.result.out);
  std::string word, hash;
  int t, n;
  uint64_t handle;
  while (in >> word >> t >> word >> handle >> word >> n >> word >> hash) run.hash_by_handle[handle] = hash;
  return run;
}

// The program's output lines with the handles left out (they differ between runs).
std::vector<std::string> Hashes(const WorkloadRun& run) {
  std::vector<std::string> out;
  std::istringstream in(run.result.out);
  for (std::string line; std::getline(in, line);) out.push_back(line.substr(0, line.find(" handle")) +
                                                                 line.substr(line.find(" gemms")));
  return out;
}

// Seqs dense and in order; per handle, the calls alternate Sgemm, GemmEx as the program issued them.
void ExpectCallsInOrder(const std::vector<DumpEntry>& trace, const WorkloadRun& run, const std::string& where) {
  std::map<uint64_t, int> calls_by_handle;
  uint64_t next_seq = 0;
  for (const DumpEntry& e : trace) {
    if (e.type != format::RecordType::kGemm) continue;
    const auto g = e.As<format::GemmRecord>();
    ASSERT_EQ(g.seq, next_seq++) << where;
    ASSERT_EQ(g.status, 0) << where;
    ASSERT_TRUE(run.hash_by_handle.count(g.handle)) << where << ": handle " << g.handle << " is no thread's";
    const int i = calls_by_handle[g.handle]++;
    EXPECT_EQ(g.api, static_cast<uint16_t>(i % 2 == 0 ? format::ApiId::kCublasSgemm : format::ApiId::kCublasGemmEx))
        << where << " seq " << g.seq << ": thread's call " << i << " out of its order";
  }
  EXPECT_EQ(next_seq, static_cast<uint64_t>(kThreads * kGemms)) << where;
  EXPECT_EQ(calls_by_handle.size(), static_cast<size_t>(kThreads)) << where;
}

TEST(ShimThreadsTest, ConcurrentCallersAreRecordedInOrderAndUnchanged) {
  const WorkloadRun plain = RunWorkload({});
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  ASSERT_EQ(plain.hash_by_handle.size(), static_cast<size_t>(kThreads)) << plain.result.out;
  for (const std::string mode : {"off", "meta", "full"}) {
    ScratchDir dir;
    std::map<std::string, std::string> env = {{"LD_PRELOAD", kShim}, {"TTRACE_DIR", dir.path()}};
    if (mode == "off")
      env["TTRACE_DISABLE"] = "1";
    else
      env["TTRACE_MODE"] = mode;
    const WorkloadRun shimmed = RunWorkload(env);
    ASSERT_EQ(shimmed.result.exit_code, 0) << mode << ": " << shimmed.result.err;
    EXPECT_TRUE(shimmed.result.err.empty()) << mode << ": " << shimmed.result.err;
    EXPECT_EQ(Hashes(shimmed), Hashes(plain)) << mode << ": results differ with the shim";
    const std::vector<std::string> files = ListStreams(dir.path());
    if (mode == "off") {
      EXPECT_TRUE(files.empty());
      continue;
    }
    ASSERT_EQ(files.size(), 1u) << mode;
    const std::vector<DumpEntry> trace = ReadTrace(dir / files[0]);
    EXPECT_TRUE(Notices(trace).empty()) << mode << ": " << Notices(trace)[0].payload;
    ExpectCallsInOrder(trace, shimmed, mode);
    if (mode == "meta") {
      EXPECT_TRUE(Select(trace, true).empty());
      continue;
    }
    // A, B, C before (beta != 0 for GemmEx only) and C after.
    EXPECT_EQ(Select(trace, true).size(), static_cast<size_t>(kThreads * kGemms / 2 * (3 + 4)));
    auto set = analyzer::LoadTraceDir(dir.path());
    ASSERT_TRUE(set.ok()) << set.status();
    const analyzer::CheckReport report = analyzer::RunChecks(*set);
    ASSERT_TRUE(report.no_findings()) << report.findings()[0].message;
    EXPECT_EQ(report.summary().checked.at("gemm"), static_cast<uint64_t>(kThreads * kGemms));
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
  }
}

}  // namespace
}  // namespace ttrace::shim::testing
