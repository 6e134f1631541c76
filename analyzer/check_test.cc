// RunChecks across threads: the report (terminal text, JSON and HTML) is byte for byte the same at any thread count, on a
// trace that exercises every part of it (clean GEMMs of many shapes and both methods, corrupted ones, ops without
// their tensors, an over-budget op, warnings, an all-reduce); the progress callback counts every op and byte once,
// in order; FormatProgress's line.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/cli.h"
#include "analyzer/html_report.h"
#include "analyzer/json.h"
#include "analyzer/progress.h"
#include "analyzer/test_util.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Encode;
using testing::RoundTo;

// Two ranks of 40 GEMMs each (random shapes up to 48 x 48 x 300, FP32 or BF16, the FP64 product rounded to the
// output type: within every bound), a few corrupted, a few without their output tensor or with a tensor of the
// wrong size, then twelve all-reduces, one wrong.
std::string MixedTrace() {
  const std::string dir = testing::TempDir("check_threads");
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int r = 0; r < 2; ++r) {
    testing::StreamBuilder w(dir + "/rank-" + std::to_string(r) + ".ttr", r, 2, "threads-job");
    w.CommInit(77, r, 2);
    for (uint64_t seq = 0; seq < 40; ++seq) {
      const DType dt = seq % 3 == 0 ? DType::kBF16 : DType::kF32;
      const int64_t m = 1 + static_cast<int64_t>(rng() % 48), n = 1 + static_cast<int64_t>(rng() % 48);
      const int64_t k = 1 + static_cast<int64_t>(rng() % 300);
      std::vector<double> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n));
      for (auto& v : a) v = RoundTo(dt, u(rng));
      for (auto& v : b) v = RoundTo(dt, u(rng));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) {
          double s = 0;
          for (int64_t l = 0; l < k; ++l) s += a[i + l * m] * b[l + j * k];
          c[i + j * m] = RoundTo(dt, s);
        }
      if (seq % 11 == 5) c[static_cast<size_t>(rng() % c.size())] += 0.5 + r;  // corrupted
      w.Gemm(testing::GemmRec(seq, m, n, k, dt, dt));
      w.Tensor(seq, TensorSlot::kA, dt, m, k, 1, Encode(dt, a));
      w.Tensor(seq, TensorSlot::kB, dt, k, n, 1, Encode(dt, b));
      if (seq % 13 == 7) continue;  // output not captured
      if (seq % 17 == 9) c.pop_back();  // wrong size: a warning, not checked
      w.Tensor(seq, TensorSlot::kCOut, dt, m, n, 1, Encode(dt, c));
    }
    // Twelve all-reduces (units checked on the worker threads), the eighth wrong on rank 1.
    for (uint64_t c = 0; c < 12; ++c) {
      const uint64_t seq = 40 + c;
      const double x = static_cast<double>(c);
      w.Collective(testing::AllReduceRec(seq, 77, c, r, 2, DType::kF32, 2));
      w.Tensor(seq, TensorSlot::kSend, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1.0 + r + x, 2}));
      w.Tensor(seq, TensorSlot::kRecv, DType::kF32, 2, 1, 1, Encode(DType::kF32, {3 + 2 * x + (c == 7 && r == 1), 4}));
    }
  }
  return dir;
}

std::string Text(const CheckReport& report) {
  std::ostringstream out;
  PrintReport(report, out, 1000);
  return out.str() + "\n" + ReportToJson(report) + "\n" + ReportToHtml(report);
}

TEST(CheckThreadsTest, ReportIsTheSameAtAnyThreadCount) {
  const std::string dir = MixedTrace();
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckOptions o;
  o.gemm.projection_above = 20000;  // all three methods (16-bit outputs above it: FP32 slices)
  o.max_gemm_work = 2'000'000;      // and an op over the budget under --gemm-method full (below)
  o.threads = 1;
  const CheckReport one = RunChecks(*set, {}, o);
  const std::string expected = Text(one);
  ASSERT_GE(one.findings().size(), 6u) << expected;
  ASSERT_GT(one.summary().not_checked_total(), 0u) << expected;
  ASSERT_FALSE(one.summary().warnings.empty()) << expected;
  ASSERT_EQ(one.summary().gemm_methods.size(), 3u) << expected;
  ASSERT_EQ(one.timeline().ranks().size(), 2u);
  ASSERT_FALSE(one.summary().not_checked_ops.empty());
  ASSERT_EQ(std::count_if(one.findings().begin(), one.findings().end(), [](const Finding& f) { return f.seq == 47; }),
            1) << expected;  // the wrong all-reduce
  for (int threads : {2, 3, 8, 64}) {
    o.threads = threads;
    EXPECT_EQ(Text(RunChecks(*set, {}, o)), expected) << threads << " threads";
  }
  o.gemm.method = GemmMethod::kFull;
  o.max_gemm_work = 100'000;
  o.threads = 1;
  const std::string full = Text(RunChecks(*set, {}, o));
  o.threads = 5;
  EXPECT_EQ(Text(RunChecks(*set, {}, o)), full);

  // Through the CLI: stdout and the JSON file.
  auto cli = [&](const std::string& threads, const std::string& json) {
    std::vector<std::string> args = {"ttrace", "check", dir, "--threads", threads, "--json", json, "--html",
                                     json + ".html"};
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int rc = RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
    std::ifstream in(json, std::ios::binary), html(json + ".html", std::ios::binary);
    return std::to_string(rc) + out.str() + std::string(std::istreambuf_iterator<char>(in), {}) +
           std::string(std::istreambuf_iterator<char>(html), {});
  };
  const std::string cli_one = cli("1", dir + "/1.json");
  EXPECT_NE(cli_one.find("<svg id=\"heatmap\""), std::string::npos);
  EXPECT_EQ(cli_one, cli("2", dir + "/2.json"));
}

TEST(CheckThreadsTest, ProgressCountsEveryOpAndByteOnceInOrder) {
  auto set = LoadTraceDir(MixedTrace());
  ASSERT_TRUE(set.ok()) << set.status();
  for (int threads : {1, 3}) {
    CheckOptions o;
    o.threads = threads;
    std::vector<CheckCounts> seen;
    RunChecks(*set, [&](const CheckCounts& c) { seen.push_back(c); }, o);
    ASSERT_FALSE(seen.empty());
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_GE(seen[i].ops_done, seen[i - 1].ops_done);
      EXPECT_GE(seen[i].bytes_done, seen[i - 1].bytes_done);
    }
    EXPECT_EQ(seen.back().ops_done, seen.back().ops_total);
    EXPECT_EQ(seen.back().ops_total, 104u);
    EXPECT_EQ(seen.back().bytes_done, seen.back().bytes_total);
    EXPECT_GT(seen.back().bytes_total, 100'000u);
  }
}

TEST(ProgressTest, LineHasOpsBytesRateAndEta) {
  EXPECT_EQ(FormatProgress(1234, 5000, 1'200'000'000, 4'800'000'000, 4),
            "ttrace: [#####...............] 1,234 of 5,000 ops, 1.2 GB of 4.8 GB, 300.0 MB/s, ETA 12 s");
  EXPECT_EQ(FormatProgress(10, 40, 0, 0, 2), "ttrace: [#####...............] 10 of 40 ops, 5 ops/s, ETA 6 s");
  EXPECT_EQ(FormatProgress(0, 40, 0, 1000, 0), "ttrace: [....................] 0 of 40 ops, 0 B of 1.0 kB");
  EXPECT_EQ(FormatProgress(1, 100, 1, 100, 1), "ttrace: [....................] 1 of 100 ops, 1 B of 100 B, 1 B/s, ETA 1 min 39 s");
  // Off when disabled or within the delay: nothing is written (the test's stderr is not a terminal either way).
  Progress quiet(false);
  quiet.Update("x", true);
  Progress delayed(true, std::chrono::milliseconds(60'000));
  delayed.Update("x", true);
  delayed.Clear();
}

}  // namespace
}  // namespace ttrace::analyzer
