// The verdict `ttrace check` gives a CI gate: clean only when every op was checked, every rank is present and
// every stream ends with its end record; otherwise incomplete (exit 3) with what is missing named, or findings
// (exit 1). And bounded work on crafted traces: tensors of no op are never decoded, a GEMM's replay is priced
// before it runs, out-of-budget memory is exit 2. Also: strings from a trace cannot reach the terminal raw, and a
// frame's record-count error names that frame.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/bf16_slices.h"
#include "analyzer/blas.h"
#include "analyzer/check.h"
#include "analyzer/cli.h"
#include "analyzer/graph_check.h"
#include "analyzer/test_util.h"
#include "store/crc32c.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Encode;
using testing::StreamBuilder;

struct CliRun {
  int rc;
  std::string out, err;
};

CliRun Cli(std::vector<std::string> args) {
  args.insert(args.begin(), "ttrace");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int rc = RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

// One rank's stream of `gemms` exact GEMMs (1·x), seq 0..gemms-1, every operand captured.
void ExactGemms(StreamBuilder& w, int gemms, int first_seq = 0) {
  for (int i = 0; i < gemms; ++i) {
    const uint64_t seq = static_cast<uint64_t>(first_seq + i);
    w.Gemm(testing::GemmRec(seq, 2, 2, 1, DType::kF32, DType::kF32));
    w.Tensor(seq, TensorSlot::kA, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1, 2}));
    w.Tensor(seq, TensorSlot::kB, DType::kF32, 1, 2, 1, Encode(DType::kF32, {3, 4}));
    w.Tensor(seq, TensorSlot::kCOut, DType::kF32, 2, 2, 1, Encode(DType::kF32, {3, 6, 4, 8}));
  }
}

std::string Rank(const std::string& dir, int r) { return dir + "/rank-" + std::to_string(r) + ".ttr"; }

TEST(VerdictTest, CompleteTraceIsCleanAndJsonSaysSo) {
  const std::string dir = testing::TempDir("verdict");
  for (int r = 0; r < 2; ++r) {
    StreamBuilder w(Rank(dir, r), r, 2);
    ExactGemms(w, 3);
  }
  CliRun c = Cli({"check", dir, "--json", dir + "/r.json"});
  EXPECT_EQ(c.rc, kExitClean) << c.out << c.err;
  EXPECT_NE(c.out.find("verdict:     CLEAN (every op checked)"), std::string::npos) << c.out;
  std::ifstream in(dir + "/r.json");
  const std::string json((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(json.find("\"verdict\": \"clean\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"incomplete\": []"), std::string::npos) << json;
}

// The gemm: line and the JSON name the OpenBLAS kernels the replays ran on (they set the check's speed), and say
// when OPENBLAS_CORETYPE chose them: the user's choice is kept (Nehalem: SSE only, runs on any x86-64).
TEST(VerdictTest, GemmLineNamesTheBlasKernelsAndWhetherTheUserChoseThem) {
  const std::string dir = testing::TempDir("blas_core");
  {
    StreamBuilder w(Rank(dir, 0), 0, 1);
    ExactGemms(w, 1);
  }
  auto run = [&](const std::string& env) {
    const std::string cmd = env + " " + TTRACE_BINARY + " check " + dir + " --json " + dir + "/r.json 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t got; p != nullptr && (got = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
    EXPECT_EQ(p != nullptr ? pclose(p) : -1, 0) << cmd << "\n" << out;
    std::ifstream in(dir + "/r.json");
    return std::make_pair(out, std::string((std::istreambuf_iterator<char>(in)), {}));
  };
  const auto [forced, forced_json] = run("env OPENBLAS_CORETYPE=Nehalem");
  EXPECT_NE(forced.find("bound gemm.deterministic, OpenBLAS kernels Nehalem (OPENBLAS_CORETYPE)\n"),
            std::string::npos) << forced;
  EXPECT_NE(forced_json.find("\"blas_core\": \"Nehalem (OPENBLAS_CORETYPE)\""), std::string::npos) << forced_json;
  const auto [own, own_json] = run("env -u OPENBLAS_CORETYPE");
  const size_t at = own.find("bound gemm.deterministic, OpenBLAS kernels ");
  ASSERT_NE(at, std::string::npos) << own;
  const std::string core = own.substr(at + 43, own.find('\n', at) - at - 43);
  EXPECT_FALSE(core.empty()) << own;
  EXPECT_EQ(core.find("OPENBLAS_CORETYPE"), std::string::npos) << own;
  EXPECT_NE(core, "unknown") << own;
  EXPECT_NE(own_json.find("\"blas_core\": \"" + core + "\""), std::string::npos) << own_json;
}

TEST(VerdictTest, HeaderOnlyStreamBesideACompleteRankIsIncomplete) {
  const std::string dir = testing::TempDir("verdict");
  {
    StreamBuilder w(Rank(dir, 0), 0, 2);
    w.CloseWithoutEnd();
  }
  {
    StreamBuilder w(Rank(dir, 1), 1, 2);
    ExactGemms(w, 3);
  }
  CliRun c = Cli({"check", dir, "--json", dir + "/r.json"});
  EXPECT_EQ(c.rc, kExitIncomplete) << c.out << c.err;
  EXPECT_NE(c.out.find("verdict:     INCOMPLETE"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("rank 0's stream ends before its first op, after 0 frames without an end record"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("checked:     3 ops"), std::string::npos) << "rank 1 is still checked\n" << c.out;
  std::ifstream in(dir + "/r.json");
  const std::string json((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(json.find("\"verdict\": \"incomplete\""), std::string::npos) << json;
  EXPECT_NE(json.find("rank 0's stream ends before its first op"), std::string::npos) << json;
  CliRun accepted = Cli({"check", dir, "--allow-incomplete"});
  EXPECT_EQ(accepted.rc, kExitClean);
  EXPECT_NE(accepted.out.find("verdict:     INCOMPLETE"), std::string::npos) << "the report still says so";
}

TEST(VerdictTest, StreamEndingMidRunNamesItsLastSeq) {
  const std::string dir = testing::TempDir("verdict");
  StreamBuilder w(Rank(dir, 0), 0, 1);
  ExactGemms(w, 42);
  w.CloseWithoutEnd();
  CliRun c = Cli({"check", dir});
  EXPECT_EQ(c.rc, kExitIncomplete) << c.out;
  EXPECT_NE(c.out.find("rank 0's stream ends at seq 41 (cublasGemmEx), after 1 frame without an end record"),
            std::string::npos)
      << c.out;
}

TEST(VerdictTest, MissingRanksDroppedTensorsAndLostRecordsAreNamed) {
  const std::string dir = testing::TempDir("verdict");
  {
    StreamBuilder w(Rank(dir, 0), 0, 3);
    ExactGemms(w, 2);
    // seq 2: its tensors were dropped (ring full).
    w.Gemm(testing::GemmRec(2, 2, 2, 1, DType::kF32, DType::kF32));
    format::NoticeRecord n{};
    n.code = static_cast<uint32_t>(format::NoticeCode::kPayloadDropped);
    n.seq = 2;
    n.count = 1;
    n.reason = static_cast<uint32_t>(format::DropReason::kRingFull);
    const std::string message = "payload dropped: the ring stayed full";
    n.message_bytes = static_cast<uint32_t>(message.size());
    w.Raw(static_cast<uint16_t>(format::RecordType::kNotice), std::string(reinterpret_cast<char*>(&n), sizeof n),
          message);
  }
  {
    StreamBuilder w(Rank(dir, 2), 2, 3);
    ExactGemms(w, 2);
  }
  CliRun c = Cli({"check", dir});
  EXPECT_EQ(c.rc, kExitIncomplete) << c.out;
  EXPECT_NE(c.out.find("1 of 3 ranks have no stream (1)"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("1 of 5 ops not checked: tensors dropped (ring full)"), std::string::npos) << c.out;
}

TEST(VerdictTest, OpsTheEndRecordCountsButTheStreamLacksAreNamed) {
  const std::string dir = testing::TempDir("verdict");
  {
    store::StreamIdentity id;
    id.rank = 0;
    id.world_size = 1;
    std::string error;
    auto writer = store::TraceWriter::Open(Rank(dir, 0), id, {}, &error);
    ASSERT_NE(writer, nullptr) << error;
    format::EndRecord e{};
    e.reason = static_cast<uint32_t>(format::EndReason::kSignal);
    e.signal = 15;
    e.mode = static_cast<uint32_t>(format::CaptureModeId::kMeta);
    e.ops = 3;
    e.records = 1;
    format::GemmRecord g = testing::GemmRec(0, 2, 2, 1, DType::kF32, DType::kF32);
    writer->Append(format::RecordType::kGemm, g);
    writer->Append(format::RecordType::kEnd, e);
    ASSERT_TRUE(writer->Close(&error)) << error;
  }
  CliRun c = Cli({"check", dir});
  EXPECT_EQ(c.rc, kExitIncomplete) << c.out;
  EXPECT_NE(c.out.find("rank 0: 2 of 3 ops have no call record"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("1 of 1 ops not checked: tensors not captured (TTRACE_MODE=meta)"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("rank 0's stream was closed when the process got SIGTERM"), std::string::npos) << c.out;
}

TEST(VerdictTest, NothingCheckedIsNeverClean) {
  const std::string dir = testing::TempDir("verdict");
  { StreamBuilder w(Rank(dir, 0), 0, 1); }
  CliRun c = Cli({"check", dir});
  EXPECT_EQ(c.rc, kExitIncomplete) << c.out;
  EXPECT_NE(c.out.find("the trace holds no ops: nothing was checked"), std::string::npos) << c.out;
}

TEST(VerdictTest, FindingsWinOverIncomplete) {
  const std::string dir = testing::TempDir("verdict");
  StreamBuilder w(Rank(dir, 0), 0, 2);
  w.Gemm(testing::GemmRec(0, 2, 2, 1, DType::kF32, DType::kF32));
  w.Tensor(0, TensorSlot::kA, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1, 2}));
  w.Tensor(0, TensorSlot::kB, DType::kF32, 1, 2, 1, Encode(DType::kF32, {3, 4}));
  w.Tensor(0, TensorSlot::kCOut, DType::kF32, 2, 2, 1, Encode(DType::kF32, {3, 6, 4, 9}));
  w.CloseWithoutEnd();
  CliRun c = Cli({"check", dir});
  EXPECT_EQ(c.rc, kExitFindings) << c.out;
  EXPECT_NE(c.out.find("also incomplete:"), std::string::npos) << c.out;
}

TEST(VerdictTest, TraceStringsReachTheTerminalEscaped) {
  const std::string dir = testing::TempDir("verdict");
  const std::string evil = "job\x1b]0;pwned\x07\x1b[2J";
  {
    StreamBuilder w(Rank(dir, 0), 0, 1, evil);
    ExactGemms(w, 1);
  }
  CliRun c = Cli({"check", dir});
  EXPECT_EQ(c.rc, kExitClean) << c.out;
  EXPECT_EQ(c.out.find('\x1b'), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find('\x07'), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("job 'job\\x1b]0;pwned\\x07\\x1b[2J'"), std::string::npos) << c.out;
  CliRun d = Cli({"dump", Rank(dir, 0)});
  EXPECT_EQ(d.out.find('\x1b'), std::string::npos) << d.out;
  EXPECT_EQ(Printable("a\\b\x7f\xc3"), "a\\\\b\\x7f\\xc3");
}

// Rewrites frame 0's record_count (with a valid header checksum): the error names frame 0, not the next one.
TEST(VerdictTest, RecordCountErrorNamesItsFrame) {
  const std::string dir = testing::TempDir("verdict");
  {
    StreamBuilder w(Rank(dir, 0), 0, 1, "job", /*frame_bytes=*/64);
    ExactGemms(w, 2);
  }
  std::fstream f(Rank(dir, 0), std::ios::in | std::ios::out | std::ios::binary);
  format::FrameHeader fh;
  f.seekg(sizeof(format::FileHeader));
  f.read(reinterpret_cast<char*>(&fh), sizeof fh);
  ASSERT_EQ(fh.frame_index, 0u);
  fh.record_count += 1;
  fh.header_crc = store::Crc32c(&fh, offsetof(format::FrameHeader, header_crc));
  f.seekp(sizeof(format::FileHeader));
  f.write(reinterpret_cast<const char*>(&fh), sizeof fh);
  f.close();
  CliRun c = Cli({"check", dir});
  EXPECT_EQ(c.rc, kExitError);
  EXPECT_NE(c.err.find("corrupt stream at frame 0 (byte 128): frame holds"), std::string::npos) << c.err;
}

// Runs the ttrace binary under peak_rss (peak_rss_main.cc: a forked test process would report its own resident size
// as the child's peak); returns its exit code, wall seconds and peak resident memory (MiB).
struct Measured {
  int rc;
  double seconds;
  double peak_mib;
};
// `address_space_mib` > 0 limits the child's address space (RLIMIT_AS); stderr goes to `err_path` when given.
Measured RunBinary(const std::vector<std::string>& args, uint64_t address_space_mib = 0,
                   const std::string& err_path = "") {
  const auto start = std::chrono::steady_clock::now();
  const std::string peak_path = testing::TempDir("peak_rss") + ".kib";
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(PEAK_RSS_BINARY), const_cast<char*>(peak_path.c_str()),
                            const_cast<char*>("--"), const_cast<char*>(TTRACE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    if (!err_path.empty()) freopen(err_path.c_str(), "w", stderr);
    if (address_space_mib > 0) {
      const struct rlimit limit = {address_space_mib << 20, address_space_mib << 20};
      setrlimit(RLIMIT_AS, &limit);
    }
    execv(PEAK_RSS_BINARY, argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(peak_path);
  double kib = -1;
  EXPECT_TRUE(in >> kib) << "peak_rss wrote no peak to " << peak_path;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), s, kib / 1024.0};
}

// One GEMM with m = n = 1, k = batch = 2^20 whose A and B are shared by every batch (stride 0): 2^40
// multiply-adds if every batch were replayed, 2^21 when the one distinct batch is. Checked, within seconds.
TEST(BudgetTest, BroadcastGemmIsReplayedThroughItsDistinctBatches) {
  const std::string dir = testing::TempDir("budget");
  const int64_t k = int64_t{1} << 20, batch = int64_t{1} << 20;
  {
    StreamBuilder w(Rank(dir, 0), 0, 1);
    format::GemmRecord g = testing::GemmRec(0, 1, 1, k, DType::kF32, DType::kF32);
    g.api = static_cast<uint16_t>(format::ApiId::kCublasGemmStridedBatchedEx);
    g.batch_count = batch;
    g.stride_a = g.stride_b = 0;
    g.stride_c = 1;
    w.Gemm(g);
    w.Tensor(0, TensorSlot::kA, DType::kF32, 1, k, 1, Encode(DType::kF32, std::vector<double>(k, 1.0)));
    w.Tensor(0, TensorSlot::kB, DType::kF32, k, 1, 1, Encode(DType::kF32, std::vector<double>(k, 1.0)));
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, 1, 1, batch,
             Encode(DType::kF32, std::vector<double>(batch, static_cast<double>(k))));
  }
  const Measured m = RunBinary({"check", dir});
  EXPECT_EQ(m.rc, kExitClean);
  EXPECT_LT(m.seconds, 20.0);
  EXPECT_LT(m.peak_mib, 512.0);
  printf("[ measured ] broadcast GEMM m=n=1 k=batch=2^20: exit %d, %.2f s, peak %.0f MiB\n", m.rc, m.seconds,
         m.peak_mib);
  EXPECT_EQ(GemmReplayWork(1, 1, k, batch, true, false, /*shared=*/true), uint64_t{2} << 20);
  EXPECT_EQ(GemmReplayWork(1, 1, k, batch, true, false, /*shared=*/false), (uint64_t{1} << 40) + (uint64_t{1} << 20));
  EXPECT_EQ(GemmReplayWork(int64_t{1} << 40, int64_t{1} << 40, 2, 2, true, false, false), UINT64_MAX);
}

// A GEMM whose full replay costs more than --max-gemm-work is not checked under --gemm-method full, with the
// reason; nothing is decoded. Under auto (the default) it is verified by projection instead.
TEST(BudgetTest, GemmOverTheWorkBudgetIsNotChecked) {
  const std::string dir = testing::TempDir("budget");
  const int64_t n = 512;
  {
    StreamBuilder w(Rank(dir, 0), 0, 1);
    w.Gemm(testing::GemmRec(0, n, n, n, DType::kF32, DType::kF32));
    const std::string zeros = Encode(DType::kF32, std::vector<double>(n * n, 0.0));
    w.Tensor(0, TensorSlot::kA, DType::kF32, n, n, 1, zeros);
    w.Tensor(0, TensorSlot::kB, DType::kF32, n, n, 1, zeros);
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, n, n, 1, zeros);
  }
  CliRun c = Cli({"check", dir, "--max-gemm-work", "1000000", "--gemm-method", "full"});
  EXPECT_EQ(c.rc, kExitIncomplete) << c.out;
  EXPECT_NE(c.out.find("1 of 1 ops not checked: replay over the work budget"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("costs 134,479,872 multiply-adds, over the budget of 1,000,000"), std::string::npos)
      << c.out;
  EXPECT_EQ(Cli({"check", dir}).rc, kExitClean);
  c = Cli({"check", dir, "--max-gemm-work", "1000000"});
  EXPECT_EQ(c.rc, kExitClean) << c.out;
  EXPECT_NE(c.out.find("gemm:        projection 1 "), std::string::npos) << c.out;
  c = Cli({"check", dir, "--gemm-method=full", "--bound=probabilistic"});
  EXPECT_EQ(c.rc, kExitClean) << c.out;
  EXPECT_NE(c.out.find("full replay 1 "), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("bound gemm.probabilistic"), std::string::npos) << c.out;
  EXPECT_EQ(Cli({"check", dir, "--gemm-method", "fast"}).rc, kExitError);
  EXPECT_EQ(Cli({"check", dir, "--bound"}).rc, kExitError);
}

// --gemm-method full-fp32 on a BF16 GEMM with one element's exponent flipped: the finding full replay gives (same
// element, expected value, count), named by its method; the gemm: line names the method. FP32 operands do not fit
// the slices: replayed in FP64 ("full replay"). The slices' FP32 multiply-adds count a quarter of --max-gemm-work.
TEST(BudgetTest, FullFp32FindsWhatFullReplayFinds) {
  const std::string dir = testing::TempDir("fp32slices"), f32_dir = testing::TempDir("fp32slices_f32");
  const int64_t n = 48;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (DType dt : {DType::kBF16, DType::kF32}) {
    std::vector<double> a(n * n), b(n * n), c(n * n);
    for (auto& v : a) v = testing::RoundTo(dt, u(rng));
    for (auto& v : b) v = testing::RoundTo(dt, u(rng));
    MatMul(false, false, n, n, n, a.data(), n, b.data(), n, c.data(), n);
    for (auto& v : c) v = testing::RoundTo(dt, v);
    std::string c_bytes = Encode(dt, c);
    testing::FlipBit(&c_bytes, dt, 777, dt == DType::kBF16 ? 8 : 24);  // an exponent bit
    StreamBuilder w(Rank(dt == DType::kBF16 ? dir : f32_dir, 0), 0, 1);
    w.Gemm(testing::GemmRec(0, n, n, n, dt, dt));
    w.Tensor(0, TensorSlot::kA, dt, n, n, 1, Encode(dt, a));
    w.Tensor(0, TensorSlot::kB, dt, n, n, 1, Encode(dt, b));
    w.Tensor(0, TensorSlot::kCOut, dt, n, n, 1, c_bytes);
  }
  const CliRun full = Cli({"check", dir, "--gemm-method", "full"});
  const CliRun slices = Cli({"check", dir, "--gemm-method", "full-fp32"});
  EXPECT_EQ(full.rc, kExitFindings) << full.out;
  EXPECT_EQ(slices.rc, kExitFindings) << slices.out;
  EXPECT_NE(slices.out.find("gemm:        full replay in FP32 slices 1 "), std::string::npos) << slices.out;
  EXPECT_NE(slices.out.find("method full replay in FP32 slices ("), std::string::npos) << slices.out;
  // The line says whether the slices ran on the vdpbf16ps kernel (this CPU's AVX512-BF16) or on OpenBLAS.
  EXPECT_EQ(slices.out.find("max|C|; 1 on vdpbf16ps)") != std::string::npos, Bf16DotAvailable()) << slices.out;
  auto line = [](const std::string& out, const std::string& start) {
    const size_t at = out.find(start);
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(line(slices.out, "  first violation: element 777 "), line(full.out, "  first violation: element 777 "));
  EXPECT_NE(full.out.find("  first violation: element 777 "), std::string::npos) << full.out;
  EXPECT_EQ(line(slices.out, "  max abs err"), line(full.out, "  max abs err"));
  const CliRun f32 = Cli({"check", f32_dir, "--gemm-method", "full-fp32"});
  EXPECT_EQ(f32.rc, kExitFindings) << f32.out;
  EXPECT_NE(f32.out.find("gemm:        full replay 1 "), std::string::npos) << f32.out;
  // 48^3 + 48^2 = 112,896 multiply-adds: over a budget of 30,000 for FP64, within it as FP32 slices (a quarter).
  EXPECT_EQ(Cli({"check", dir, "--gemm-method", "full", "--max-gemm-work", "30000"}).rc, kExitIncomplete);
  EXPECT_EQ(Cli({"check", dir, "--gemm-method", "full-fp32", "--max-gemm-work", "30000"}).rc, kExitFindings);
}

// 24 tensors of 200 MiB that belong to no op, in a small stream (zeros compress): skipped without being
// decoded, in seconds and bounded memory (one frame at a time), instead of 4.8 GB of payload held.
TEST(BudgetTest, TensorsOfNoOpAreNeverDecoded) {
  const std::string dir = testing::TempDir("budget");
  const int64_t elems = int64_t{200} << 18;  // 200 MiB of FP32
  {
    StreamBuilder w(Rank(dir, 0), 0, 1, "job", /*frame_bytes=*/1);
    const std::string zeros(static_cast<size_t>(elems) * 4, '\0');
    for (int i = 0; i < 24; ++i)
      w.Tensor(1000 + static_cast<uint64_t>(i), TensorSlot::kCOut, DType::kF32, elems, 1, 1, zeros);
  }
  struct stat st {};
  ASSERT_EQ(stat(Rank(dir, 0).c_str(), &st), 0);
  const Measured m = RunBinary({"check", dir});
  EXPECT_EQ(m.rc, kExitIncomplete) << "no op: nothing checked";
  EXPECT_LT(m.seconds, 30.0);
  EXPECT_LT(m.peak_mib, 800.0) << "one 200 MiB frame and its compressed bytes at a time";
  printf("[ measured ] %lld-byte stream of 24 x 200 MiB orphan tensors: exit %d, %.2f s, peak %.0f MiB\n",
         static_cast<long long>(st.st_size), m.rc, m.seconds, m.peak_mib);
  CliRun c = Cli({"check", dir});
  EXPECT_NE(c.out.find("24 tensors belong to no op record (skipped, not decoded)"), std::string::npos) << c.out;
}

// Streaming: a trace far larger than --memory-limit is checked op by op within it, with the same report as an
// unlimited check (same findings, same tightness), at a fraction of the peak memory; an op that alone needs more
// than the limit is not checked, with the reason, and the rest still is.
TEST(BudgetTest, TraceFarLargerThanTheMemoryLimitIsStreamed) {
  const std::string dir = testing::TempDir("budget");
  const int64_t n = 384;
  const int gemms = 24;
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> u(-1, 1);
  uint64_t payload = 0;
  {
    StreamBuilder w(Rank(dir, 0), 0, 1, "job", /*frame_bytes=*/1 << 20);
    std::vector<double> a(static_cast<size_t>(n * n)), b(a.size()), c(a.size());
    for (int g = 0; g < gemms; ++g) {
      for (auto& v : a) v = testing::RoundTo(DType::kF32, u(rng));
      for (auto& v : b) v = testing::RoundTo(DType::kF32, u(rng));
      MatMul(false, false, n, n, n, a.data(), n, b.data(), n, c.data(), n);
      for (auto& v : c) v = testing::RoundTo(DType::kF32, v);
      if (g == 17) c[1234] += 1;
      const auto seq = static_cast<uint64_t>(g);
      w.Gemm(testing::GemmRec(seq, n, n, n, DType::kF32, DType::kF32));
      w.Tensor(seq, TensorSlot::kA, DType::kF32, n, n, 1, Encode(DType::kF32, a), true);
      w.Tensor(seq, TensorSlot::kB, DType::kF32, n, n, 1, Encode(DType::kF32, b), true);
      w.Tensor(seq, TensorSlot::kCOut, DType::kF32, n, n, 1, Encode(DType::kF32, c), true);
      payload += 3 * static_cast<uint64_t>(n * n) * 4;
    }
  }
  // Each op needs about 3 x 0.56 MiB of payload + 16 bytes per element: 9.4 MiB; the trace 40 MiB of payload.
  const CliRun full = Cli({"check", dir, "--threads", "2"});
  const CliRun limited = Cli({"check", dir, "--threads", "2", "--memory-limit", "20M"});
  EXPECT_EQ(full.rc, kExitFindings) << full.out;
  EXPECT_EQ(limited.out, full.out);
  EXPECT_EQ(limited.rc, full.rc);
  EXPECT_NE(full.out.find("rank 0 seq 17"), std::string::npos) << full.out;
  const Measured big = RunBinary({"check", dir, "--threads", "2"});
  const Measured small = RunBinary({"check", dir, "--threads", "2", "--memory-limit", "20M"});
  printf("[ measured ] %llu MiB of payload in %d GEMMs: peak %.0f MiB unlimited, %.0f MiB at --memory-limit 20M "
         "(%.2f s, %.2f s)\n",
         static_cast<unsigned long long>(payload >> 20), gemms, big.peak_mib, small.peak_mib, big.seconds,
         small.seconds);
  EXPECT_EQ(small.rc, kExitFindings);
  EXPECT_LT(small.peak_mib, 0.6 * big.peak_mib) << "the whole trace is not held";
  EXPECT_LT(small.peak_mib, 20 + 20.0) << "the limit, plus 20 MiB for the process itself";
  const CliRun tiny = Cli({"check", dir, "--memory-limit", "8M"});
  EXPECT_EQ(tiny.rc, kExitIncomplete) << tiny.out;
  EXPECT_NE(tiny.out.find("24 of 24 ops not checked: over the memory limit"), std::string::npos) << tiny.out;
  EXPECT_NE(tiny.out.find("over the memory limit of 8 MiB (--memory-limit): not checked"), std::string::npos)
      << tiny.out;
  EXPECT_EQ(Cli({"check", dir, "--memory-limit", "20X"}).rc, kExitError);
  EXPECT_EQ(Cli({"check", dir, "--memory-limit=1G"}).rc, kExitFindings);
}

// A cuDNN composite attention whose whole-tensor FP64 evaluation would need several times the memory limit (2M
// scores, a dozen score-sized intermediates) is checked within it, in slices (graph_attention.cc), its peak
// resident memory under the limit; at a limit below one slice's working set it is not checked, with the reason
// (OpCost counts the slice, not only the payloads).
TEST(BudgetTest, AttentionGraphCheckedWithinTheMemoryLimit) {
  const std::string dir = testing::TempDir("budget_attention");
  const int64_t b = 1, h = 2, s = 1024, d = 32;
  const Op op = testing::CausalAttentionOp(0, b, h, s, d, 3);
  {
    StreamBuilder w(Rank(dir, 0), 0, 1, "job", 1 << 20);
    w.Graph(op);
  }
  const uint64_t limit_mib = 40;
  const uint64_t whole = AttentionWorkingSet(op, 0), sliced = AttentionWorkingSet(op, kAttentionSliceScores);
  printf("[ measured ] attention b=%lld h=%lld s=%lld d=%lld: working set %.1f MiB whole, %.1f MiB sliced\n",
         static_cast<long long>(b), static_cast<long long>(h), static_cast<long long>(s), static_cast<long long>(d),
         whole / 1048576.0, sliced / 1048576.0);
  EXPECT_GT(whole, 4 * (limit_mib << 20)) << "whole-tensor evaluation would not fit the limit";
  const std::string limit = std::to_string(limit_mib) + "M";
  fflush(stdout);
  const Measured m = RunBinary({"check", dir, "--threads", "1", "--memory-limit", limit});
  printf("[ measured ] peak %.0f MiB at --memory-limit %s (%.2f s)\n", m.peak_mib, limit.c_str(), m.seconds);
  EXPECT_EQ(m.rc, kExitClean) << "checked, clean";
  EXPECT_LT(m.peak_mib, static_cast<double>(limit_mib));
  // 4.7 MiB of payloads and their FP64 copies fit 12 MiB; with one slice's intermediates (10 MiB) they do not.
  const CliRun tiny = Cli({"check", dir, "--memory-limit", "12M"});
  EXPECT_EQ(tiny.rc, kExitIncomplete) << tiny.out;
  EXPECT_NE(tiny.out.find("1 of 1 ops not checked: over the memory limit"), std::string::npos) << tiny.out;
}

// What `ttrace check` estimates a cuDNN graph needs (OpCost, said when over the limit) covers what checking it
// holds: conv.fused (CSBR, 0.5M outputs: its virtual intermediates and the convolution's reference, several times
// its payloads) and the composite attention (one slice), each checked clean at a limit just above the estimate, its
// peak under the estimate plus 20 MiB for the process itself.
TEST(BudgetTest, GraphCostCoversItsPeak) {
  for (const bool conv : {true, false}) {
    const std::string dir = testing::TempDir("budget_graph");
    {
      StreamBuilder w(Rank(dir, 0), 0, 1, "job", 1 << 20);
      w.Graph(conv ? testing::CsbrOp(0, 8, 16, 64, 64, 16) : testing::CausalAttentionOp(0, 1, 2, 1024, 32, 3));
    }
    const CliRun probe = Cli({"check", dir, "--memory-limit", "1K"});
    const size_t at = probe.out.find("needs about ");
    ASSERT_NE(at, std::string::npos) << probe.out;
    const long estimate_mib = std::stol(probe.out.substr(at + 12));
    fflush(stdout);
    const Measured m = RunBinary({"check", dir, "--threads", "1", "--memory-limit", std::to_string(estimate_mib + 1) + "M"});
    printf("[ measured ] %s: estimated %ld MiB, peak %.0f MiB (%.2f s)\n", conv ? "conv.fused" : "attention",
           estimate_mib, m.peak_mib, m.seconds);
    EXPECT_EQ(m.rc, kExitClean) << "checked, clean";
    EXPECT_LT(m.peak_mib, static_cast<double>(estimate_mib) + 20);
  }
}

// Out of memory (here: a 300 MiB address space for four 64 MiB tensors of ops) is exit 2 with one clear line,
// never an abort.
TEST(BudgetTest, OutOfMemoryIsExitTwo) {
  const std::string dir = testing::TempDir("budget");
  const int64_t elems = int64_t{16} << 20;
  {
    StreamBuilder w(Rank(dir, 0), 0, 1);
    const std::string zeros(static_cast<size_t>(elems) * 4, '\0');
    for (int i = 0; i < 4; ++i) {
      w.Gemm(testing::GemmRec(static_cast<uint64_t>(i), elems, 1, 1, DType::kF32, DType::kF32));
      w.Tensor(static_cast<uint64_t>(i), TensorSlot::kCOut, DType::kF32, elems, 1, 1, zeros);
    }
  }
  const Measured m = RunBinary({"check", dir}, /*address_space_mib=*/300, dir + "/err.txt");
  EXPECT_EQ(m.rc, kExitError);
  std::ifstream in(dir + "/err.txt");
  const std::string err((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(err.rfind("ttrace: error: out of memory", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
}  // namespace ttrace::analyzer
