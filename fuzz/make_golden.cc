// Writes the golden streams of tests/golden/ and the seeds of fuzz/corpus/ (tests/golden/README.md):
//
//   make_golden OUT_DIR     -> OUT_DIR/good/*.ttr, OUT_DIR/corrupt/*.ttr, OUT_DIR/records/*.rec,
//                              OUT_DIR/handshake/*.bin (what a collector client sends on one connection)
//   make_golden --records STREAM OUT
//                           -> OUT: the frame content of a stream written elsewhere (by libttrace.so: the
//                              fuzz seeds of the golden shim_*.ttr streams)
//
// Good streams are written by the store's TraceWriter with fixed identities (pid 1, start 0), so a rerun writes
// the same bytes as long as the writer and zstd do. Each corrupt stream is one good stream with one damage, the
// checksums recomputed where the damage is to be found by a later check than the checksum. The checked-in files
// are what tests assert on: regenerate them only when the format changes on purpose (then the old ones are what
// an old stream looks like, worth keeping under another name).
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "analyzer/test_util.h"
#include "fuzz/fuzz_stream.h"
#include "store/crc32c.h"
#include "store/trace_writer.h"
#include "ttrace/byte_shuffle.h"
#include "ttrace/format.h"
#include "ttrace/wire.h"

namespace ttrace::fuzz {
namespace {

using analyzer::testing::Encode;
using analyzer::testing::GemmRec;
using format::DType;
using format::FileHeader;
using format::FrameHeader;
using format::RecordType;
using format::TensorSlot;

class Writer {
 public:
  Writer(const std::string& path, int rank, int world) {
    store::StreamIdentity id;
    id.rank = rank;
    id.world_size = world;
    id.local_rank = rank;
    id.pid = 1;
    id.job = "golden";
    id.host = "golden";
    std::string error;
    w_ = store::TraceWriter::Open(path, id, store::WriterOptions{}, &error);
    if (!w_) {
      fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
      exit(1);
    }
  }
  template <typename T>
  void Add(RecordType type, const T& body, const std::string& payload = "") {
    w_->Append(type, body, payload.data(), payload.size());
    ++records_;
  }
  void Tensor(uint64_t seq, TensorSlot slot, DType dtype, int64_t rows, int64_t cols, const std::string& bytes,
              bool shuffled = false) {
    format::TensorRecord t{};
    t.seq = seq;
    t.slot = static_cast<uint8_t>(slot);
    t.dtype = static_cast<uint8_t>(dtype);
    t.rows = rows;
    t.cols = cols;
    t.batch = 1;
    std::string payload = bytes;
    if (shuffled) {
      const uint32_t e = format::DTypeSize(t.dtype);
      format::ShuffleBytes(bytes.data(), bytes.size() / e, e, payload.data());
      t.payload_kind = static_cast<uint8_t>(format::PayloadKind::kShuffled);
    }
    t.payload_bytes = payload.size();
    Add(RecordType::kTensor, t, payload);
    ++tensors_;
  }
  void Flush() { w_->Flush(); }
  void End(uint64_t ops) {
    format::EndRecord e{};
    e.reason = static_cast<uint32_t>(format::EndReason::kExit);
    e.mode = static_cast<uint32_t>(format::CaptureModeId::kFull);
    e.ops = ops;
    e.records = records_;
    e.tensors = tensors_;
    Add(RecordType::kEnd, e);
  }
  void Close() { w_->Close(); }

 private:
  std::unique_ptr<store::TraceWriter> w_;
  uint64_t records_ = 0, tensors_ = 0;
};

// C = A * B, column-major, A m x k, B k x n, small integers: exact in every dtype used here.
void Gemm(Writer& w, uint64_t seq, int m, int n, int k, DType dtype, bool shuffled) {
  std::vector<double> a(m * k), b(k * n), c(m * n, 0);
  for (int i = 0; i < m * k; ++i) a[i] = (i * 7 % 11) - 5;
  for (int i = 0; i < k * n; ++i) b[i] = (i * 5 % 7) - 3;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i)
      for (int l = 0; l < k; ++l) c[i + j * m] += a[i + l * m] * b[l + j * k];
  w.Add(RecordType::kGemm, GemmRec(seq, m, n, k, dtype, dtype));
  w.Tensor(seq, TensorSlot::kA, dtype, m, k, Encode(dtype, a), shuffled);
  w.Tensor(seq, TensorSlot::kB, dtype, k, n, Encode(dtype, b));
  w.Tensor(seq, TensorSlot::kCOut, dtype, m, n, Encode(dtype, c), shuffled);
}

template <typename T>
T Api(T r, format::ApiId api) {
  r.api = static_cast<uint16_t>(api);
  return r;
}

// Rank 0 of 1: every record kind the analyzer checks, in two frames; `ttrace check` calls it clean.
void WriteClean(const std::string& path, bool end = true) {
  Writer w(path, 0, 1);
  format::CommInitRecord init{};
  init.comm_hash = 77;
  init.comm_handle = 0x1000;
  init.comm_rank = 0;
  init.comm_size = 1;
  init.cuda_device = 0;
  w.Add(RecordType::kCommInit, Api(init, format::ApiId::kNcclCommInitRank));
  Gemm(w, 0, 4, 3, 5, DType::kF32, true);
  w.Flush();
  Gemm(w, 1, 2, 2, 3, DType::kBF16, false);
  format::GroupRecord g{};
  g.depth = 1;
  w.Add(RecordType::kGroup, Api(g, format::ApiId::kNcclGroupStart));
  format::CollectiveRecord ar = analyzer::testing::AllReduceRec(2, 77, 0, 0, 1, DType::kF32, 4);
  ar.in_group = 1;
  ar.comm_handle = 0x1000;
  w.Add(RecordType::kCollective, ar);
  const std::string v = Encode(DType::kF32, {1, -2, 3.5, 1e-3f});
  w.Tensor(2, TensorSlot::kSend, DType::kF32, 4, 1, v);
  w.Tensor(2, TensorSlot::kRecv, DType::kF32, 4, 1, v);
  g.depth = 0;
  w.Add(RecordType::kGroup, Api(g, format::ApiId::kNcclGroupEnd));
  format::CommDestroyRecord d{};
  d.comm_hash = 77;
  d.comm_handle = 0x1000;
  w.Add(RecordType::kCommDestroy, Api(d, format::ApiId::kNcclCommDestroy));
  if (end) w.End(3);
  w.Close();
}

// Records the analyzer reads but cannot check from what they hold, a notice, a type it does not know.
void WriteUncheckable(const std::string& path) {
  Writer w(path, 0, 1);
  const std::string message = "tensor dropped: ring full";
  format::NoticeRecord n{};
  n.code = static_cast<uint32_t>(format::NoticeCode::kPayloadDropped);
  n.message_bytes = static_cast<uint32_t>(message.size());
  n.seq = 0;
  n.count = 1;
  n.reason = 1;
  w.Add(RecordType::kNotice, n, message);
  w.Add(RecordType::kGemm, GemmRec(0, 8, 8, 8, DType::kF32, DType::kF32));
  format::LtMatmulRecord lt{};
  lt.seq = 1;
  w.Add(RecordType::kLtMatmul, Api(lt, format::ApiId::kCublasLtMatmul));
  format::ConvRecord conv{};
  conv.seq = 2;
  w.Add(RecordType::kConv, conv);
  format::BackendGraphRecord graph{};
  graph.seq = 3;
  w.Add(RecordType::kBackendGraph, graph);
  struct Future {
    uint64_t a, b;
  } future{1, 2};
  w.Add(static_cast<RecordType>(999), future);
  w.End(4);
  w.Close();
}

std::string Read(const std::string& path) {
  std::string bytes;
  FILE* f = fopen(path.c_str(), "rb");
  char buf[1 << 16];
  size_t n;
  while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  if (f) fclose(f);
  return bytes;
}

// Offsets of the frame headers of a well-formed stream.
std::vector<size_t> Frames(const std::string& s) {
  std::vector<size_t> at;
  for (size_t pos = sizeof(FileHeader); pos + sizeof(FrameHeader) <= s.size();) {
    FrameHeader fh;
    memcpy(&fh, s.data() + pos, sizeof fh);
    at.push_back(pos);
    pos += sizeof fh + fh.compressed_size;
  }
  return at;
}

void EditFileHeader(std::string* s, const std::function<void(FileHeader*)>& edit, bool fix_crc = true) {
  FileHeader h;
  memcpy(&h, s->data(), sizeof h);
  edit(&h);
  if (fix_crc) h.header_crc = store::Crc32c(&h, offsetof(FileHeader, header_crc));
  memcpy(s->data(), &h, sizeof h);
}

void EditFrame(std::string* s, size_t at, const std::function<void(FrameHeader*)>& edit, bool fix_crc = true) {
  FrameHeader fh;
  memcpy(&fh, s->data() + at, sizeof fh);
  edit(&fh);
  if (fix_crc) fh.header_crc = store::Crc32c(&fh, offsetof(FrameHeader, header_crc));
  memcpy(s->data() + at, &fh, sizeof fh);
}

void Put(const std::string& path, const std::string& bytes) {
  if (!WriteFile(path, bytes)) {
    fprintf(stderr, "cannot write %s\n", path.c_str());
    exit(1);
  }
}

std::string RecordBytes(RecordType type, const void* body, size_t body_bytes, const std::string& payload = "") {
  format::RecordHeader rh;
  rh.type = static_cast<uint16_t>(type);
  rh.body_offset = sizeof rh;
  rh.size = static_cast<uint32_t>(sizeof rh + body_bytes + payload.size());
  std::string r(reinterpret_cast<const char*>(&rh), sizeof rh);
  r.append(static_cast<const char*>(body), body_bytes);
  return r + payload;
}

// ---- Collector connections (fuzz_collector_session, fuzz/collector_session_fuzzer.cc) --------------------------

constexpr char kCollectorToken[] = "fuzz-token";  // what the harness's collector requires

std::string HelloBytes(const std::string& token = kCollectorToken, uint32_t version = wire::kProtocolVersion,
                       uint32_t extra = 0) {
  wire::Hello h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, wire::kHelloMagic, sizeof h.magic);
  h.version = version;
  h.hello_size = static_cast<uint32_t>(sizeof h + extra);
  h.token_bytes = static_cast<uint32_t>(token.size());
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + std::string(extra, '\x5a') + token;
}

// A stream as a client sends it after its hello: the stream header, then each frame preceded by its index entry
// (from the stream's .idx written beside it, offset 0 as on the wire). `entries` and `frames` get the offsets.
std::string WireStream(const std::string& path, std::vector<size_t>* entries = nullptr,
                       std::vector<size_t>* frames = nullptr) {
  const std::string stream = Read(path), index = Read(path + ".idx");
  const std::vector<size_t> at = Frames(stream);
  if (index.size() != sizeof(format::IndexHeader) + at.size() * sizeof(format::IndexEntry)) {
    fprintf(stderr, "%s: the index does not list its %zu frames\n", path.c_str(), at.size());
    exit(1);
  }
  std::string out = stream.substr(0, sizeof(FileHeader));
  for (size_t i = 0; i < at.size(); ++i) {
    format::IndexEntry e;
    memcpy(&e, index.data() + sizeof(format::IndexHeader) + i * sizeof e, sizeof e);
    e.offset = 0;
    e.entry_crc = store::Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
    if (entries) entries->push_back(out.size());
    out.append(reinterpret_cast<const char*>(&e), sizeof e);
    if (frames) frames->push_back(out.size());
    const size_t end = i + 1 < at.size() ? at[i + 1] : stream.size();
    out.append(stream, at[i], end - at[i]);
  }
  return out;
}

// Rank 0 of 1 with `frames` frames, each a GEMM record and an incompressible tensor of `bytes` bytes, then an end
// record: frames that reach the harness's frame and stream limits.
void WriteBig(const std::string& path, int frames, size_t bytes) {
  Writer w(path, 0, 1);
  uint32_t x = 12345;
  for (int f = 0; f < frames; ++f) {
    w.Add(RecordType::kGemm, GemmRec(f, 1, 1, 1, DType::kF32, DType::kF32));
    std::string noise(bytes, '\0');
    for (char& c : noise) c = static_cast<char>((x = x * 1664525u + 1013904223u) >> 24);
    w.Tensor(f, TensorSlot::kA, DType::kU8, static_cast<int64_t>(bytes), 1, noise);
    w.Flush();
  }
  w.End(frames);
  w.Close();
}

void WriteHandshakeSeeds(const std::string& out) {
  const std::string dir = out + "/handshake/", scratch = out + "/handshake-streams/";
  mkdir(scratch.c_str(), 0755);
  const std::string good = out + "/good/";
  std::vector<size_t> entries, frames;
  const std::string clean = WireStream(good + "clean.ttr", &entries, &frames);
  const std::string hello = HelloBytes();
  Put(dir + "clean.bin", hello + clean);
  Put(dir + "no_end.bin", hello + WireStream(good + "no_end.ttr"));
  Put(dir + "uncheckable.bin", hello + WireStream(good + "uncheckable.ttr"));
  Put(dir + "hello_larger.bin", HelloBytes(kCollectorToken, wire::kProtocolVersion, 16) + clean);
  Put(dir + "no_token.bin", HelloBytes("") + clean);
  Put(dir + "bad_token.bin", HelloBytes("fuzz-tokem") + clean);
  Put(dir + "token_too_long.bin", HelloBytes(std::string(wire::kMaxTokenBytes + 1, 't')) + clean);
  Put(dir + "version_2.bin", HelloBytes(kCollectorToken, 2) + clean);
  Put(dir + "not_a_client.bin", "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
  Put(dir + "cut_hello.bin", hello.substr(0, 20));
  Put(dir + "cut_header.bin", hello + clean.substr(0, 100));
  Put(dir + "cut_entry.bin", hello + clean.substr(0, entries[1] + 20));
  Put(dir + "cut_frame_header.bin", hello + clean.substr(0, frames[1] + 10));
  Put(dir + "cut_payload.bin", hello + clean.substr(0, clean.size() - 5));
  auto header = [&](const std::string& name, const std::function<void(FileHeader*)>& edit) {
    std::string s = clean;
    EditFileHeader(&s, edit);
    Put(dir + name + ".bin", hello + s);
  };
  header("header_version_2", [](FileHeader* h) { h->version = 2; });
  header("job_traversal", [](FileHeader* h) { strcpy(h->job, "../etc"); });
  header("pid_stream", [](FileHeader* h) {
    h->rank = -1;
    strcpy(h->host, "node-7");
  });
  header("pid_stream_bad_host", [](FileHeader* h) {
    h->rank = -1;
    strcpy(h->host, "a/b");
  });
  auto entry = [&](const std::string& name, size_t i, const std::function<void(format::IndexEntry*)>& edit) {
    std::string s = clean;
    format::IndexEntry e;
    memcpy(&e, s.data() + entries[i], sizeof e);
    edit(&e);
    e.entry_crc = store::Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
    memcpy(s.data() + entries[i], &e, sizeof e);
    Put(dir + name + ".bin", hello + s);
  };
  entry("entry_record_count", 1, [](format::IndexEntry* e) { e->record_count += 1; });
  entry("entry_seq_range", 0, [](format::IndexEntry* e) {
    e->seq_records = 1;
    e->min_seq = 5;
    e->max_seq = 4;
  });
  {
    std::string s = clean;
    s[entries[1] + offsetof(format::IndexEntry, min_seq)] ^= 1;  // checksum left stale
    Put(dir + "entry_crc.bin", hello + s);
  }
  {
    std::string s = clean;
    s[frames[1] + sizeof(FrameHeader) + 20] ^= 0x10;
    Put(dir + "payload_bitflip.bin", hello + s);
  }
  {  // frame 1 says it is frame 7, and so does its entry
    std::string s = clean;
    EditFrame(&s, frames[1], [](FrameHeader* fh) { fh->frame_index = 7; });
    format::IndexEntry e;
    memcpy(&e, s.data() + entries[1], sizeof e);
    FrameHeader fh;
    memcpy(&fh, s.data() + frames[1], sizeof fh);
    e.frame_index = 7;
    e.frame_header_crc = fh.header_crc;
    e.entry_crc = store::Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
    memcpy(s.data() + entries[1], &e, sizeof e);
    Put(dir + "frame_index_skip.bin", hello + s);
  }
  {  // the last frame's payload is not zstd, behind a valid checksum: stored, but the stream has no end record
    std::string s = clean;
    const size_t p = frames[1] + sizeof(FrameHeader);
    for (size_t i = p; i < s.size(); ++i) s[i] = static_cast<char>(i * 37 + 11);
    EditFrame(&s, frames[1], [&](FrameHeader* fh) { fh->payload_crc = store::Crc32c(s.data() + p, s.size() - p); });
    format::IndexEntry e;
    memcpy(&e, s.data() + entries[1], sizeof e);
    FrameHeader fh;
    memcpy(&fh, s.data() + frames[1], sizeof fh);
    e.frame_header_crc = fh.header_crc;
    e.entry_crc = store::Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
    memcpy(s.data() + entries[1], &e, sizeof e);
    Put(dir + "zstd_garbage_last.bin", hello + s);
  }
  WriteBig(scratch + "big_frame.ttr", 1, 20 << 10);  // over the harness's 16 KiB frame limit
  Put(dir + "frame_over_limit.bin", hello + WireStream(scratch + "big_frame.ttr"));
  WriteBig(scratch + "many_frames.ttr", 6, 10 << 10);  // 6 frames of ~10 KiB: over its 48 KiB stream limit
  Put(dir + "stream_over_limit.bin", hello + WireStream(scratch + "many_frames.ttr"));
}

int Main(const std::string& out) {
  for (const char* sub : {"", "/good", "/corrupt", "/records", "/handshake"}) mkdir((out + sub).c_str(), 0755);
  const std::string good = out + "/good/", bad = out + "/corrupt/";
  WriteClean(good + "clean.ttr");
  WriteClean(good + "no_end.ttr", /*end=*/false);
  WriteUncheckable(good + "uncheckable.ttr");
  {
    Writer w(bad + "rank_beyond_world.ttr", 5, 2);  // rank 5 of a world of 2
    Gemm(w, 0, 2, 2, 2, DType::kF32, false);
    w.End(1);
    w.Close();
  }

  const std::string clean = Read(good + "clean.ttr");
  const std::vector<size_t> frames = Frames(clean);
  if (frames.size() != 2) {
    fprintf(stderr, "clean.ttr has %zu frames, expected 2\n", frames.size());
    return 1;
  }
  const size_t f1 = frames[1];
  auto damaged = [&](const std::string& name, const std::function<void(std::string*)>& damage) {
    std::string s = clean;
    damage(&s);
    Put(bad + name + ".ttr", s);
  };
  damaged("bad_magic", [](std::string* s) { (*s)[0] = 'X'; });
  damaged("short_header", [](std::string* s) { s->resize(100); });
  damaged("header_crc", [](std::string* s) { (*s)[offsetof(FileHeader, job)] ^= 1; });
  damaged("version_2", [](std::string* s) { EditFileHeader(s, [](FileHeader* h) { h->version = 2; }); });
  damaged("header_size", [](std::string* s) { EditFileHeader(s, [](FileHeader* h) { h->header_size = 1 << 20; }); });
  damaged("frame_magic", [&](std::string* s) { (*s)[f1] ^= 0x40; });
  damaged("frame_header_crc", [&](std::string* s) { (*s)[f1 + offsetof(FrameHeader, record_count)] ^= 1; });
  damaged("frame_too_large", [&](std::string* s) {
    EditFrame(s, f1, [](FrameHeader* fh) { fh->uncompressed_size = format::kMaxFrameBytes + 1; });
  });
  damaged("frame_index", [&](std::string* s) { EditFrame(s, f1, [](FrameHeader* fh) { fh->frame_index = 7; }); });
  damaged("payload_bitflip", [&](std::string* s) { (*s)[f1 + sizeof(FrameHeader) + 20] ^= 0x10; });
  damaged("uncompressed_size", [&](std::string* s) {
    EditFrame(s, f1, [](FrameHeader* fh) { fh->uncompressed_size += 1; });
  });
  damaged("record_count", [&](std::string* s) { EditFrame(s, f1, [](FrameHeader* fh) { fh->record_count += 1; }); });
  damaged("zstd_garbage", [&](std::string* s) {
    const size_t p = f1 + sizeof(FrameHeader);
    for (size_t i = p; i < s->size(); ++i) (*s)[i] = static_cast<char>(i * 37 + 11);
    EditFrame(s, f1, [&](FrameHeader* fh) { fh->payload_crc = store::Crc32c(s->data() + p, s->size() - p); });
  });
  damaged("cut_frame_header", [&](std::string* s) { s->resize(f1 + 10); });
  damaged("cut_frame_payload", [&](std::string* s) { s->resize(s->size() - 5); });

  // Frame content damage: records that the framing cannot catch.
  {
    format::GemmRecord g = GemmRec(0, 2, 2, 2, DType::kF32, DType::kF32);
    std::string r = RecordBytes(RecordType::kGemm, &g, sizeof g);
    format::RecordHeader rh;
    memcpy(&rh, r.data(), sizeof rh);
    rh.size += 1000;  // crosses the frame end
    memcpy(r.data(), &rh, sizeof rh);
    Put(bad + "record_crosses_frame.ttr", WrapRecords(RecordBytes(RecordType::kGemm, &g, sizeof g) + r));

    format::TensorRecord t{};
    t.slot = static_cast<uint8_t>(TensorSlot::kA);
    t.dtype = static_cast<uint8_t>(DType::kF32);
    t.rows = t.cols = t.batch = 1;
    t.payload_bytes = 4096;  // the record holds 4
    Put(bad + "payload_crosses_record.ttr", WrapRecords(RecordBytes(RecordType::kGemm, &g, sizeof g) +
                                                        RecordBytes(RecordType::kTensor, &t, sizeof t, "abcd")));
  }

  // Record seeds for the fuzzers: the content of every good stream.
  for (const char* name : {"clean", "no_end", "uncheckable"})
    Put(out + "/records/" + name + ".rec", RecordsOf(Read(good + name + ".ttr")));
  WriteHandshakeSeeds(out);
  return 0;
}

}  // namespace
}  // namespace ttrace::fuzz

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "--records") == 0) {
    const std::string records = ttrace::fuzz::RecordsOf(ttrace::fuzz::Read(argv[2]));
    if (records.empty()) {
      fprintf(stderr, "make_golden: %s holds no records\n", argv[2]);
      return 1;
    }
    ttrace::fuzz::Put(argv[3], records);
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: make_golden OUT_DIR | make_golden --records STREAM OUT\n");
    return 2;
  }
  return ttrace::fuzz::Main(argv[1]);
}
