// ttrace export on a synthetic two-rank trace: per rank two GEMMs on two streams (FP32, then BF16 inputs), rank 1's
// first output with one element corrupted. What must hold: the Perfetto file is valid JSON (a strict parser) with
// one process per rank, one thread per stream, each op a slice at its call time relative to the trace's first
// call, lasting until the next call on its stream, the corrupted op red with its finding and an instant event
// marking it, the others not; every captured tensor is a .npy file whose header says its type, order and shape
// and whose data are the captured bytes (BF16 widened exactly to f32); --rank and --seq select; the CLI refuses
// what it cannot do, with exit status 2.
#include "analyzer/export.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/cli.h"
#include "analyzer/test_json.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Json;

constexpr int64_t kM = 4, kN = 3, kK = 5;

struct Written {
  std::string dir;
  std::vector<double> a_bf16;  // rank 1, seq 1: A's values
};

std::vector<double> Product(const std::vector<double>& a, const std::vector<double>& b, DType out) {
  std::vector<double> c(kM * kN);
  for (int64_t j = 0; j < kN; ++j)
    for (int64_t i = 0; i < kM; ++i) {
      double s = 0;
      for (int64_t p = 0; p < kK; ++p) s += a[static_cast<size_t>(i + p * kM)] * b[static_cast<size_t>(p + j * kK)];
      c[static_cast<size_t>(i + j * kM)] = testing::RoundTo(out, s);
    }
  return c;
}

Written WriteTrace() {
  Written w;
  w.dir = testing::TempDir("export");
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int rank = 0; rank < 2; ++rank) {
    testing::StreamBuilder s(w.dir + "/rank-" + std::to_string(rank) + ".ttr", rank, 2);
    for (uint64_t seq = 0; seq < 2; ++seq) {
      const DType in = seq == 0 ? DType::kF32 : DType::kBF16;
      std::vector<double> a(kM * kK), b(kK * kN);
      for (double& x : a) x = testing::RoundTo(in, u(rng));
      for (double& x : b) x = testing::RoundTo(in, u(rng));
      format::GemmRecord g = testing::GemmRec(seq, kM, kN, kK, in, DType::kF32);
      g.stream = seq == 0 ? 0 : 0x5000;
      g.t_ns = 1'000'000 + 10'000 * static_cast<uint64_t>(rank) + 3'000 * seq;
      s.Gemm(g);
      s.Tensor(seq, TensorSlot::kA, in, kM, kK, 1, testing::Encode(in, a));
      s.Tensor(seq, TensorSlot::kB, in, kK, kN, 1, testing::Encode(in, b));
      std::string c = testing::Encode(DType::kF32, Product(a, b, DType::kF32));
      if (rank == 1 && seq == 0) testing::FlipBit(&c, DType::kF32, 5, 30);
      s.Tensor(seq, TensorSlot::kCOut, DType::kF32, kM, kN, 1, c);
      if (rank == 1 && seq == 1) w.a_bf16 = a;
    }
  }
  return w;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ExportTest, PerfettoTimelineIsValidJsonWithTheFindingMarked) {
  const Written w = WriteTrace();
  auto set = LoadTraceDir(w.dir);
  ASSERT_TRUE(set.ok()) << set.status();
  const std::string text = PerfettoJson(*set, nullptr);
  Json doc;
  std::string error;
  ASSERT_TRUE(testing::JsonParser::Parse(text, &doc, &error)) << error << "\n" << text;

  // Through the CLI, which checks the trace first.
  const std::string file = w.dir + "/trace.json";
  std::ostringstream out, err;
  const char* argv[] = {"ttrace", "export", w.dir.c_str(), "--perfetto", file.c_str()};
  ASSERT_EQ(RunCli(5, argv, out, err), kExitClean) << err.str();
  EXPECT_NE(out.str().find("1 finding"), std::string::npos) << out.str();
  doc = Json();
  ASSERT_TRUE(testing::JsonParser::Parse(ReadFile(file), &doc, &error)) << error;
  ASSERT_EQ(doc["traceEvents"].type, Json::kArray);

  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::vector<const Json*> slices, instants;
  for (const Json& e : doc["traceEvents"].array) {
    const std::string ph = e["ph"].string;
    const int pid = static_cast<int>(e["pid"].number);
    if (ph == "M" && e["name"].string == "process_name") process_names[pid] = e["args"]["name"].string;
    if (ph == "M" && e["name"].string == "thread_name")
      thread_names[{pid, static_cast<int>(e["tid"].number)}] = e["args"]["name"].string;
    if (ph == "X") slices.push_back(&e);
    if (ph == "i") instants.push_back(&e);
  }
  EXPECT_EQ(process_names, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  EXPECT_EQ(thread_names.size(), 4u);  // two streams per rank
  EXPECT_EQ(thread_names[std::make_pair(1, 2)], "stream 0x5000");
  ASSERT_EQ(slices.size(), 4u);
  for (const Json* e : slices) {
    const int rank = static_cast<int>((*e)["pid"].number);
    const uint64_t seq = static_cast<uint64_t>((*e)["args"]["seq"].number);
    SCOPED_TRACE(absl::StrCat("rank ", rank, " seq ", seq));
    EXPECT_EQ((*e)["name"].string, "cublasGemmEx");
    EXPECT_EQ((*e)["args"]["kind"].string, "gemm");
    EXPECT_EQ((*e)["args"]["m"].number, kM);
    EXPECT_EQ((*e)["args"]["a_type"].string, seq == 0 ? "CUDA_R_32F" : "CUDA_R_16BF");
    EXPECT_EQ((*e)["tid"].number, seq + 1);  // each seq on its own stream
    // Microseconds from the trace's first call (rank 0 seq 0 at 1 ms).
    EXPECT_DOUBLE_EQ((*e)["ts"].number, 10.0 * rank + 3.0 * static_cast<double>(seq));
    EXPECT_DOUBLE_EQ((*e)["dur"].number, 1.0);  // alone on its stream: the last call's nominal 1 us
    const bool bad = rank == 1 && seq == 0;
    EXPECT_EQ((*e).has("cname"), bad);
    EXPECT_EQ((*e)["args"].has("findings"), bad);
    if (bad) {
      EXPECT_EQ((*e)["cname"].string, "terrible");
      ASSERT_EQ((*e)["args"]["findings"].array.size(), 1u);
      EXPECT_EQ((*e)["args"]["findings"].array[0].string.rfind("gemm.replay: ", 0), 0u)
          << (*e)["args"]["findings"].array[0].string;
    }
  }
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ((*instants[0])["name"].string, "finding: gemm.replay");
  EXPECT_EQ((*instants[0])["pid"].number, 1);
  EXPECT_EQ((*instants[0])["args"]["seq"].number, 0);
}

TEST(ExportTest, SlicesLastUntilTheNextCallOnTheirStream) {
  const std::string dir = testing::TempDir("export-gaps");
  {
    testing::StreamBuilder s(dir + "/rank-0.ttr", 0, 1);
    for (uint64_t seq = 0; seq < 3; ++seq) {
      format::GemmRecord g = testing::GemmRec(seq, kM, kN, kK, DType::kF32, DType::kF32);
      g.t_ns = 5'000 + 2'500 * seq * seq;  // 5000, 7500, 15000 ns
      s.Gemm(g);
    }
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  Json doc;
  std::string error;
  ASSERT_TRUE(testing::JsonParser::Parse(PerfettoJson(*set, nullptr), &doc, &error)) << error;
  std::vector<std::pair<double, double>> got;
  for (const Json& e : doc["traceEvents"].array)
    if (e["ph"].string == "X") got.emplace_back(e["ts"].number, e["dur"].number);
  EXPECT_EQ(got, (std::vector<std::pair<double, double>>{{0, 2.5}, {2.5, 7.5}, {10, 1}}));
}

struct Npy {
  std::string descr, shape;
  bool fortran = false;
  size_t data_offset = 0;
  std::string data;
};

Npy ParseNpy(const std::string& bytes) {
  Npy n;
  EXPECT_GE(bytes.size(), 10u);
  if (bytes.size() < 10) return n;
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t len = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
  const std::string header = bytes.substr(10, len);
  EXPECT_EQ(header.back(), '\n');
  n.data_offset = 10 + len;
  EXPECT_EQ(n.data_offset % 64, 0u);
  auto field = [&](const std::string& key) {
    const size_t at = header.find("'" + key + "': ");
    if (at == std::string::npos) return std::string();
    const size_t from = at + key.size() + 4;
    const size_t to = header[from] == '(' ? header.find(')', from) + 1 : header.find(',', from);
    return header.substr(from, to - from);
  };
  n.descr = field("descr");
  n.fortran = field("fortran_order") == "True";
  n.shape = field("shape");
  n.data = bytes.substr(n.data_offset);
  return n;
}

TEST(ExportTest, NpyFilesHoldEveryCapturedTensor) {
  const Written w = WriteTrace();
  const std::string out_dir = w.dir + "/npy";
  std::ostringstream out, err;
  const char* argv[] = {"ttrace", "export", w.dir.c_str(), "--npy", out_dir.c_str()};
  ASSERT_EQ(RunCli(5, argv, out, err), kExitClean) << err.str();
  EXPECT_NE(out.str().find("wrote 12 .npy files"), std::string::npos) << out.str();

  auto set = LoadTraceDir(w.dir);
  ASSERT_TRUE(set.ok());
  // FP32 A of rank 0 seq 0: the captured bytes themselves, shape (m, k), column-major.
  const Npy a = ParseNpy(ReadFile(out_dir + "/rank0/seq0-cublasGemmEx-A.npy"));
  EXPECT_EQ(a.descr, "'<f4'");
  EXPECT_TRUE(a.fortran);
  EXPECT_EQ(a.shape, "(4, 5)");
  EXPECT_EQ(a.data, set->ranks[0].ops[0].tensor(TensorSlot::kA)->data);
  const Npy c = ParseNpy(ReadFile(out_dir + "/rank1/seq0-cublasGemmEx-C_out.npy"));
  EXPECT_EQ(c.shape, "(4, 3)");
  EXPECT_EQ(c.data, set->ranks[1].ops[0].tensor(TensorSlot::kCOut)->data);  // the corrupted output, as captured
  // BF16 A of rank 1 seq 1: widened to f32, value for value.
  const Npy b = ParseNpy(ReadFile(out_dir + "/rank1/seq1-cublasGemmEx-A.npy"));
  EXPECT_EQ(b.descr, "'<f4'");
  ASSERT_EQ(b.data.size(), w.a_bf16.size() * 4);
  for (size_t i = 0; i < w.a_bf16.size(); ++i) {
    float v;
    memcpy(&v, b.data.data() + 4 * i, 4);
    EXPECT_EQ(static_cast<double>(v), w.a_bf16[i]) << i;
  }
}

TEST(ExportTest, RankAndSeqSelectTheTensors) {
  const Written w = WriteTrace();
  auto set = LoadTraceDir(w.dir);
  ASSERT_TRUE(set.ok());
  const std::string dir = w.dir + "/sel";
  auto n = ExportNpy(*set, dir, 1, 1);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 3u);  // A, B, C_out of rank 1 seq 1
  EXPECT_FALSE(ReadFile(dir + "/rank1/seq1-cublasGemmEx-B.npy").empty());
  EXPECT_TRUE(ReadFile(dir + "/rank1/seq0-cublasGemmEx-B.npy").empty());
  EXPECT_TRUE(ReadFile(dir + "/rank0/seq1-cublasGemmEx-B.npy").empty());
}

TEST(ExportTest, UsageAndDataErrors) {
  const Written w = WriteTrace();
  auto run = [](std::vector<const char*> args, std::string* err_text) {
    std::ostringstream out, err;
    const int rc = RunCli(static_cast<int>(args.size()), args.data(), out, err);
    *err_text = err.str();
    return rc;
  };
  std::string e;
  EXPECT_EQ(run({"ttrace", "export", w.dir.c_str()}, &e), kExitError);
  EXPECT_NE(e.find("nothing to export"), std::string::npos) << e;
  EXPECT_EQ(run({"ttrace", "export", w.dir.c_str(), "--perfetto", "/dev/null", "--rank", "1"}, &e), kExitError);
  EXPECT_NE(e.find("--rank and --seq select tensors for --npy"), std::string::npos) << e;
  EXPECT_EQ(run({"ttrace", "export", w.dir.c_str(), "--npy", "x", "--seq", "-1"}, &e), kExitError);
  EXPECT_EQ(run({"ttrace", "export", "/nonexistent-dir", "--npy", "x"}, &e), kExitError);
  EXPECT_NE(e.find("ttrace: error: "), std::string::npos) << e;
  EXPECT_EQ(run({"ttrace", "export", w.dir.c_str(), "--perfetto", "/nonexistent-dir/t.json"}, &e), kExitError);
  EXPECT_NE(e.find("cannot write /nonexistent-dir/t.json"), std::string::npos) << e;
}

}  // namespace
}  // namespace ttrace::analyzer
