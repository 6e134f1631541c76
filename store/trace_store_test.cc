// Round trip of the store format: TraceWriter -> TraceReader, and the reader's answers to truncated and corrupted
// streams (they must fail cleanly with DataLoss, or read back to the last complete frame when allowed).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "store/trace_reader.h"
#include "store/crc32c.h"
#include "store/trace_writer.h"
#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"

namespace ttrace {
namespace {

using store::RecordView;
using store::TraceReader;
using format::RecordType;

std::string TempPath(const std::string& name) { return ttrace::test_support::TestScratchDir() + "/" + name; }

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Writes `n` GEMM records, each followed by a tensor of seq-dependent floats, in frames of ~frame_bytes.
std::string WriteSample(const std::string& name, int n, size_t frame_bytes) {
  std::string path = TempPath(name);
  store::StreamIdentity id;
  id.rank = 3;
  id.world_size = 4;
  id.pid = 1234;
  id.job = "job-xyz";
  id.host = "host-a";
  store::WriterOptions opt;
  opt.frame_bytes = frame_bytes;
  std::string err;
  auto w = store::TraceWriter::Open(path, id, opt, &err);
  EXPECT_NE(w, nullptr) << err;
  for (int i = 0; i < n; ++i) {
    format::GemmRecord g{};
    g.seq = static_cast<uint64_t>(i);
    g.api = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);
    g.m = i + 1;
    g.alpha = 0.5 * i;
    EXPECT_TRUE(w->Append(RecordType::kGemm, g, nullptr, 0, &err)) << err;
    std::vector<float> data(static_cast<size_t>(i % 7 + 1), static_cast<float>(i));
    format::TensorRecord t{};
    t.seq = static_cast<uint64_t>(i);
    t.slot = static_cast<uint8_t>(format::TensorSlot::kCOut);
    t.dtype = static_cast<uint8_t>(format::DType::kF32);
    t.rows = static_cast<int64_t>(data.size());
    t.cols = 1;
    t.batch = 1;
    t.payload_bytes = data.size() * sizeof(float);
    EXPECT_TRUE(w->Append(RecordType::kTensor, t, data.data(), t.payload_bytes, &err)) << err;
  }
  EXPECT_TRUE(w->Close(&err)) << err;
  return path;
}

// Reads every record; returns the number of GEMM records, verifying each one's content.
absl::StatusOr<int> ReadAll(const std::string& path, store::ReaderOptions opt = {},
                            bool* truncated = nullptr) {
  auto reader = TraceReader::Open(path, opt);
  if (!reader.ok()) return reader.status();
  RecordView r;
  int gemms = 0;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&r);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (r.type == RecordType::kGemm) {
      auto g = r.Body<format::GemmRecord>();
      EXPECT_EQ(g.seq, static_cast<uint64_t>(gemms));
      EXPECT_EQ(g.m, gemms + 1);
      EXPECT_EQ(g.alpha, 0.5 * gemms);
      ++gemms;
    } else if (r.type == RecordType::kTensor) {
      auto t = r.Body<format::TensorRecord>();
      EXPECT_EQ(r.payload.size(), t.payload_bytes);
      EXPECT_EQ(r.payload.size(), static_cast<size_t>(t.seq % 7 + 1) * sizeof(float));
      std::vector<float> values(r.payload.size() / sizeof(float));
      memcpy(values.data(), r.payload.data(), values.size() * sizeof(float));
      for (float f : values) EXPECT_EQ(f, static_cast<float>(t.seq)) << "tensor of seq " << t.seq;
    }
  }
  if (truncated) *truncated = (*reader)->truncated();
  return gemms;
}

TEST(Crc32c, KnownVector) {
  EXPECT_EQ(store::Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(store::Crc32cSoftware("123456789", 9), 0xE3069283u);
}

TEST(Crc32c, HardwareAndSoftwareAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(5);
  std::vector<unsigned char> buf(300);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (size_t off = 0; off < 9; ++off)
    for (size_t n = 0; n + off <= buf.size(); n += 1 + n / 8) {
      ASSERT_EQ(store::Crc32c(buf.data() + off, n), store::Crc32cSoftware(buf.data() + off, n)) << off << " " << n;
      // Extending a running checksum equals checksumming the concatenation.
      uint32_t part = store::Crc32c(buf.data() + off, n / 2);
      ASSERT_EQ(store::Crc32c(buf.data() + off + n / 2, n - n / 2, part), store::Crc32c(buf.data() + off, n));
    }
}

// Buffers of three 8 KiB lanes and more take the interleaved path (lanes joined by multiplying with x^65536 mod P):
// every length around the lane multiples, at odd alignments, equals the table version.
TEST(Crc32c, InterleavedLanesAgreeWithTheTable) {
  std::mt19937 rng(6);
  std::vector<unsigned char> buf(4 * 24576 + 64);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (size_t off : {0, 3})
    for (size_t base : {24576, 2 * 24576, 3 * 24576})
      for (size_t n = base - 9; n <= base + 17; ++n) {
        ASSERT_EQ(store::Crc32c(buf.data() + off, n), store::Crc32cSoftware(buf.data() + off, n)) << off << " " << n;
        ASSERT_EQ(store::Crc32c(buf.data() + off, n, 0x12345678u), store::Crc32cSoftware(buf.data() + off, n, 0x12345678u));
      }
}

TEST(TraceStore, RoundTrip) {
  std::string path = WriteSample("round_trip.ttr", 1000, 4096);
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().rank, 3);
  EXPECT_EQ((*reader)->header().world_size, 4);
  EXPECT_STREQ((*reader)->header().job, "job-xyz");
  EXPECT_STREQ((*reader)->header().host, "host-a");
  auto n = ReadAll(path);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1000);
}

TEST(TraceStore, NewerBodiesAndUnknownRecordsAreReadable) {
  std::string path = TempPath("evolve.ttr");
  std::string err;
  auto w = store::TraceWriter::Open(path, {}, {}, &err);
  ASSERT_NE(w, nullptr) << err;
  // A future writer: a GEMM body with 16 extra bytes, and a record type this reader does not know.
  std::vector<char> body(sizeof(format::GemmRecord) + 16, 'x');
  format::GemmRecord g{};
  g.seq = 42;
  memcpy(body.data(), &g, sizeof g);
  ASSERT_TRUE(w->Append(RecordType::kGemm, body.data(), body.size()));
  char unknown[5] = {1, 2, 3, 4, 5};
  ASSERT_TRUE(w->Append(static_cast<RecordType>(999), unknown, sizeof unknown));
  ASSERT_TRUE(w->Append(RecordType::kGemm, g));
  ASSERT_TRUE(w->Close(&err)) << err;
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  RecordView r;
  std::vector<int> types;
  while (true) {
    auto more = (*reader)->Next(&r);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    types.push_back(static_cast<int>(r.type));
    if (r.type == RecordType::kGemm) EXPECT_EQ(r.Body<format::GemmRecord>().seq, 42u);
  }
  EXPECT_EQ(types, (std::vector<int>{3, 999, 3}));
}

TEST(TraceStore, TruncationAtEveryByteFailsCleanlyOrReadsCompleteFrames) {
  std::string path = WriteSample("trunc_src.ttr", 60, 512);
  std::vector<char> full = ReadFile(path);
  std::string cut = TempPath("trunc.ttr");
  int last_complete = -1;
  for (size_t len = 0; len < full.size(); len += 7) {
    WriteFile(cut, std::vector<char>(full.begin(), full.begin() + static_cast<long>(len)));
    auto strict = ReadAll(cut);
    if (len < sizeof(format::FileHeader)) {
      EXPECT_EQ(strict.status().code(), absl::StatusCode::kDataLoss) << len;
      continue;
    }
    bool truncated = false;
    auto lenient = ReadAll(cut, {true}, &truncated);
    ASSERT_TRUE(lenient.ok()) << len << ": " << lenient.status();
    EXPECT_GE(*lenient, last_complete) << "records only grow with length";
    last_complete = *lenient;
    if (truncated) {
      EXPECT_EQ(strict.status().code(), absl::StatusCode::kDataLoss) << len;
      EXPECT_NE(strict.status().message().find("truncated"), absl::string_view::npos);
    }
  }
  EXPECT_GT(last_complete, 0);
  EXPECT_LT(last_complete, 60);
}

TEST(TraceStore, EveryCorruptedByteIsRejectedOrHarmless) {
  std::string path = WriteSample("corrupt_src.ttr", 30, 300);
  std::vector<char> full = ReadFile(path);
  std::string bad = TempPath("corrupt.ttr");
  std::mt19937 rng(7);
  int rejected = 0;
  for (size_t at = 0; at < full.size(); ++at) {
    std::vector<char> b = full;
    b[at] = static_cast<char>(b[at] ^ (1 << (rng() % 8)));
    WriteFile(bad, b);
    auto n = ReadAll(bad, {true});
    if (!n.ok()) {
      ++rejected;
      EXPECT_TRUE(n.status().code() == absl::StatusCode::kDataLoss ||
                  n.status().code() == absl::StatusCode::kFailedPrecondition)
          << n.status();
    } else {
      // Only padding bytes of the file header (job/host beyond their NUL) are allowed to change harmlessly;
      // everything else is covered by a checksum.
      ADD_FAILURE() << "flip at byte " << at << " went unnoticed";
    }
  }
  EXPECT_EQ(rejected, static_cast<int>(full.size()));
}

// Frames whose own checksums are right but whose order is not the writer's: a frame repeated (a retried write) or
// two frames swapped. The frame index catches both: the stream is corrupt, not silently read twice or out of order.
TEST(TraceStore, RepeatedOrReorderedFramesAreRejected) {
  std::string path = WriteSample("frames_src.ttr", 40, 256);
  const std::vector<char> full = ReadFile(path);
  std::vector<std::pair<size_t, size_t>> frames;  // [begin, end) of each frame, header included
  for (size_t at = sizeof(format::FileHeader); at + sizeof(format::FrameHeader) <= full.size();) {
    format::FrameHeader fh;
    memcpy(&fh, full.data() + at, sizeof fh);
    const size_t end = at + sizeof fh + fh.compressed_size;
    frames.emplace_back(at, end);
    at = end;
  }
  ASSERT_GE(frames.size(), 3u);
  ASSERT_EQ(frames.back().second, full.size());
  auto frame = [&](size_t i) {
    return std::vector<char>(full.begin() + static_cast<long>(frames[i].first),
                             full.begin() + static_cast<long>(frames[i].second));
  };
  std::vector<char> repeated(full.begin(), full.begin() + static_cast<long>(frames[1].second));
  for (size_t i : {size_t{1}, size_t{2}}) {
    const std::vector<char> f = frame(i);
    repeated.insert(repeated.end(), f.begin(), f.end());
  }
  std::vector<char> swapped(full.begin(), full.begin() + static_cast<long>(frames[1].first));
  for (size_t i : {size_t{2}, size_t{1}}) {
    const std::vector<char> f = frame(i);
    swapped.insert(swapped.end(), f.begin(), f.end());
  }
  for (const auto& bytes : {repeated, swapped}) {
    const std::string bad = TempPath("frames_bad.ttr");
    WriteFile(bad, bytes);
    auto n = ReadAll(bad, {true});
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.status().code(), absl::StatusCode::kDataLoss) << n.status();
    EXPECT_NE(n.status().message().find("frame index"), absl::string_view::npos) << n.status();
  }
}

TEST(TraceStore, NotATrace) {
  std::string path = TempPath("garbage.ttr");
  WriteFile(path, std::vector<char>(300, 'z'));
  auto r = TraceReader::Open(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(TraceReader::Open(TempPath("missing.ttr")).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ttrace
