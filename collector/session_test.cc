// The collector's connection logic, fed bytes directly (no sockets): a stream arrives byte-identical to what the
// embedded sink writes, in any chunking; the handshake answers welcome, version mismatch or refused (token, names,
// a busy stream); a malformed or cut stream ends that session with a reason, keeps its good frames and is
// recorded as cut in the manifest; limits hold; no single-byte corruption of the input crashes it.
#include "collector/session.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"
#include "store/crc32c.h"
#include "store/manifest.h"
#include "store/stream_index.h"
#include "store/trace_reader.h"
#include "store/trace_writer.h"

namespace ttrace::collector {
namespace {

std::string TempDir(const std::string& name) { return ttrace::test_support::TestScratchPath(name); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A StreamOutput that records what a client sends after its hello and token: header, then entry + frame each.
class WireBytes : public store::StreamOutput {
 public:
  explicit WireBytes(std::string* out) : out_(out) {}
  bool Begin(const format::FileHeader& h, std::string*) override {
    out_->append(reinterpret_cast<const char*>(&h), sizeof h);
    return true;
  }
  bool WriteFrame(const char* frame, size_t bytes, const format::IndexEntry& entry, std::string*) override {
    format::IndexEntry e = entry;
    e.entry_crc = store::Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
    out_->append(reinterpret_cast<const char*>(&e), sizeof e);
    out_->append(frame, bytes);
    return true;
  }
  bool Finish(const store::StreamSummary&, std::string*) override { return true; }

 private:
  std::string* out_;
};

store::StreamIdentity Identity(int rank, const std::string& job = "job-c") {
  store::StreamIdentity id;
  id.rank = rank;
  id.world_size = 64;
  id.pid = 4000 + static_cast<uint32_t>(rank);
  id.start_unix_ns = 1700000000000000000ull;
  id.job = job;
  id.host = "node-1";
  return id;
}

// Writes `ops` GEMM records and tensors (+ an end record) through a TraceWriter into `output`.
void WriteOps(store::TraceWriter* w, int ops, bool end = true) {
  for (int i = 0; i < ops; ++i) {
    format::GemmRecord g{};
    g.seq = static_cast<uint64_t>(i);
    g.m = i;
    ASSERT_TRUE(w->Append(format::RecordType::kGemm, g));
    std::vector<float> data(64, static_cast<float>(i));
    format::TensorRecord t{};
    t.seq = g.seq;
    t.slot = 3;
    t.dtype = static_cast<uint8_t>(format::DType::kF32);
    t.rows = 64;
    t.cols = t.batch = 1;
    t.payload_bytes = data.size() * 4;
    ASSERT_TRUE(w->Append(format::RecordType::kTensor, t, data.data(), t.payload_bytes));
  }
  if (end) {
    format::EndRecord e{};
    e.reason = 1;
    e.ops = static_cast<uint64_t>(ops);
    e.payloads_dropped = 3;
    e.dropped[1] = 3;
    ASSERT_TRUE(w->Append(format::RecordType::kEnd, e));
  }
}

std::string Hello(uint32_t version = wire::kProtocolVersion, const std::string& token = "") {
  wire::Hello h{};
  memcpy(h.magic, wire::kHelloMagic, sizeof h.magic);
  h.version = version;
  h.hello_size = sizeof h;
  h.token_bytes = static_cast<uint32_t>(token.size());
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + token;
}

// The client's bytes after the hello for a stream of `ops` ops, in frames of ~`frame_bytes`.
std::string StreamBytes(const store::StreamIdentity& id, int ops, size_t frame_bytes = 2048, bool end = true) {
  std::string out;
  store::WriterOptions wo;
  wo.frame_bytes = frame_bytes;
  std::string err;
  auto w = store::TraceWriter::Create(std::make_unique<WireBytes>(&out), id, wo, &err);
  EXPECT_NE(w, nullptr) << err;
  WriteOps(w.get(), ops, end);
  EXPECT_TRUE(w->Close(&err)) << err;
  return out;
}

wire::Reply ReplyOf(const std::string& out) {
  wire::Reply r{};
  EXPECT_GE(out.size(), sizeof r);
  if (out.size() >= sizeof r) memcpy(&r, out.data(), sizeof r);
  return r;
}

format::ManifestEntry ManifestOf(const std::string& dir, const std::string& stream) {
  store::Manifest m;
  std::string err;
  EXPECT_TRUE(store::ReadManifest(dir + "/manifest.ttm", &m, &err)) << err;
  for (const auto& e : m.streams)
    if (store::FieldString(e.stream, sizeof e.stream) == stream) return e;
  ADD_FAILURE() << "no manifest entry for " << stream;
  return {};
}

TEST(Session, StreamArrivesByteIdenticalInAnyChunking) {
  const std::string root = TempDir("identical");
  // What the embedded sink writes for the same records.
  std::string err;
  store::WriterOptions wo;
  wo.frame_bytes = 2048;
  {
    auto w = store::TraceWriter::Open(root + "/local/rank-5.ttr", Identity(5), wo, &err);
    ASSERT_NE(w, nullptr) << err;
    WriteOps(w.get(), 300);
    ASSERT_TRUE(w->Close(&err));
  }
  const std::string wire = Hello() + StreamBytes(Identity(5), 300);
  std::mt19937 rng(7);
  // chunk 0: random sizes; SIZE_MAX: received in place (InputWindow / Received), random sizes up to the room.
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, size_t{0}, SIZE_MAX}) {
    StreamStore store(root + "/c" + std::to_string(chunk));
    Metrics metrics;
    std::string out;
    {
      Session s(&store, &metrics, SessionConfig{});
      for (size_t pos = 0; pos < wire.size();) {
        size_t n = std::min(wire.size() - pos, chunk && chunk != SIZE_MAX ? chunk : 1 + rng() % 9000);
        if (chunk == SIZE_MAX) {
          size_t room;
          char* window = s.InputWindow(&room);
          ASSERT_GT(room, 0u);
          n = std::min(n, room);
          memcpy(window, wire.data() + pos, n);
          ASSERT_TRUE(s.Received(n)) << s.close_reason();
        } else {
          ASSERT_TRUE(s.Feed(wire.data() + pos, n)) << s.close_reason();
        }
        pos += n;
        out += s.TakeOutput();
      }
      s.End(true);
      EXPECT_EQ(s.close_reason(), "");
      EXPECT_EQ(s.stream_path(), store.root() + "/job-c/rank-5.ttr");
    }
    const wire::Reply r = ReplyOf(out);
    EXPECT_EQ(r.status, static_cast<uint32_t>(wire::ReplyStatus::kWelcome));
    EXPECT_STREQ(r.message, "job-c/rank-5.ttr");
    const std::string path = store.root() + "/job-c/rank-5.ttr";
    EXPECT_EQ(ReadFile(path), ReadFile(root + "/local/rank-5.ttr")) << "chunk " << chunk;
    EXPECT_EQ(ReadFile(path + ".idx"), ReadFile(root + "/local/rank-5.ttr.idx"));
    const uint64_t frames = (out.size() - sizeof r) / sizeof(wire::Ack);
    EXPECT_GT(frames, 10u);
    wire::Ack last;
    memcpy(&last, out.data() + out.size() - sizeof last, sizeof last);
    EXPECT_EQ(last.frames, frames) << "one ack per frame";
    const format::ManifestEntry e = ManifestOf(store.root() + "/job-c", "rank-5.ttr");
    EXPECT_EQ(e.state, static_cast<uint32_t>(format::ManifestState::kClosed));
    EXPECT_EQ(e.writer, static_cast<uint32_t>(format::ManifestWriter::kCollector));
    EXPECT_EQ(e.ops, 300u);
    EXPECT_EQ(e.frames, frames);
    EXPECT_EQ(metrics.frames.load(), frames);
    EXPECT_EQ(metrics.records.load(), 601u);
    EXPECT_EQ(metrics.bytes_in.load(), wire.size());
    EXPECT_EQ(metrics.client_dropped[1].load(), 3u);
    EXPECT_EQ(metrics.closed_clean.load(), 1u);
    EXPECT_EQ(metrics.active.load(), 0);
    auto found = store::ReadSeq(path, 123);
    ASSERT_TRUE(found.ok());
    EXPECT_TRUE(found->used_index);
    EXPECT_EQ(found->records.size(), 2u);
  }
}

TEST(Session, HandshakeAnswersVersionTokenAndNames) {
  const std::string root = TempDir("handshake");
  StreamStore store(root);
  Metrics metrics;
  auto run = [&](const SessionConfig& config, const std::string& bytes, std::string* reason = nullptr) {
    Session s(&store, &metrics, config);
    s.Feed(bytes.data(), bytes.size());
    if (!s.done()) s.End(true);
    if (reason) *reason = s.close_reason();
    return ReplyOf(s.TakeOutput());
  };
  const std::string stream = StreamBytes(Identity(1), 5);
  std::string reason;
  wire::Reply r = run(SessionConfig{}, Hello(2) + stream, &reason);
  EXPECT_EQ(r.status, static_cast<uint32_t>(wire::ReplyStatus::kVersionMismatch));
  EXPECT_EQ(r.version, wire::kProtocolVersion);
  EXPECT_NE(reason.find("protocol version 2"), std::string::npos) << reason;

  SessionConfig tcp;
  tcp.require_token = true;
  tcp.token = "s3cret-token";
  r = run(tcp, Hello(wire::kProtocolVersion, "s3cret-tokem") + stream, &reason);
  EXPECT_EQ(r.status, static_cast<uint32_t>(wire::ReplyStatus::kRefused));
  EXPECT_EQ(r.reason, static_cast<uint32_t>(wire::RefuseReason::kBadToken));
  EXPECT_EQ(run(tcp, Hello() + stream).reason, static_cast<uint32_t>(wire::RefuseReason::kBadToken));
  EXPECT_EQ(run(tcp, Hello(wire::kProtocolVersion, "s3cret-token!") + stream).reason,
            static_cast<uint32_t>(wire::RefuseReason::kBadToken));
  EXPECT_EQ(metrics.refused[static_cast<uint32_t>(wire::RefuseReason::kBadToken)].load(), 3u);
  r = run(tcp, Hello(wire::kProtocolVersion, "s3cret-token") + stream, &reason);
  EXPECT_EQ(r.status, static_cast<uint32_t>(wire::ReplyStatus::kWelcome)) << reason;
  EXPECT_TRUE(TokenEquals("abc", "abc"));
  EXPECT_FALSE(TokenEquals("abc", "abd"));
  EXPECT_FALSE(TokenEquals("abc", "ab"));
  EXPECT_FALSE(TokenEquals("", ""));

  for (const char* job : {"../etc", ".hidden", "a/b", "", "x y"}) {
    r = run(SessionConfig{}, Hello() + StreamBytes(Identity(1, job), 1), &reason);
    EXPECT_EQ(r.reason, static_cast<uint32_t>(wire::RefuseReason::kBadName)) << job << ": " << reason;
  }
  store::StreamIdentity unnamed = Identity(-1);
  unnamed.host = "../../h";
  EXPECT_EQ(run(SessionConfig{}, Hello() + StreamBytes(unnamed, 1)).reason,
            static_cast<uint32_t>(wire::RefuseReason::kBadName));
  unnamed.host = "node-7";
  r = run(SessionConfig{}, Hello() + StreamBytes(unnamed, 1), &reason);
  EXPECT_STREQ(r.message, "job-c/pid-3999-node-7.ttr") << reason;
  struct stat st;
  EXPECT_NE(stat((root + "/etc").c_str(), &st), 0);

  // Two connections for one stream: the second is refused while the first writes.
  Session first(&store, &metrics, SessionConfig{});
  const std::string a = Hello() + StreamBytes(Identity(9), 3);
  first.Feed(a.data(), sizeof(wire::Hello) + sizeof(format::FileHeader));
  EXPECT_EQ(ReplyOf(first.TakeOutput()).status, static_cast<uint32_t>(wire::ReplyStatus::kWelcome));
  EXPECT_EQ(run(SessionConfig{}, a).reason, static_cast<uint32_t>(wire::RefuseReason::kStreamBusy));
  first.Feed(a.data() + sizeof(wire::Hello) + sizeof(format::FileHeader),
             a.size() - sizeof(wire::Hello) - sizeof(format::FileHeader));
  first.End(true);
  EXPECT_EQ(run(SessionConfig{}, a).status, static_cast<uint32_t>(wire::ReplyStatus::kWelcome)) << "released";

  std::string junk(200, 'x');
  EXPECT_EQ(run(SessionConfig{}, junk).reason, static_cast<uint32_t>(wire::RefuseReason::kMalformedHello));
  std::string bad_header = Hello() + StreamBytes(Identity(2), 1);
  bad_header[sizeof(wire::Hello) + 20] ^= 1;
  EXPECT_EQ(run(SessionConfig{}, bad_header).reason, static_cast<uint32_t>(wire::RefuseReason::kBadHeader));
}

// A stream with one byte flipped in its 4th frame's payload: the session ends with the reason, the 3 frames before
// it are in the store and read back, the manifest says cut (malformed), and another session is unaffected.
TEST(Session, MalformedOrCutStreamEndsThatSessionOnly) {
  const std::string root = TempDir("malformed");
  StreamStore store(root);
  Metrics metrics;
  const std::string good = Hello() + StreamBytes(Identity(0), 200);
  std::string bad = Hello() + StreamBytes(Identity(1), 200);
  // Find the 4th frame: skip hello + header, then (entry + frame header + payload) x 3.
  size_t pos = sizeof(wire::Hello) + sizeof(format::FileHeader);
  for (int i = 0; i < 3; ++i) {
    format::FrameHeader fh;
    memcpy(&fh, bad.data() + pos + sizeof(format::IndexEntry), sizeof fh);
    pos += sizeof(format::IndexEntry) + sizeof fh + fh.compressed_size;
  }
  bad[pos + sizeof(format::IndexEntry) + sizeof(format::FrameHeader) + 10] ^= 0x40;
  Session s_good(&store, &metrics, SessionConfig{}), s_bad(&store, &metrics, SessionConfig{});
  for (size_t at = 0; at < std::max(good.size(), bad.size()); at += 1000) {
    if (at < good.size()) s_good.Feed(good.data() + at, std::min<size_t>(1000, good.size() - at));
    if (at < bad.size() && !s_bad.done()) s_bad.Feed(bad.data() + at, std::min<size_t>(1000, bad.size() - at));
  }
  s_good.End(true);
  EXPECT_TRUE(s_bad.done());
  EXPECT_EQ(s_bad.close_reason(), "malformed stream: frame payload checksum mismatch at frame 3");
  EXPECT_EQ(s_good.close_reason(), "");
  EXPECT_EQ(ManifestOf(root + "/job-c", "rank-0.ttr").state, static_cast<uint32_t>(format::ManifestState::kClosed));
  const format::ManifestEntry e = ManifestOf(root + "/job-c", "rank-1.ttr");
  EXPECT_EQ(e.state, static_cast<uint32_t>(format::ManifestState::kCut));
  EXPECT_EQ(e.lost_reason, static_cast<uint32_t>(format::LossReason::kMalformed));
  EXPECT_EQ(e.frames, 3u);
  EXPECT_EQ(e.frames_lost, 1u);
  EXPECT_EQ(metrics.frames_lost[static_cast<uint32_t>(format::LossReason::kMalformed)].load(), 1u);
  auto reader = store::TraceReader::Open(root + "/job-c/rank-1.ttr");
  ASSERT_TRUE(reader.ok());
  store::RecordView r;
  int records = 0;
  while (true) {
    auto more = (*reader)->Next(&r);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ++records;
  }
  EXPECT_EQ((*reader)->frames_read(), 3u);
  EXPECT_GT(records, 0);

  // Cut inside a frame (the client died): connection lost, the frames before it kept.
  Session cut(&store, &metrics, SessionConfig{});
  const std::string c = Hello() + StreamBytes(Identity(2), 200);
  cut.Feed(c.data(), c.size() - 100);
  cut.End(false);
  EXPECT_EQ(cut.close_reason().rfind("connection lost", 0), 0u) << cut.close_reason();
  EXPECT_EQ(ManifestOf(root + "/job-c", "rank-2.ttr").lost_reason,
            static_cast<uint32_t>(format::LossReason::kConnectionLost));
  // Over the frame limit.
  SessionConfig small;
  small.limits.max_frame_bytes = 64;
  Session big(&store, &metrics, small);
  const std::string b = Hello() + StreamBytes(Identity(3), 50, 4096);
  big.Feed(b.data(), b.size());
  EXPECT_TRUE(big.done());
  EXPECT_NE(big.close_reason().find("over a per-connection limit: frame of "), std::string::npos) << big.close_reason();
  SessionConfig capped;
  capped.limits.max_stream_bytes = 5000;
  Session total(&store, &metrics, capped);
  const std::string t = Hello() + StreamBytes(Identity(4), 200);
  total.Feed(t.data(), t.size());
  EXPECT_NE(total.close_reason().find("stream over the limit of 5000 bytes"), std::string::npos) << total.close_reason();
  EXPECT_EQ(ManifestOf(root + "/job-c", "rank-4.ttr").lost_reason, static_cast<uint32_t>(format::LossReason::kOverLimit));
}

// Every single-byte corruption of a small stream (hello, header, entries, frames): the session never crashes, and
// either refuses, ends with a reason, or (a byte no check covers: reserved hello bytes, the frame's uncompressed
// size the collector does not use) completes; what it stored reads back as whole frames.
TEST(Session, EverySingleByteCorruptionEndsCleanly) {
  const std::string root = TempDir("fuzz");
  const std::string wire = Hello() + StreamBytes(Identity(0), 20, 600);
  int refused = 0, ended = 0, completed = 0;
  for (size_t i = 0; i < wire.size(); i += (i < 400 ? 1 : 7)) {
    StreamStore store(root + "/" + std::to_string(i));
    Metrics metrics;
    std::string bytes = wire;
    bytes[i] ^= 0x5a;
    Session s(&store, &metrics, SessionConfig{});
    s.Feed(bytes.data(), bytes.size());
    if (!s.done()) s.End(true);
    if (s.stream_path().empty())
      ++refused;
    else if (!s.close_reason().empty())
      ++ended;
    else
      ++completed;
  }
  EXPECT_GT(refused, 30);
  EXPECT_GT(ended, 100);
  EXPECT_LT(completed, 30);
}

}  // namespace
}  // namespace ttrace::collector
