// "Recorded once": cuBLAS runs its GEMMs through cuBLASLt on real systems. With a stand-in libcublas.so.13 whose
// cublasSgemm_v2 calls cublasLtMatmul through its ordinary reference (nested_cublas.cc), which the loader binds
// to the shim's export, the inner call passes through the shim's guard: the trace holds the Sgemm once and no
// cublasLtMatmul for it, while the program's own, direct cublasLtMatmul is recorded as the next op.
#include <map>
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
const std::string kLibs = std::string(TTRACE_NESTED_DIR) + ":" + TTRACE_SIMGPU_LIBDIR;
const std::string kProgram = TTRACE_NESTED_WORKLOAD;

TEST(ShimNestedTest, CublasCallingCublasLtIsRecordedOnce) {
  const RunResult plain = RunProgram({kProgram}, {{"LD_LIBRARY_PATH", kLibs}});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "same 1\n");

  ScratchDir dir;
  const RunResult traced = RunProgram(
      {kProgram}, {{"LD_LIBRARY_PATH", kLibs}, {"LD_PRELOAD", kShim}, {"TTRACE_DIR", dir.path()}, {"LD_DEBUG", "bindings"}});
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  // The stand-in's inner call did reach the shim (the premise of the test).
  bool inner_bound_to_shim = false;
  for (size_t at = traced.err.find("cublasLtMatmul'"); at != std::string::npos;
       at = traced.err.find("cublasLtMatmul'", at + 1)) {
    const std::string line = traced.err.substr(traced.err.rfind('\n', at) + 1, at - traced.err.rfind('\n', at));
    if (line.find("nested/libcublas.so.13") != std::string::npos && line.find("libttrace.so") != std::string::npos)
      inner_bound_to_shim = true;
  }
  EXPECT_TRUE(inner_bound_to_shim) << "the stand-in's cublasLtMatmul was not bound to the shim";

  const std::vector<std::string> files = ListStreams(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const std::vector<DumpEntry> trace = ReadTrace(dir / files[0]);
  std::vector<std::pair<format::RecordType, uint64_t>> ops;  // (type, seq)
  for (const DumpEntry& e : trace) {
    if (e.type == format::RecordType::kGemm) ops.emplace_back(e.type, e.As<format::GemmRecord>().seq);
    if (e.type == format::RecordType::kLtMatmul) ops.emplace_back(e.type, e.As<format::LtMatmulRecord>().seq);
  }
  const std::vector<std::pair<format::RecordType, uint64_t>> want = {{format::RecordType::kGemm, 0},
                                                                      {format::RecordType::kLtMatmul, 1}};
  EXPECT_EQ(ops, want) << "one Sgemm (its inner cublasLtMatmul not recorded), then the direct cublasLtMatmul";
  EXPECT_TRUE(Notices(trace).empty());
  auto set = analyzer::LoadTraceDir(dir.path());
  ASSERT_TRUE(set.ok()) << set.status();
  const analyzer::CheckReport report = analyzer::RunChecks(*set);
  EXPECT_TRUE(report.no_findings());
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
}

}  // namespace
}  // namespace ttrace::shim::testing
