// libttrace.so's dlsym (dlsym_interposer.cc) under a program that reaches cuBLAS only through
// dlopen("libcublas.so.13", RTLD_LOCAL) + dlsym(handle, ...) (shim_dlopen_workload), with glibc's current and
// older dlsym: its GEMMs are recorded and their operands captured equal to the program's data, its results are
// bitwise those of a run without the shim, `ttrace check` is clean, and the program's own RTLD_NEXT interposer
// still finds the next cudaMalloc (it aborts otherwise).
#include <cstdlib>
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

using format::TensorSlot;

const std::string kShim = TTRACE_SHIM_LIB;
const std::string kSimgpu = TTRACE_SIMGPU_LIBDIR;
const std::string kProgram = TTRACE_DLOPEN_WORKLOAD;
const std::string kInterposerDir = TTRACE_INTERPOSER_DIR;

RunResult RunDlopen(const std::string& out, const std::string& flag, const std::string& trace_dir) {
  std::map<std::string, std::string> env = {{"LD_LIBRARY_PATH", kInterposerDir + ":" + kSimgpu}};
  if (!trace_dir.empty()) {
    env["LD_PRELOAD"] = kShim;
    env["TTRACE_DIR"] = trace_dir;
  }
  std::vector<std::string> argv = {kProgram, out};
  if (!flag.empty()) argv.push_back(flag);
  return RunProgram(argv, env);
}

void ExpectPayload(const std::map<TensorKey, DumpEntry>& tensors, uint64_t seq, TensorSlot slot,
                   const std::string& file, const std::string& where) {
  auto it = tensors.find({seq, static_cast<uint8_t>(slot)});
  ASSERT_NE(it, tensors.end()) << where << ": seq " << seq << " slot " << int(slot) << " not captured";
  EXPECT_TRUE(it->second.payload == ReadFile(file)) << where << ": seq " << seq << " slot " << int(slot);
}

TEST(ShimDlsymTest, LookupsInARtldLocalHandleReachTheShim) {
  for (const std::string flag : {"", "--old-dlsym"}) {
    const std::string where = flag.empty() ? "dlsym@@GLIBC_2.34" : "dlsym@GLIBC_2.2.5";
    ScratchDir scratch;
    const std::string plain = scratch / "plain", traced = scratch / "traced", traces = scratch / "traces";
    ASSERT_EQ(system(("mkdir -p " + plain + " " + traced).c_str()), 0);
    const RunResult p = RunDlopen(plain, flag, "");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const RunResult t = RunDlopen(traced, flag, traces);
    ASSERT_EQ(t.exit_code, 0) << where << ": " << t.err;
    EXPECT_TRUE(t.err.empty()) << where << ": " << t.err;
    EXPECT_EQ(t.out, p.out) << where << ": the program's interposer saw other calls";
    EXPECT_NE(p.out.find("interposer_calls 4"), std::string::npos) << p.out;
    for (const char* c : {"c1.bin", "c2.bin"})
      EXPECT_TRUE(ReadFile(traced + "/" + c) == ReadFile(plain + "/" + c)) << where << ": " << c << " differs";

    const std::vector<std::string> files = ListStreams(traces);
    ASSERT_EQ(files.size(), 1u) << where;
    const std::vector<DumpEntry> trace = ReadTrace(traces + "/" + files[0]);
    std::vector<uint16_t> apis;
    for (const DumpEntry& e : trace)
      if (e.type == format::RecordType::kGemm) apis.push_back(e.As<format::GemmRecord>().api);
    EXPECT_EQ(apis, (std::vector<uint16_t>{static_cast<uint16_t>(format::ApiId::kCublasSgemm),
                                           static_cast<uint16_t>(format::ApiId::kCublasGemmEx)}))
        << where;
    const auto tensors = TensorsByKey(trace);
    EXPECT_EQ(tensors.size(), 7u) << where;  // Sgemm: A, B, C after; GemmEx (beta 0.5): A, B, C before and after
    ExpectPayload(tensors, 0, TensorSlot::kA, traced + "/a.bin", where);
    ExpectPayload(tensors, 0, TensorSlot::kB, traced + "/b.bin", where);
    ExpectPayload(tensors, 0, TensorSlot::kCOut, traced + "/c1.bin", where);
    ExpectPayload(tensors, 1, TensorSlot::kCIn, traced + "/c0.bin", where);
    ExpectPayload(tensors, 1, TensorSlot::kCOut, traced + "/c2.bin", where);
    auto set = analyzer::LoadTraceDir(traces);
    ASSERT_TRUE(set.ok()) << set.status();
    const analyzer::CheckReport report = analyzer::RunChecks(*set);
    EXPECT_TRUE(report.no_findings()) << where;
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << where;
  }
}

}  // namespace
}  // namespace ttrace::shim::testing
