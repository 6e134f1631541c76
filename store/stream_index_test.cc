// The store around the streams: each stream's index (random access by seq) and the directory's manifest, for
// streams closed cleanly, cut at every byte, written by a process killed with SIGKILL, and with indexes that are
// missing, stale, lagging or corrupt (the lookup must then scan and say so, and find the same records).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"
#include "store/crc32c.h"
#include "store/manifest.h"
#include "store/stream_file.h"
#include "store/stream_index.h"
#include "store/trace_reader.h"
#include "store/trace_writer.h"

namespace ttrace {
namespace {

using format::RecordType;
using store::RecordView;
using store::TraceReader;

std::string TempDir(const std::string& name) { return ttrace::test_support::TestScratchPath(name); }

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

store::StreamIdentity Identity(int rank) {
  store::StreamIdentity id;
  id.rank = rank;
  id.world_size = 4;
  id.pid = 1000 + static_cast<uint32_t>(rank);
  id.start_unix_ns = 1700000000000000000ull + static_cast<uint64_t>(rank);
  id.job = "job-idx";
  id.host = "host-b";
  return id;
}

// Op `i`: a GEMM record, a notice about it every 5th op, and its output tensor written `lag` ops later (as the
// shim writes tensors when their copies complete), so one seq's records spread over frames.
void AppendOps(store::TraceWriter* w, int first, int n, int lag = 3) {
  auto tensor = [&](int i) {
    std::vector<float> data(static_cast<size_t>(i % 5 + 1), static_cast<float>(i));
    format::TensorRecord t{};
    t.seq = static_cast<uint64_t>(i);
    t.slot = static_cast<uint8_t>(format::TensorSlot::kCOut);
    t.dtype = static_cast<uint8_t>(format::DType::kF32);
    t.rows = static_cast<int64_t>(data.size());
    t.cols = t.batch = 1;
    t.payload_bytes = data.size() * sizeof(float);
    ASSERT_TRUE(w->Append(RecordType::kTensor, t, data.data(), t.payload_bytes));
  };
  for (int i = first; i < first + n; ++i) {
    format::GemmRecord g{};
    g.seq = static_cast<uint64_t>(i);
    g.m = i + 1;
    ASSERT_TRUE(w->Append(RecordType::kGemm, g));
    if (i % 5 == 0) {
      format::NoticeRecord nr{};
      nr.code = 1;
      nr.seq = static_cast<uint64_t>(i);
      nr.message_bytes = 2;
      ASSERT_TRUE(w->Append(RecordType::kNotice, nr, "hi", 2));
    }
    if (i - lag >= first) tensor(i - lag);
  }
  for (int i = std::max(first, first + n - lag); i < first + n; ++i) tensor(i);
}

std::string WriteStream(const std::string& path, int rank, int ops, size_t frame_bytes, bool end = true,
                        uint64_t later = 0) {
  store::WriterOptions opt;
  opt.frame_bytes = frame_bytes;
  std::string err;
  store::StreamIdentity id = Identity(rank);
  id.start_unix_ns += later;
  auto w = store::TraceWriter::Open(path, id, opt, &err);
  EXPECT_NE(w, nullptr) << err;
  AppendOps(w.get(), 0, ops);
  if (end) {
    format::EndRecord e{};
    e.reason = 1;
    e.ops = static_cast<uint64_t>(ops);
    e.payloads_dropped = 7;
    e.dropped[1] = 5;
    e.dropped[2] = 2;
    EXPECT_TRUE(w->Append(RecordType::kEnd, e));
  }
  EXPECT_TRUE(w->Close(&err)) << err;
  return path;
}

// What a full scan finds for `seq`: (type, body, payload) of each record, in stream order.
std::vector<std::string> ScanSeq(const std::string& path, uint64_t seq, bool allow_truncated = false) {
  store::ReaderOptions ro;
  ro.allow_truncated = allow_truncated;
  auto reader = TraceReader::Open(path, ro);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> out;
  RecordView r;
  while (true) {
    auto more = (*reader)->Next(&r);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    if (store::RecordSeq(r.type, r.body.data(), r.body.size()) == seq)
      out.push_back(std::to_string(static_cast<int>(r.type)) + ":" + std::string(r.body) + std::string(r.payload));
  }
  return out;
}

std::vector<std::string> Flatten(const store::SeqRecords& s) {
  std::vector<std::string> out;
  for (const auto& r : s.records)
    out.push_back(std::to_string(static_cast<int>(r.type)) + ":" + r.body + r.payload);
  return out;
}

int Frames(const std::string& path) {
  auto reader = TraceReader::Open(path);
  RecordView r;
  while (true) {
    auto more = (*reader)->Next(&r);
    if (!more.ok() || !*more) break;
  }
  return static_cast<int>((*reader)->frames_read());
}

TEST(StreamIndex, LookupReadsOnlyTheFramesOfTheSeq) {
  const std::string dir = TempDir("lookup");
  const std::string path = WriteStream(dir + "/rank-1.ttr", 1, 2000, 2048);
  const int frames = Frames(path);
  ASSERT_GT(frames, 50);
  auto index = store::LoadIndex(path, (*TraceReader::Open(path))->header(), ReadFile(path).size());
  EXPECT_EQ(index.problem, "");
  ASSERT_EQ(static_cast<int>(index.entries.size()), frames);
  for (uint64_t seq : {0ull, 1ull, 5ull, 999ull, 1500ull, 1997ull, 1999ull}) {
    auto found = store::ReadSeq(path, seq);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_TRUE(found->used_index);
    EXPECT_EQ(found->index_problem, "");
    EXPECT_EQ(Flatten(*found), ScanSeq(path, seq)) << "seq " << seq;
    // The GEMM, its tensor (3 ops later) and for every 5th op a notice.
    EXPECT_EQ(found->records.size(), seq % 5 == 0 ? 3u : 2u) << seq;
    EXPECT_LE(found->frames_read, 3u) << "seq " << seq << " read " << found->frames_read << " of " << frames;
    EXPECT_EQ(static_cast<int>(found->frames_total), frames);
  }
  auto none = store::ReadSeq(path, 5000);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->records.empty());
  EXPECT_EQ(none->frames_read, 0u);
}

TEST(StreamIndex, MissingStaleOrCorruptIndexFallsBackToScanningAndSaysWhy) {
  const std::string dir = TempDir("fallback");
  const std::string path = WriteStream(dir + "/rank-0.ttr", 0, 600, 1024);
  const std::vector<char> index = ReadFile(store::IndexPath(path));
  const int frames = Frames(path);
  const std::vector<std::string> want = ScanSeq(path, 321);
  ASSERT_EQ(want.size(), 2u);
  auto lookup = [&](const std::string& expect_problem, bool expect_index) {
    auto found = store::ReadSeq(path, 321);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(Flatten(*found), want) << expect_problem;
    EXPECT_NE(found->index_problem.find(expect_problem), std::string::npos)
        << "want '" << expect_problem << "', got '" << found->index_problem << "'";
    EXPECT_EQ(found->used_index, expect_index) << expect_problem;
    if (!expect_index) EXPECT_EQ(static_cast<int>(found->frames_read), frames) << expect_problem;
  };

  unlink(store::IndexPath(path).c_str());
  lookup("no index", false);

  // The index of another stream written under the same name (an earlier run).
  const std::string other = WriteStream(dir + "/other/rank-0.ttr", 0, 600, 1024, true, /*later=*/1000);
  WriteFile(store::IndexPath(path), ReadFile(store::IndexPath(other)));
  lookup("stale index", false);

  std::vector<char> bad = index;
  bad[3] ^= 1;
  WriteFile(store::IndexPath(path), bad);
  lookup("not an intact index", false);

  // An entry's checksum broken in the middle: the entries before it are used, the rest is scanned.
  const size_t entry = sizeof(format::IndexHeader) + 10 * sizeof(format::IndexEntry);
  bad = index;
  bad[entry + 9] ^= 4;
  WriteFile(store::IndexPath(path), bad);
  lookup("index entry 10: checksum mismatch", true);

  // An intact entry that lies: its frame holds seqs outside the range it states. Caught when the frame is read.
  // (A range that leaves a frame out cannot be caught without reading that frame: the index is the writer's word.)
  auto entry_of = [&](uint64_t seq) {
    for (size_t i = 0;; ++i) {
      format::IndexEntry e;
      memcpy(&e, index.data() + sizeof(format::IndexHeader) + i * sizeof e, sizeof e);
      if (e.seq_records > 0 && e.min_seq <= seq && seq <= e.max_seq) return i;
    }
  };
  bad = index;
  const size_t at = sizeof(format::IndexHeader) + entry_of(321) * sizeof(format::IndexEntry);
  format::IndexEntry e;
  memcpy(&e, bad.data() + at, sizeof e);
  e.min_seq = 321;
  e.max_seq = 321;  // the frame holds other seqs too
  e.entry_crc = store::Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
  memcpy(bad.data() + at, &e, sizeof e);
  WriteFile(store::IndexPath(path), bad);
  lookup("outside its index range", false);

  // An index that runs ahead of its stream (entries for frames the file does not have).
  std::vector<char> stream = ReadFile(path);
  WriteFile(store::IndexPath(path), index);
  const std::string cut = dir + "/cut.ttr";
  WriteFile(cut, std::vector<char>(stream.begin(), stream.begin() + static_cast<long>(stream.size() / 2)));
  WriteFile(store::IndexPath(cut), index);
  store::ReaderOptions lenient;
  lenient.allow_truncated = true;
  auto found = store::ReadSeq(cut, 10, lenient);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(Flatten(*found), ScanSeq(cut, 10, true));
  EXPECT_NE(found->index_problem.find("runs past the end of the stream"), std::string::npos) << found->index_problem;
}

// A stream cut at every byte of its last frames (a writer killed inside a write, a full disk), with its full
// index beside it: every lookup returns what a scan of the complete frames returns, or fails as the scan does.
TEST(StreamIndex, CutStreamsReadBackToTheLastCompleteFrameWithOrWithoutTheIndex) {
  const std::string dir = TempDir("cut");
  const std::string path = WriteStream(dir + "/src.ttr", 2, 300, 700);
  const std::vector<char> full = ReadFile(path);
  const std::vector<char> index = ReadFile(store::IndexPath(path));
  const std::string cut = dir + "/rank-2.ttr";
  store::ReaderOptions lenient;
  lenient.allow_truncated = true;
  int checked = 0;
  for (size_t len = full.size() * 3 / 4; len <= full.size(); len += 23) {
    WriteFile(cut, std::vector<char>(full.begin(), full.begin() + static_cast<long>(len)));
    for (bool with_index : {true, false}) {
      if (with_index)
        WriteFile(store::IndexPath(cut), index);
      else
        unlink(store::IndexPath(cut).c_str());
      for (uint64_t seq : {10ull, 296ull, 299ull}) {
        auto found = store::ReadSeq(cut, seq, lenient);
        ASSERT_TRUE(found.ok()) << len << ": " << found.status();
        ASSERT_EQ(Flatten(*found), ScanSeq(cut, seq, true)) << "cut at " << len << " seq " << seq;
        auto strict = store::ReadSeq(cut, seq);
        EXPECT_EQ(strict.ok(), !found->truncated) << len;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(Manifest, OpenThenClosedWithTheEndRecordsCounts) {
  const std::string dir = TempDir("manifest");
  WriteStream(dir + "/rank-0.ttr", 0, 100, 1024);
  WriteStream(dir + "/rank-1.ttr", 1, 50, 1024, /*end=*/false);
  std::string err;
  auto w = store::TraceWriter::Open(dir + "/rank-2.ttr", Identity(2), {}, &err);  // left open
  ASSERT_NE(w, nullptr);
  store::Manifest m;
  ASSERT_TRUE(store::ReadManifest(dir + "/manifest.ttm", &m, &err)) << err;
  EXPECT_EQ(ReadFile(dir + "/manifest.ttm").size(), 5 * sizeof(format::ManifestEntry)) << "open + close, twice, + open";
  ASSERT_EQ(m.streams.size(), 3u);
  EXPECT_EQ(m.skipped, 0u);
  const format::ManifestEntry& a = m.streams[0];
  EXPECT_EQ(store::FieldString(a.stream, sizeof a.stream), "rank-0.ttr");
  EXPECT_EQ(a.state, static_cast<uint32_t>(format::ManifestState::kClosed));
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(a.world_size, 4);
  EXPECT_EQ(a.pid, 1000u);
  EXPECT_EQ(a.start_unix_ns, 1700000000000000000ull);
  EXPECT_GE(a.end_unix_ns, a.start_unix_ns);
  EXPECT_STREQ(a.job, "job-idx");
  EXPECT_STREQ(a.host, "host-b");
  EXPECT_EQ(std::string(a.tool).rfind("ttrace ", 0), 0u) << a.tool;
  EXPECT_EQ(a.frames, static_cast<uint64_t>(Frames(dir + "/rank-0.ttr")));
  EXPECT_EQ(a.bytes, ReadFile(dir + "/rank-0.ttr").size());
  EXPECT_EQ(a.records, 100u + 20u + 100u + 1u);  // GEMMs, notices, tensors, the end record
  EXPECT_TRUE(a.flags & format::kManifestHasEnd);
  EXPECT_EQ(a.ops, 100u);
  EXPECT_EQ(a.payloads_dropped, 7u);
  EXPECT_EQ(a.dropped[1], 5u);
  EXPECT_EQ(a.dropped[2], 2u);
  EXPECT_EQ(a.end_reason, 1u);
  EXPECT_EQ(a.frames_lost, 0u);
  EXPECT_EQ(m.streams[1].state, static_cast<uint32_t>(format::ManifestState::kCut)) << "closed without an EndRecord";
  EXPECT_FALSE(m.streams[1].flags & format::kManifestHasEnd);
  EXPECT_EQ(m.streams[2].state, static_cast<uint32_t>(format::ManifestState::kOpen));
  EXPECT_EQ(m.streams[2].rank, 2);
  EXPECT_NE(store::ManifestLine(a).find("rank-0.ttr closed rank=0 world=4"), std::string::npos)
      << store::ManifestLine(a);
  EXPECT_NE(store::ManifestLine(a).find("[ring full]=5"), std::string::npos) << store::ManifestLine(a);

  // A torn append (a writer killed mid-write) and a flipped bit are skipped; the entries around them still read.
  std::vector<char> bytes = ReadFile(dir + "/manifest.ttm");
  std::vector<char> torn = bytes;
  torn.insert(torn.begin() + sizeof(format::ManifestEntry), bytes.begin(), bytes.begin() + 100);
  torn[3 * sizeof(format::ManifestEntry) + 100 + 200] ^= 1;  // the second rank-1 entry (its close)
  WriteFile(dir + "/manifest.ttm", torn);
  ASSERT_TRUE(store::ReadManifest(dir + "/manifest.ttm", &m, &err));
  EXPECT_EQ(m.skipped, 2u);
  ASSERT_EQ(m.streams.size(), 3u);
  EXPECT_EQ(m.streams[0].state, static_cast<uint32_t>(format::ManifestState::kClosed));
  EXPECT_EQ(m.streams[1].state, static_cast<uint32_t>(format::ManifestState::kOpen)) << "its close was the torn one";
  EXPECT_FALSE(store::ReadManifest(dir + "/none.ttm", &m, &err));
}

// Many processes append to one manifest at once: every entry lands whole.
TEST(Manifest, ConcurrentAppendsFromManyProcessesStayWhole) {
  const std::string dir = TempDir("concurrent");
  constexpr int kProcs = 8, kEach = 200;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      format::FileHeader h = store::MakeFileHeader(Identity(p));
      for (int i = 0; i < kEach; ++i) {
        format::ManifestEntry e = store::MakeManifestEntry(h, "rank-" + std::to_string(p) + "-" + std::to_string(i) + ".ttr",
                                                           format::ManifestWriter::kShim, "");
        if (!store::AppendManifestEntry(dir, &e, false, nullptr)) _exit(1);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  store::Manifest m;
  std::string err;
  ASSERT_TRUE(store::ReadManifest(dir + "/manifest.ttm", &m, &err)) << err;
  EXPECT_EQ(m.streams.size(), static_cast<size_t>(kProcs * kEach));
  EXPECT_EQ(m.skipped, 0u);
}

// A rank killed with SIGKILL while it streams: the stream reads back to its last complete frame, the index (which
// may lag by a frame) finds every seq of those frames as a scan does, with or without it, and the manifest still
// says the stream is open (no close was ever written).
TEST(StreamIndex, KilledWriterReadsBackToItsLastCompleteFrame) {
  const std::string dir = TempDir("kill9");
  const std::string path = dir + "/rank-3.ttr";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    store::WriterOptions opt;
    opt.frame_bytes = 3000;
    std::string err;
    auto w = store::TraceWriter::Open(path, Identity(3), opt, &err);
    if (w == nullptr) _exit(1);
    for (int i = 0;; i += 50) AppendOps(w.get(), i, 50, 0);  // until killed
  }
  // Wait until a few hundred frames are out, then kill it wherever it is.
  for (int i = 0; i < 3000; ++i) {
    struct stat st;
    if (stat(store::IndexPath(path).c_str(), &st) == 0 &&
        st.st_size > static_cast<off_t>(sizeof(format::IndexHeader) + 300 * sizeof(format::IndexEntry)))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  store::ReaderOptions lenient;
  lenient.allow_truncated = true;
  auto reader = TraceReader::Open(path, lenient);
  ASSERT_TRUE(reader.ok()) << reader.status();
  RecordView r;
  uint64_t gemms = 0;
  while (true) {
    auto more = (*reader)->Next(&r);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    if (r.type == RecordType::kGemm) ASSERT_EQ(r.Body<format::GemmRecord>().seq, gemms++) << "no gap, no repeat";
  }
  const uint32_t frames = (*reader)->frames_read();
  ASSERT_GT(frames, 300u);
  auto index = store::LoadIndex(path, (*reader)->header(), ReadFile(path).size());
  EXPECT_EQ(index.problem, "");
  EXPECT_LE(index.entries.size(), frames);
  EXPECT_GE(index.entries.size() + 1, frames) << "the index lags by at most the frame being written";
  for (uint64_t seq : std::vector<uint64_t>{0, gemms / 2, gemms - 2, gemms - 1}) {
    auto found = store::ReadSeq(path, seq, lenient);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_TRUE(found->used_index);
    EXPECT_EQ(Flatten(*found), ScanSeq(path, seq, true)) << seq;
    EXPECT_FALSE(found->records.empty()) << seq;
  }
  unlink(store::IndexPath(path).c_str());
  auto scanned = store::ReadSeq(path, gemms - 1, lenient);
  ASSERT_TRUE(scanned.ok());
  EXPECT_FALSE(scanned->used_index);
  EXPECT_NE(scanned->index_problem.find("no index"), std::string::npos);
  EXPECT_EQ(Flatten(*scanned), ScanSeq(path, gemms - 1, true));

  store::Manifest m;
  std::string err;
  ASSERT_TRUE(store::ReadManifest(dir + "/manifest.ttm", &m, &err)) << err;
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.streams[0].state, static_cast<uint32_t>(format::ManifestState::kOpen));
  EXPECT_EQ(m.streams[0].rank, 3);
}

}  // namespace
}  // namespace ttrace
