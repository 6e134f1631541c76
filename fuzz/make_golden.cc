// Writes the golden streams of tests/golden/ and the record seeds of fuzz/corpus/ (tests/golden/README.md):
//
//   make_golden OUT_DIR     -> OUT_DIR/good/*.ttr, OUT_DIR/corrupt/*.ttr, OUT_DIR/records/*.rec
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

int Main(const std::string& out) {
  for (const char* sub : {"", "/good", "/corrupt", "/records"}) mkdir((out + sub).c_str(), 0755);
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
  return 0;
}

}  // namespace
}  // namespace ttrace::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_golden OUT_DIR\n");
    return 2;
  }
  return ttrace::fuzz::Main(argv[1]);
}
