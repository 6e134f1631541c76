// TraceWriter's stored frames: a frame that is (at least 7/8) float-coded payloads is written as a zstd frame of
// raw blocks (no second entropy pass), any other frame is compressed; both read back byte for byte, and the stored
// frame is a standard zstd frame (ZSTD_getFrameContentSize and ZSTD_decompress accept it). A payload repeated far
// apart in one frame is stored once, coded or not (zstd's window spans the frame).
#include <unistd.h>
#include <zstd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"
#include "store/float_codec.h"
#include "store/trace_reader.h"
#include "store/trace_writer.h"

namespace ttrace::store {
namespace {

struct Frame {
  format::FrameHeader header;
  std::string bytes;
};

std::vector<Frame> Frames(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  format::FileHeader fh;
  memcpy(&fh, all.data(), sizeof fh);
  std::vector<Frame> out;
  for (size_t pos = fh.header_size; pos + sizeof(format::FrameHeader) <= all.size();) {
    Frame f;
    memcpy(&f.header, all.data() + pos, sizeof f.header);
    pos += sizeof f.header;
    f.bytes = all.substr(pos, f.header.compressed_size);
    pos += f.header.compressed_size;
    out.push_back(f);
  }
  return out;
}

std::string Coded(const std::vector<uint16_t>& v) {
  std::string out(FloatCodecMaxBytes(v.size(), 2), '\0');
  out.resize(FloatEncode(v.data(), v.size(), 2, out.data()));
  return out;
}

TEST(CodedFrames, FloatCodedFramesAreStoredOthersCompressed) {
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<std::string> payloads;
  for (int i = 0; i < 6; ++i) {
    std::vector<uint16_t> v(300000 + i);  // 600 KB of BF16: several 128 KiB raw blocks per frame
    for (uint16_t& x : v) {
      const float f = g(rng);
      uint32_t u;
      memcpy(&u, &f, 4);
      x = static_cast<uint16_t>(u >> 16);
    }
    payloads.push_back(Coded(v));
  }
  const std::string path = test_support::TestScratchDir() + "/coded_frames.ttr";
  WriterOptions opt;
  opt.frame_bytes = 1 << 20;
  std::string err;
  auto w = TraceWriter::Open(path, {}, opt, &err);
  ASSERT_TRUE(w) << err;
  auto tensor = [&](const std::string& p, format::PayloadKind kind) {
    format::TensorRecord t{};
    t.payload_kind = static_cast<uint8_t>(kind);
    t.dtype = static_cast<uint8_t>(format::DType::kBF16);
    t.rows = static_cast<int64_t>(p.size() / 2);
    t.cols = t.batch = 1;
    t.payload_bytes = p.size();
    ASSERT_TRUE(w->Append(format::RecordType::kTensor, t, p.data(), p.size(), &err)) << err;
  };
  // Frame 0: two coded tensors (stored). Frame 1: the same bytes as plain payloads of a compressible kind with a
  // run of zeros (compressed). Frame 2: one coded tensor beside a plain one of the same size (compressed: under 7/8).
  tensor(payloads[0], format::PayloadKind::kFloatCoded);
  tensor(payloads[1], format::PayloadKind::kFloatCoded);
  ASSERT_TRUE(w->Flush(&err)) << err;
  tensor(payloads[2] + std::string(200000, '\0'), format::PayloadKind::kFull);
  ASSERT_TRUE(w->Flush(&err)) << err;
  tensor(payloads[3], format::PayloadKind::kFloatCoded);
  tensor(std::string(payloads[4].size(), '\0'), format::PayloadKind::kFull);
  ASSERT_TRUE(w->Close(&err)) << err;

  const std::vector<Frame> frames = Frames(path);
  ASSERT_EQ(frames.size(), 3u);
  const auto& f0 = frames[0].header;
  EXPECT_GE(f0.compressed_size, f0.uncompressed_size);  // stored: raw blocks
  EXPECT_LE(f0.compressed_size, f0.uncompressed_size + 10 + 3 * (f0.uncompressed_size / (128 << 10) + 1));
  EXPECT_EQ(ZSTD_getFrameContentSize(frames[0].bytes.data(), frames[0].bytes.size()), f0.uncompressed_size);
  std::string back(f0.uncompressed_size, '\0');
  EXPECT_EQ(ZSTD_decompress(back.data(), back.size(), frames[0].bytes.data(), frames[0].bytes.size()),
            f0.uncompressed_size);
  EXPECT_LT(frames[1].header.compressed_size, frames[1].header.uncompressed_size - 150000);
  EXPECT_LT(frames[2].header.compressed_size, frames[2].header.uncompressed_size * 3 / 4);

  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> read;
  RecordView v;
  while (true) {
    auto more = (*reader)->Next(&v);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    read.emplace_back(v.payload);
  }
  ASSERT_EQ(read.size(), 5u);
  EXPECT_EQ(read[0], payloads[0]);
  EXPECT_EQ(read[1], payloads[1]);
  EXPECT_EQ(read[2], payloads[2] + std::string(200000, '\0'));
  EXPECT_EQ(read[3], payloads[3]);
  std::vector<uint16_t> decoded(300003);
  EXPECT_EQ(FloatDecode(read[3].data(), read[3].size(), 2, decoded.data(), 2 * 300003), nullptr);
}

// A tensor captured twice in one frame, 3 MiB of other data apart (farther than zstd's default windows for a
// 4 MiB input: 512 KiB at level 1, 2 MiB at level 3): the frame costs one copy, for float-coded payloads (zstd 1)
// and for shuffled ones (zstd 3). With the default windows the second copy was stored again (the frames were
// about 1.5 and 1.3 copies larger).
TEST(CodedFrames, RepeatFarApartInAFrameIsStoredOnce) {
  std::mt19937 rng(2);
  std::normal_distribution<float> g(0.0f, 0.02f);
  auto bf16 = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (uint16_t& x : v) {
      const float f = g(rng);
      uint32_t u;
      memcpy(&u, &f, 4);
      x = static_cast<uint16_t>(u >> 16);
    }
    return v;
  };
  for (const format::PayloadKind kind : {format::PayloadKind::kFloatCoded, format::PayloadKind::kShuffled}) {
    SCOPED_TRACE(static_cast<int>(kind));
    auto payload = [&](const std::vector<uint16_t>& v) {
      if (kind == format::PayloadKind::kFloatCoded) return Coded(v);
      std::string s(2 * v.size(), '\0');
      for (size_t i = 0; i < v.size(); ++i) s[i] = static_cast<char>(v[i]), s[v.size() + i] = static_cast<char>(v[i] >> 8);
      return s;
    };
    const std::string repeated = payload(bf16(1 << 19));  // 1 MiB of elements
    std::vector<std::string> between;
    size_t between_bytes = 0;
    while (between_bytes < (3u << 20)) {
      between.push_back(payload(bf16(1 << 18)));
      between_bytes += between.back().size();
    }
    const std::string path = test_support::TestScratchDir() + "/repeat.ttr";
    WriterOptions opt;
    opt.frame_bytes = 8u << 20;
    std::string err;
    auto w = TraceWriter::Open(path, {}, opt, &err);
    ASSERT_TRUE(w) << err;
    auto tensor = [&](const std::string& p) {
      format::TensorRecord t{};
      t.payload_kind = static_cast<uint8_t>(kind);
      t.dtype = static_cast<uint8_t>(format::DType::kBF16);
      t.rows = 1 << 19;
      t.cols = t.batch = 1;
      t.payload_bytes = p.size();
      ASSERT_TRUE(w->Append(format::RecordType::kTensor, t, p.data(), p.size(), &err)) << err;
    };
    tensor(repeated);
    for (const std::string& b : between) tensor(b);
    ASSERT_TRUE(w->Flush(&err)) << err;
    const uint64_t once = w->bytes_written();
    tensor(repeated);
    for (const std::string& b : between) tensor(b);
    tensor(repeated);
    ASSERT_TRUE(w->Close(&err)) << err;
    const std::vector<Frame> frames = Frames(path);
    ASSERT_EQ(frames.size(), 2u);
    const uint64_t first = sizeof(format::FrameHeader) + frames[0].header.compressed_size;
    EXPECT_EQ(once, sizeof(format::FileHeader) + first);
    const uint64_t second = sizeof(format::FrameHeader) + frames[1].header.compressed_size;
    EXPECT_LT(second, first + first / 50) << "the repeat 3 MiB back was stored again";
    EXPECT_GT(second, first - first / 50);

    auto reader = TraceReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    RecordView v;
    int n = 0;
    std::vector<std::string> expected = {repeated};
    for (int k = 0; k < 2; ++k) {
      if (k) expected.push_back(repeated);
      expected.insert(expected.end(), between.begin(), between.end());
    }
    expected.push_back(repeated);
    while (true) {
      auto more = (*reader)->Next(&v);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      ASSERT_LT(n, static_cast<int>(expected.size()));
      EXPECT_EQ(v.payload, expected[n]) << n;
      ++n;
    }
    EXPECT_EQ(n, static_cast<int>(expected.size()));
    unlink(path.c_str());
  }
}

}  // namespace
}  // namespace ttrace::store
