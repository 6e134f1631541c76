// A frame is compressed in one ZSTD_compress2 call on the writer's one context: frames are a few MiB, so streaming
// compression would buy nothing but state. The window covers the whole frame (zstd's defaults for 4 MiB inputs are
// 512 KiB at level 1 and 2 MiB at level 3): a tensor captured twice in one frame (a weight read by a forward and a
// backward GEMM, an activation read again for the weight gradient) is found wherever the two copies lie; with the
// default windows the second copy was stored again whenever it lay farther back, which made the float-coded gpt
// trace larger than the byte-shuffled one. The window alone is not enough at level 1: its 2^13-entry hash table
// (zstd's choice for inputs over 256 KiB) has forgotten the first copy by the time the second arrives 3 MiB later,
// so below level 3 the table has 2^17 entries, as level 3's has (measured: 6% slower at level 1, 1.0 instead of
// 0.6 MB of context). A one-shot compression's tables are sized by these logs, not by the window, so the wider
// window costs no memory; decoders take it (a frame up to 128 MiB: windowLog 27, zstd's default decoder limit). The compressed bytes land right after room for their FrameHeader, so a frame leaves as
// one buffer. Nothing here allocates per record beyond the frame buffer's growth; the index range costs a switch.
#include "store/trace_writer.h"

#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "store/crc32c.h"
#include "store/stream_file.h"

namespace ttrace::store {
namespace {

// A zstd frame of raw blocks holding `n` bytes (RFC 8878 3.1.1): any zstd decoder reads it back at memcpy speed.
// Header: magic; descriptor 0x80 (a 4-byte content size, no single segment, checksum or dictionary); window
// descriptor 0x38 (2^17 bytes, so blocks of up to 128 KiB); the content size. Each block: a 3-byte header
// (bit 0 last block, bits 1-2 type 0 = raw, bits 3-23 size), then its bytes.
constexpr size_t kRawBlock = 128u << 10;
constexpr int kMinWindowLog = 10;  // zstd's smallest window
constexpr int kMaxWindowLog = 27;  // ZSTD_WINDOWLOG_LIMIT_DEFAULT: what any decoder takes without being told
constexpr int kMinHashLog = 17;    // levels 3 and up have at least this; level 1 has 2^13 entries for a large input
// The trial over a coded frame: zstd level -4, frame-wide where a payload repeats (the copies may lie megabytes
// apart), with the level's own window and table elsewhere (smooth data repeats nearby). The level is the fastest
// whose whole gpt traces grow by at most 0.25% and whose smooth coded data loses at most 10% of its ratio against
// level -1 (codec23's level; measured: traces +0.24% BF16, +0.06% FP32; smooth rows' ratio -1.8% to -9.3%, written
// 4-12% faster; -5 loses 12.2% on smooth BF16) (docs/codec.md, "The trial's level").
constexpr int kTrialLevel = -4;
constexpr size_t kMinRepeatBytes = 256;     // smaller coded payloads are not fingerprinted: repeats save little
constexpr size_t kSampleChunk = 32u << 10;  // the trial's sample: one chunk of this many bytes ...
constexpr size_t kSampleEvery = 512u << 10; // ... per this many bytes of the frame
size_t RawZstdBound(size_t n) { return 10 + 3 * (n / kRawBlock + 1) + n; }
size_t RawZstdFrame(const char* src, size_t n, char* dst) {
  char* o = dst;
  const uint32_t magic = 0xFD2FB528u, size = static_cast<uint32_t>(n);
  memcpy(o, &magic, 4);
  o[4] = static_cast<char>(0x80);
  o[5] = 0x38;
  memcpy(o + 6, &size, 4);
  o += 10;
  size_t pos = 0;
  do {
    const size_t b = std::min(n - pos, kRawBlock);
    const uint32_t header = (pos + b == n ? 1u : 0u) | static_cast<uint32_t>(b) << 3;
    o[0] = static_cast<char>(header);
    o[1] = static_cast<char>(header >> 8);
    o[2] = static_cast<char>(header >> 16);
    memcpy(o + 3, src + pos, b);
    o += 3 + b;
    pos += b;
  } while (pos < n);
  return static_cast<size_t>(o - dst);
}

void CopyPadded(char* dst, size_t n, const std::string& src) {
  memset(dst, 0, n);
  memcpy(dst, src.data(), src.size() < n - 1 ? src.size() : n - 1);
}

static_assert(offsetof(format::GemmRecord, seq) == 0 && offsetof(format::CollectiveRecord, seq) == 0 &&
              offsetof(format::TensorRecord, seq) == 0 && offsetof(format::LtMatmulRecord, seq) == 0 &&
              offsetof(format::ConvRecord, seq) == 0 && offsetof(format::BackendGraphRecord, seq) == 0 &&
              offsetof(format::NoticeRecord, seq) == 8);

}  // namespace

format::FileHeader MakeFileHeader(const StreamIdentity& id) {
  format::FileHeader h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, format::kFileMagic, sizeof h.magic);
  h.version = format::kFormatVersion;
  h.header_size = sizeof h;
  h.rank = id.rank;
  h.world_size = id.world_size;
  h.local_rank = id.local_rank;
  h.pid = id.pid;
  h.start_unix_ns = id.start_unix_ns;
  CopyPadded(h.job, sizeof h.job, id.job);
  CopyPadded(h.host, sizeof h.host, id.host);
  h.flags = id.flags;
  h.header_crc = Crc32c(&h, offsetof(format::FileHeader, header_crc));
  return h;
}

uint64_t RecordSeq(format::RecordType type, const void* body, size_t body_bytes) {
  size_t at;
  switch (type) {
    case format::RecordType::kGemm:
    case format::RecordType::kCollective:
    case format::RecordType::kTensor:
    case format::RecordType::kLtMatmul:
    case format::RecordType::kConv:
    case format::RecordType::kBackendGraph:
    case format::RecordType::kContext:
      at = 0;
      break;
    case format::RecordType::kNotice:
      at = offsetof(format::NoticeRecord, seq);
      break;
    default:
      return format::kNoSeq;
  }
  if (body_bytes < at + sizeof(uint64_t)) return format::kNoSeq;
  uint64_t seq;
  memcpy(&seq, static_cast<const char*>(body) + at, sizeof seq);
  return seq;
}

std::unique_ptr<TraceWriter> TraceWriter::Open(const std::string& path, const StreamIdentity& id,
                                               const WriterOptions& options, std::string* error) {
  std::unique_ptr<StreamFile> file = StreamFile::Create(path, StreamFileOptions{}, error);
  if (file == nullptr) return nullptr;
  return Create(std::move(file), id, options, error);
}

std::unique_ptr<TraceWriter> TraceWriter::Create(std::unique_ptr<StreamOutput> output, const StreamIdentity& id,
                                                 const WriterOptions& options, std::string* error) {
  const format::FileHeader h = MakeFileHeader(id);
  if (!output->Begin(h, error)) {
    output->Finish(StreamSummary{}, nullptr);
    return nullptr;
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter(std::move(output), options));
  w->summary_.bytes = sizeof h;
  return w;
}

void TraceWriter::Buffer::Reserve(size_t n) {
  if (n <= capacity_) return;
  std::unique_ptr<char[]> bigger(new char[n]);  // default-initialized: not zero-filled
  if (size_ > 0) memcpy(bigger.get(), data_.get(), size_);
  data_ = std::move(bigger);
  capacity_ = n;
}

char* TraceWriter::Buffer::Append(size_t n) {
  if (size_ + n > capacity_) Reserve(std::max(size_ + n, 2 * capacity_));
  char* at = data_.get() + size_;
  size_ += n;
  return at;
}

TraceWriter::TraceWriter(std::unique_ptr<StreamOutput> output, const WriterOptions& options)
    : output_(std::move(output)), options_(options) {
  pending_.Reserve(options_.frame_bytes + (64u << 10));
}

TraceWriter::~TraceWriter() {
  Close(nullptr);
  ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
}

bool TraceWriter::Fail(const std::string& message, std::string* error) {
  if (failed_.empty()) failed_ = message;
  if (error) *error = failed_;
  return false;
}

bool TraceWriter::Append(format::RecordType type, const void* body, size_t body_bytes, const void* payload,
                         size_t payload_bytes, std::string* error) {
  if (!failed_.empty() || finished_) return Fail(failed_.empty() ? "writer closed" : failed_, error);
  const size_t total = sizeof(format::RecordHeader) + body_bytes + payload_bytes;
  if (total > format::kMaxFrameBytes) {
    if (error) *error = "record of " + std::to_string(total) + " bytes exceeds the frame limit";
    return false;  // the record is refused, the stream stays usable
  }
  if (!pending_.empty() && pending_.size() + total > format::kMaxFrameBytes && !Flush(error)) return false;
  format::RecordHeader rh;
  rh.type = static_cast<uint16_t>(type);
  rh.body_offset = sizeof rh;
  rh.size = static_cast<uint32_t>(total);
  if (type == format::RecordType::kTensor && body_bytes >= offsetof(format::TensorRecord, payload_kind) + 1 &&
      static_cast<const uint8_t*>(body)[offsetof(format::TensorRecord, payload_kind)] ==
          static_cast<uint8_t>(format::PayloadKind::kFloatCoded)) {
    precoded_bytes_ += payload_bytes;
    NoteCodedPayload(static_cast<const char*>(payload), payload_bytes);
  }
  char* at = pending_.Append(total);
  memcpy(at, &rh, sizeof rh);
  memcpy(at + sizeof rh, body, body_bytes);
  if (payload_bytes) memcpy(at + sizeof rh + body_bytes, payload, payload_bytes);
  ++pending_records_;
  const uint64_t seq = RecordSeq(type, body, body_bytes);
  if (seq != format::kNoSeq) {
    pending_min_seq_ = std::min(pending_min_seq_, seq);
    pending_max_seq_ = std::max(pending_max_seq_, seq);
    ++pending_seq_records_;
  }
  if (type == format::RecordType::kEnd) {
    summary_.has_end = true;
    memset(&summary_.end, 0, sizeof summary_.end);
    memcpy(&summary_.end, body, std::min(body_bytes, sizeof summary_.end));
  }
  if (pending_.size() >= options_.frame_bytes) return Flush(error);
  return true;
}

void TraceWriter::NoteCodedPayload(const char* payload, size_t bytes) {
  if (repeat_ || bytes < kMinRepeatBytes) return;
  // FNV-style mix of the size and 16 words spread over the payload plus its last word: equal payloads always
  // match; different ones of one size match only if all 17 words do (coded bytes are dense: next to never).
  uint64_t h = 0xcbf29ce484222325ull ^ bytes;
  for (int i = 0; i <= 16; ++i) {
    uint64_t w;
    memcpy(&w, payload + (i == 16 ? bytes - 8 : (bytes - 8) / 16 * i), 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  if (h == 0) h = 1;  // 0 marks a free slot
  if (prints_used_ * 4 >= kPrints * 3) {
    repeat_ = true;  // too many payloads to tell: let the trial decide
    return;
  }
  for (size_t i = h % kPrints;; i = (i + 1) % kPrints) {
    if (prints_[i] == h) {
      repeat_ = true;
      return;
    }
    if (prints_[i] == 0) {
      prints_[i] = h;
      ++prints_used_;
      return;
    }
  }
}

bool TraceWriter::SampleSaves(char* dst, size_t room) {
  ZSTD_CCtx* cctx = static_cast<ZSTD_CCtx*>(cctx_);
  if (cctx == nullptr && (cctx_ = cctx = ZSTD_createCCtx()) == nullptr) return true;  // the trial will tell
  const size_t n = pending_.size(), chunk = std::min(n, kSampleChunk), k = std::max<size_t>(1, n / kSampleEvery);
  size_t in = 0, out = 0;
  for (size_t i = 0; i < k; ++i) {
    const size_t at = n / k * i + (n / k - chunk) / 2;
    const size_t c = ZSTD_compressCCtx(cctx, dst, room, pending_.data() + at, chunk, 1);
    if (ZSTD_isError(c)) return true;
    in += chunk;
    out += c;
  }
  return out * 16 < in * 15;
}

size_t TraceWriter::Compress(char* dst, size_t room, int level, bool frame_wide) {
  ZSTD_CCtx* cctx = static_cast<ZSTD_CCtx*>(cctx_);
  if (cctx == nullptr && (cctx_ = cctx = ZSTD_createCCtx()) == nullptr)
    return ZSTD_compress(dst, room, pending_.data(), pending_.size(), level);  // out of memory: the default window
  int window_log = kMinWindowLog;
  while (window_log < kMaxWindowLog && (size_t{1} << window_log) < pending_.size()) ++window_log;
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  if (frame_wide) {
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, window_log);
    if (level < 3) ZSTD_CCtx_setParameter(cctx, ZSTD_c_hashLog, kMinHashLog);
  }
  return ZSTD_compress2(cctx, dst, room, pending_.data(), pending_.size());
}

bool TraceWriter::Flush(std::string* error) {
  if (!failed_.empty()) return Fail(failed_, error);
  if (pending_.empty() || finished_) return true;
  constexpr size_t kHead = sizeof(format::FrameHeader);
  const size_t bound = kHead + std::max(ZSTD_compressBound(pending_.size()), RawZstdBound(pending_.size()));
  if (compressed_.size() < bound) compressed_.resize(bound);
  char* body = compressed_.data() + kHead;
  const size_t room = compressed_.size() - kHead;
  size_t n;
  if (precoded_bytes_ * 8 >= pending_.size() * 7) {
    // Mostly float-coded payloads, entropy-coded already: zstd at level -4 over the whole frame still finds what the
    // codec, tensor by tensor, cannot (a tensor captured twice in one frame, as a weight read by a forward and a
    // backward GEMM; smooth data); kept when it saves at least 1/32, else the frame is stored in raw blocks.
    // The trial costs about as much as coding the frame did; it runs only where a payload may repeat (frame-wide)
    // or where samples of the frame compress (docs/codec.md, "The writer's trial, gated").
    const bool trial = repeat_ || SampleSaves(body, room);
    n = trial ? Compress(body, room, kTrialLevel, repeat_) : 0;
    ++coded_frames_;
    zstd_trials_ += trial;
    if (!trial || ZSTD_isError(n) || n * 32 > pending_.size() * 31)
      n = RawZstdFrame(pending_.data(), pending_.size(), body);
    else
      ++zstd_trials_kept_;
  } else {
    n = Compress(body, room, options_.zstd_level);
  }
  if (ZSTD_isError(n)) return Fail(std::string("zstd: ") + ZSTD_getErrorName(n), error);
  if (n > format::kMaxFrameBytes) return Fail("compressed frame exceeds the frame limit", error);
  format::FrameHeader fh;
  fh.magic = format::kFrameMagic;
  fh.frame_index = frame_index_;
  fh.compressed_size = static_cast<uint32_t>(n);
  fh.uncompressed_size = static_cast<uint32_t>(pending_.size());
  fh.record_count = pending_records_;
  fh.payload_crc = Crc32c(compressed_.data() + kHead, n);
  fh.reserved = 0;
  fh.header_crc = Crc32c(&fh, offsetof(format::FrameHeader, header_crc));
  memcpy(compressed_.data(), &fh, kHead);
  format::IndexEntry e;
  memset(&e, 0, sizeof e);
  e.frame_index = frame_index_;
  e.record_count = pending_records_;
  e.min_seq = pending_min_seq_;
  e.max_seq = pending_max_seq_;
  e.compressed_size = fh.compressed_size;
  e.frame_header_crc = fh.header_crc;
  e.seq_records = pending_seq_records_;
  std::string why;
  if (!output_->WriteFrame(compressed_.data(), kHead + n, e, &why)) return Fail(why, error);
  ++frame_index_;
  ++summary_.frames;
  summary_.bytes += kHead + n;
  summary_.records += pending_records_;
  pending_records_ = 0;
  precoded_bytes_ = 0;
  if (prints_used_ > 0) memset(prints_, 0, sizeof prints_);
  prints_used_ = 0;
  repeat_ = false;
  pending_min_seq_ = format::kNoSeq;
  pending_max_seq_ = 0;
  pending_seq_records_ = 0;
  pending_.clear();
  return true;
}

bool TraceWriter::Close(std::string* error) {
  if (finished_) return failed_.empty() || Fail(failed_, error);
  bool ok = Flush(error);
  finished_ = true;
  std::string why;
  if (!output_->Finish(summary_, &why) && ok) ok = Fail(why, error);
  return ok;
}

}  // namespace ttrace::store
