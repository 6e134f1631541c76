// The `ttrace` command line: exit codes, the terminal report, the JSON schema (parsed back with a strict JSON
// reader), `dump`, and clean failures on bad input: every truncation point and every single-byte corruption of
// a stream ends in exit 2 with one line naming the file, never a crash.
#include "analyzer/cli.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/json.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Encode;
using testing::StreamBuilder;

// ---- a strict little JSON reader, to check what we write ---------------------------------------------------
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  double number = 0;
  bool boolean = false;
  std::string str;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
  const Json& operator[](const std::string& k) const {
    static const Json missing;
    auto it = fields.find(k);
    return it == fields.end() ? missing : it->second;
  }
  bool has(const std::string& k) const { return fields.count(k) > 0; }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  bool Parse(Json* out) {
    if (!Value(out)) return false;
    Space();
    return i_ == s_.size();
  }

 private:
  void Space() {
    while (i_ < s_.size() && isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Lit(const char* w) {
    size_t n = strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool String(std::string* out) {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        const char e = s_[++i_];
        if (e == 'u') {
          if (i_ + 4 >= s_.size()) return false;
          out->push_back('?');
          i_ += 4;
        } else if (strchr("\"\\/bfnrt", e)) {
          out->push_back(e == 'n' ? '\n' : e);
        } else {
          return false;
        }
      } else {
        out->push_back(c);
      }
    }
    return false;
  }
  bool Value(Json* v) {
    Space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      v->kind = Json::kObject;
      ++i_;
      Space();
      if (s_[i_] == '}') return ++i_, true;
      while (true) {
        Space();
        std::string key;
        if (!String(&key)) return false;
        Space();
        if (s_[i_++] != ':') return false;
        if (v->fields.count(key)) return false;  // duplicate key
        if (!Value(&v->fields[key])) return false;
        Space();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        return s_[i_++] == '}';
      }
    }
    if (c == '[') {
      v->kind = Json::kArray;
      ++i_;
      Space();
      if (s_[i_] == ']') return ++i_, true;
      while (true) {
        v->items.emplace_back();
        if (!Value(&v->items.back())) return false;
        Space();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        return s_[i_++] == ']';
      }
    }
    if (c == '"') {
      v->kind = Json::kString;
      return String(&v->str);
    }
    if (Lit("null")) return true;
    if (Lit("true") || Lit("false")) {
      v->kind = Json::kBool;
      v->boolean = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u';
      return true;
    }
    size_t end = i_;
    while (end < s_.size() && strchr("+-0123456789.eE", s_[end])) ++end;
    if (end == i_) return false;
    v->kind = Json::kNumber;
    v->number = strtod(s_.substr(i_, end - i_).c_str(), nullptr);
    i_ = end;
    return true;
  }
  const std::string& s_;
  size_t i_ = 0;
};

// ---- helpers ------------------------------------------------------------------------------------------------
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

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A two-rank trace: 3 GEMMs per rank (1·x = x, exact) and one all-reduce; `bad_rank`'s GEMM seq 1 off by one.
std::string TwoRankTrace(int bad_rank = -1, size_t frame_bytes = 1 << 20) {
  std::string dir = testing::TempDir("cli");
  for (int r = 0; r < 2; ++r) {
    StreamBuilder w(dir + "/rank-" + std::to_string(r) + ".ttr", r, 2, "cli-job", frame_bytes);
    w.CommInit(77, r, 2);
    for (uint64_t seq = 0; seq < 3; ++seq) {
      w.Gemm(testing::GemmRec(seq, 2, 2, 1, DType::kF32, DType::kF32));
      w.Tensor(seq, TensorSlot::kA, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1, 2}));
      w.Tensor(seq, TensorSlot::kB, DType::kF32, 1, 2, 1, Encode(DType::kF32, {3, 4}));
      std::vector<double> c = {3, 6, 4, 8};
      if (r == bad_rank && seq == 1) c[2] = 5;
      w.Tensor(seq, TensorSlot::kCOut, DType::kF32, 2, 2, 1, Encode(DType::kF32, c));
    }
    w.Collective(testing::AllReduceRec(3, 77, 0, r, 2, DType::kF32, 2));
    w.Tensor(3, TensorSlot::kSend, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1.0 + r, 2}));
    w.Tensor(3, TensorSlot::kRecv, DType::kF32, 2, 1, 1, Encode(DType::kF32, {3, 4}));
  }
  return dir;
}

// ---- tests --------------------------------------------------------------------------------------------------
TEST(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Cli({"--help"}).rc, 0);
  EXPECT_NE(Cli({"--help"}).out.find("check DIR [--json FILE] [--html FILE] [--allow-incomplete]"), std::string::npos);
  EXPECT_NE(Cli({"--help"}).out.find("3 incomplete"), std::string::npos);
  EXPECT_EQ(Cli({}).rc, 2);
  EXPECT_EQ(Cli({"frobnicate"}).rc, 2);
  EXPECT_EQ(Cli({"check"}).rc, 2);
  EXPECT_EQ(Cli({"check", "a", "b"}).rc, 2);
  EXPECT_EQ(Cli({"check", "a", "--bogus"}).rc, 2);
  EXPECT_EQ(Cli({"check", "a", "--json"}).rc, 2);
  EXPECT_EQ(Cli({"dump", "a", "--json", "x"}).rc, 2);
  EXPECT_EQ(Cli({"check", "a", "--max-memory-mb"}).rc, 2);
  EXPECT_EQ(Cli({"check", "a", "--max-gemm-work", "0"}).rc, 2);
  EXPECT_EQ(Cli({"check", "a", "--gemm-full-16bit", "0"}).rc, 2);
  EXPECT_EQ(Cli({"check", "a", "--gemm-full-16bit"}).rc, 2);
  EXPECT_NE(Cli({"--help"}).out.find("--gemm-full-16bit N"), std::string::npos);
  EXPECT_NE(Cli({"--help"}).out.find("full-fp32 (the same verdicts"), std::string::npos);
  EXPECT_EQ(Cli({"dump", "a", "--allow-incomplete"}).rc, 2);
}

TEST(CliTest, DataErrorsExitTwoWithOneLine) {
  CliRun r = Cli({"check", "/nonexistent/dir"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "ttrace: error: /nonexistent/dir: No such file or directory\n");
  r = Cli({"check", testing::TempDir("none")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no trace streams (*.ttr)"), std::string::npos);
  std::string dir = TwoRankTrace();
  r = Cli({"check", dir, "--json", "/nonexistent/dir/report.json"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("cannot write /nonexistent/dir/report.json"), std::string::npos);
}

TEST(CliTest, CleanRunReportAndJson) {
  std::string dir = TwoRankTrace();
  const std::string json_path = dir + "/report.json";
  CliRun r = Cli({"check", dir, "--json", json_path});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict:     CLEAN"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checked:     8 ops (allreduce 2, gemm 6)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tightness:"), std::string::npos);
  Json j;
  const std::string text = ReadAll(json_path);
  ASSERT_TRUE(JsonParser(text).Parse(&j)) << text;
  EXPECT_EQ(j["verdict"].str, "clean");
  EXPECT_EQ(j["findings"].kind, Json::kArray);
  EXPECT_TRUE(j["findings"].items.empty());
  EXPECT_TRUE(j.has("first_divergence"));
  EXPECT_EQ(j["first_divergence"].kind, Json::kNull);
  const Json& s = j["summary"];
  EXPECT_EQ(s["ops"].number, 8);
  EXPECT_EQ(s["checked"]["gemm"].number, 6);
  EXPECT_EQ(s["checked"]["allreduce"].number, 2);
  EXPECT_EQ(s["streams"].number, 2);
  EXPECT_EQ(s["job"].str, "cli-job");
  EXPECT_EQ(s["tightness"].kind, Json::kObject);
}

TEST(CliTest, FindingsExitOneAndFollowTheSchema) {
  std::string dir = TwoRankTrace(/*bad_rank=*/1);
  const std::string json_path = dir + "/report.json";
  CliRun r = Cli({"check", dir, "--json=" + json_path});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict:     FINDINGS (1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first finding: rank 1 seq 1 cublasGemmEx [gemm.replay]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first violation: element 2 (row 0, col 1, batch 0): got 5, expected 4"), std::string::npos)
      << r.out;
  const std::string text = ReadAll(json_path);
  Json j;
  ASSERT_TRUE(JsonParser(text).Parse(&j)) << text;
  EXPECT_EQ(j["verdict"].str, "findings");
  ASSERT_EQ(j["findings"].items.size(), 1u);
  const Json& f = j["findings"].items[0];
  for (const char* key : {"check", "rank", "seq", "api", "message", "max_abs_err", "max_rel_err", "threshold"})
    EXPECT_TRUE(f.has(key)) << key;
  EXPECT_EQ(f["check"].str, "gemm.replay");
  EXPECT_EQ(f["rank"].number, 1);
  EXPECT_EQ(f["seq"].number, 1);
  EXPECT_EQ(f["api"].str, "cublasGemmEx");
  EXPECT_EQ(f["max_abs_err"].number, 1);
  EXPECT_EQ(f["max_rel_err"].number, 0.25);
  EXPECT_EQ(f["first_violation"]["col"].number, 1);
  EXPECT_GT(f["ratio"].number, 1e6);
  // Line tools find a finding by its (rank, seq) (tools/demo.sh does).
  EXPECT_NE(text.find("\"rank\": 1, \"seq\": 1,"), std::string::npos);
}

TEST(CliTest, JsonStringsAreEscaped) {
  EXPECT_EQ(JsonString("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(JsonString("\xce\xbc"), "\"\xce\xbc\"");    // valid UTF-8 kept
  EXPECT_EQ(JsonString("\xff"), "\"\\u00ff\"");          // invalid byte escaped
  // Not UTF-8 either (strict decoders reject them): overlong forms, surrogates, code points above U+10FFFF.
  EXPECT_EQ(JsonString("\xe0\x80\x80"), "\"\\u00e0\\u0080\\u0080\"");
  EXPECT_EQ(JsonString("\xf0\x80\x80\x80"), "\"\\u00f0\\u0080\\u0080\\u0080\"");
  EXPECT_EQ(JsonString("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");
  EXPECT_EQ(JsonString("\xf4\x90\x80\x80"), "\"\\u00f4\\u0090\\u0080\\u0080\"");
  EXPECT_EQ(JsonString("\xf8\x80\x80"), "\"\\u00f8\\u0080\\u0080\"");
  EXPECT_EQ(JsonString("\xed\x9f\xbf\xf4\x8f\xbf\xbf\xe0\xa0\x80"), "\"\xed\x9f\xbf\xf4\x8f\xbf\xbf\xe0\xa0\x80\"");
  EXPECT_EQ(JsonNumber(HUGE_VAL), "null");
  EXPECT_EQ(JsonNumber(0.1), "0.10000000000000001");
}

TEST(CliTest, DumpPrintsOneLinePerRecord) {
  std::string dir = TwoRankTrace();
  CliRun r = Cli({"dump", dir + "/rank-1.ttr"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  // header, comm init, 3 x (gemm + 3 tensors), all-reduce + 2 tensors, end
  ASSERT_EQ(all.size(), 1u + 1 + 3 * 4 + 3 + 1);
  EXPECT_EQ(all.back().rfind("end reason=exit signal=0 mode=full flags=0 ops=4 records=16 tensors=11", 0), 0u)
      << all.back();
  EXPECT_EQ(all[0].rfind("# rank-1.ttr: rank 1 of 2, job 'cli-job'", 0), 0u) << all[0];
  EXPECT_EQ(all[1].rfind("setup ncclCommInitRank status=0 comm=0x4d comm_rank=1 comm_size=2", 0), 0u) << all[1];
  EXPECT_EQ(all[2].rfind("seq=0 cublasGemmEx status=0 m=2 n=2 k=1 op=NN", 0), 0u) << all[2];
  EXPECT_EQ(all[3], "tensor seq=0 slot=A kind=full dtype=f32 shape=2x1x1 bytes=8");
  EXPECT_EQ(all[14].rfind("seq=3 ncclAllReduce status=0 comm=0x4d comm_rank=1 comm_size=2 index=0 op=sum", 0), 0u)
      << all[14];
  CliRun d = Cli({"dump", dir});
  EXPECT_EQ(d.rc, 0);
  EXPECT_NE(d.out.find("# rank-0.ttr"), std::string::npos);
  EXPECT_NE(d.out.find("# rank-1.ttr"), std::string::npos);
}

// `dump --rank R --seq S` goes through the stream's index: with frames of ~200 bytes the op's records lie in a
// few of the stream's frames, and only those are read; without the index (or with another stream's) the same
// lines come from a scan, and one note says why. `--manifest` lists the streams the writers recorded.
TEST(CliTest, DumpSeqSeeksThroughTheIndexAndFallsBackToAScan) {
  const std::string dir = TwoRankTrace(-1, /*frame_bytes=*/200);
  const CliRun all = Cli({"dump", dir + "/rank-1.ttr"});
  ASSERT_EQ(all.rc, 0) << all.err;
  std::vector<std::string> want;  // the scan's lines of seq 1
  {
    std::istringstream lines(all.out);
    std::string line;
    while (std::getline(lines, line))
      if (line.find(" seq=1 ") != std::string::npos || line.rfind("seq=1 ", 0) == 0) want.push_back(line);
  }
  ASSERT_EQ(want.size(), 4u) << all.out;  // the GEMM and its three tensors
  auto seq_lines = [](const std::string& out) {
    std::vector<std::string> v;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line))
      if (!line.empty() && line[0] != '#') v.push_back(line);
    return v;
  };
  CliRun r = Cli({"dump", dir, "--rank", "1", "--seq", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(seq_lines(r.out), want) << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("# rank-1.ttr: rank 1 of 2", 0), 0u) << r.out;
  size_t frames_read = 0, frames_total = 0;
  ASSERT_EQ(sscanf(r.out.substr(r.out.find("# seq 1: 4 records, read ")).c_str(),
                   "# seq 1: 4 records, read %zu of %zu frames (index)", &frames_read, &frames_total),
            2)
      << r.out;
  EXPECT_GE(frames_total, 6u);
  EXPECT_LE(frames_read, 3u) << "only the frames holding seq 1";
  // The same through the file, with its rank checked.
  EXPECT_EQ(seq_lines(Cli({"dump", dir + "/rank-1.ttr", "--seq", "1"}).out), want);
  EXPECT_EQ(Cli({"dump", dir + "/rank-1.ttr", "--rank", "0", "--seq", "1"}).rc, 2);
  EXPECT_EQ(Cli({"dump", dir, "--seq", "1"}).rc, 2) << "two streams: --rank needed";
  EXPECT_EQ(Cli({"dump", dir, "--rank", "5"}).rc, 2);
  r = Cli({"dump", dir, "--rank", "1", "--seq", "99"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("holds no record of seq 99"), std::string::npos) << r.err;

  // A stale index (rank 0's beside rank 1's stream), then none: the same lines, from a scan, with one note.
  const std::string index = dir + "/rank-1.ttr.idx";
  WriteAll(index, ReadAll(dir + "/rank-0.ttr.idx"));
  r = Cli({"dump", dir, "--rank", "1", "--seq", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(seq_lines(r.out), want);
  EXPECT_NE(r.err.find("ttrace: note: " + index + ": stale index"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("note", r.err.find("note") + 1), std::string::npos) << "said once: " << r.err;
  EXPECT_NE(r.out.find("frames (scan)"), std::string::npos) << r.out;
  unlink(index.c_str());
  r = Cli({"dump", dir, "--rank", "1", "--seq", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(seq_lines(r.out), want);
  EXPECT_NE(r.err.find("no index"), std::string::npos) << r.err;

  r = Cli({"dump", dir, "--manifest"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("rank-0.ttr closed rank=0 world=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank-1.ttr closed rank=1 world=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ops=4 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" job=cli-job tool=\"ttrace "), std::string::npos) << r.out;
  EXPECT_EQ(Cli({"dump", dir, "--manifest", "--seq", "1"}).rc, 2);
  EXPECT_EQ(Cli({"dump", dir + "/none", "--manifest"}).rc, 2);
}

// Cut a stream at every byte: inside the file header, exit 2 naming the file; after it, whatever frame the cut
// falls on, the end record is lost: incomplete (exit 3), naming the rank and where its stream ends, and the
// complete frames are still checked (--allow-incomplete accepts them: exit 0).
TEST(CliTest, EveryTruncationIsIncompleteOrFailsCleanly) {
  std::string dir = TwoRankTrace(-1, /*frame_bytes=*/200);
  const std::string path = dir + "/rank-1.ttr";
  const std::string whole = ReadAll(path);
  int boundaries = 0;
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    WriteAll(path, whole.substr(0, cut));
    CliRun r = Cli({"check", dir});
    if (cut < sizeof(format::FileHeader)) {
      EXPECT_EQ(r.rc, 2) << cut;
      EXPECT_NE(r.err.find("rank-1.ttr"), std::string::npos) << cut << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      continue;
    }
    EXPECT_EQ(r.rc, 3) << cut << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("verdict:     INCOMPLETE"), std::string::npos) << cut;
    EXPECT_NE(r.out.find("rank 1's stream ends "), std::string::npos) << cut << ": " << r.out;
    EXPECT_NE(r.out.find("without an end record"), std::string::npos) << cut << ": " << r.out;
    if (r.out.find("cut inside frame") == std::string::npos) ++boundaries;
    EXPECT_EQ(Cli({"check", dir, "--allow-incomplete"}).rc, 0) << cut;
  }
  EXPECT_GT(boundaries, 2);  // several frames
  WriteAll(path, whole);
  EXPECT_EQ(Cli({"check", dir}).rc, 0);
}

// Flip every byte of a stream: the checksums catch each one.
TEST(CliTest, EveryCorruptedByteFailsCleanly) {
  std::string dir = TwoRankTrace(-1, 200);
  const std::string path = dir + "/rank-0.ttr";
  const std::string whole = ReadAll(path);
  for (size_t i = 0; i < whole.size(); ++i) {
    std::string bad = whole;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    WriteAll(path, bad);
    CliRun r = Cli({"check", dir});
    EXPECT_EQ(r.rc, 2) << "byte " << i;
    EXPECT_NE(r.err.find("rank-0.ttr"), std::string::npos) << r.err;
    EXPECT_EQ(Cli({"dump", path}).rc, 2) << i;
  }
  WriteAll(path, "definitely not a trace stream, but longer than a file header........................"
                 "...................................................................");
  CliRun r = Cli({"check", dir});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("rank-0.ttr: not a ttrace stream"), std::string::npos) << r.err;
}

// The real binary, as scripts call it.
TEST(CliTest, BinaryExitCodes) {
  auto run = [](const std::string& args) {
    const std::string cmd = std::string(TTRACE_BINARY) + " " + args + " >/dev/null 2>&1";
    const int status = system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(run("--help"), 0);
  EXPECT_EQ(run("check " + TwoRankTrace()), 0);
  EXPECT_EQ(run("check " + TwoRankTrace(0)), 1);
  EXPECT_EQ(run("check /nonexistent"), 2);
  EXPECT_EQ(run("bogus"), 2);
}

}  // namespace
}  // namespace ttrace::analyzer
