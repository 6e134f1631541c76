// Frames are read whole (bounded by kMaxFrameBytes) and decompressed into one buffer; records are views into it.
// The checks run in the order that keeps every later read in bounds: header checksum, sizes against limits,
// payload checksum, decompressed size, then each record's size against what is left of the frame.
#include "store/trace_reader.h"

#include <sys/mman.h>
#include <zstd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "store/crc32c.h"

namespace ttrace::store {

using format::FileHeader;
using format::FrameHeader;
using format::RecordHeader;

uint64_t PayloadBytes(format::RecordType type, absl::string_view body) {
  RecordView v{type, body, {}};
  switch (type) {
    case format::RecordType::kTensor:
      return v.Body<format::TensorRecord>().payload_bytes;
    case format::RecordType::kNotice:
      return v.Body<format::NoticeRecord>().message_bytes;
    case format::RecordType::kBackendGraph:
      return v.Body<format::BackendGraphRecord>().payload_bytes;
    case format::RecordType::kName:
      return v.Body<format::NameRecord>().name_bytes;
    case format::RecordType::kContext: {
      const auto c = v.Body<format::ContextRecord>();
      return uint64_t{c.kernel_entries} * sizeof(format::ContextKernel) + uint64_t{c.nvtx_entries} * sizeof(uint32_t);
    }
    default:
      return 0;
  }
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path,
                                                               const ReaderOptions& options) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", strerror(errno)));
  std::unique_ptr<TraceReader> r(new TraceReader(path, f, options));
  FileHeader& h = r->header_;
  if (fread(&h, 1, sizeof h, f) != sizeof h)
    return absl::DataLossError(absl::StrCat(path, ": not a ttrace stream (shorter than its header)"));
  if (memcmp(h.magic, format::kFileMagic, sizeof h.magic) != 0)
    return absl::DataLossError(absl::StrCat(path, ": not a ttrace stream (bad magic)"));
  if (Crc32c(&h, offsetof(FileHeader, header_crc)) != h.header_crc)
    return absl::DataLossError(absl::StrCat(path, ": file header checksum mismatch"));
  if (h.version != format::kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat(path, ": format version ", h.version,
                                                      ", this reader reads version ", format::kFormatVersion));
  if (h.header_size < sizeof h || h.header_size > 4096)
    return absl::DataLossError(absl::StrCat(path, ": bad header size ", h.header_size));
  h.job[sizeof h.job - 1] = '\0';
  h.host[sizeof h.host - 1] = '\0';
  r->offset_ = h.header_size;
  if (fseeko(f, static_cast<off_t>(r->offset_), SEEK_SET) != 0)
    return absl::DataLossError(absl::StrCat(path, ": cannot seek past the header"));
  return r;
}

TraceReader::TraceReader(std::string path, FILE* file, const ReaderOptions& options)
    : path_(std::move(path)), file_(file), options_(options) {}

TraceReader::~TraceReader() {
  fclose(file_);
  ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_));
}

void AdviseHugePages(void* p, size_t n) {
  constexpr uintptr_t kHuge = uintptr_t{1} << 21;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

absl::Status TraceReader::Corrupt(const std::string& what) const {
  return absl::DataLossError(
      absl::StrCat(path_, ": corrupt stream at frame ", frames_read_, " (byte ", offset_, "): ", what));
}

absl::Status TraceReader::CorruptRecord(const std::string& what) const {
  return absl::DataLossError(absl::StrCat(path_, ": corrupt stream at frame ", frames_read_ - 1, " (byte ",
                                          frame_offset_, "): ", what));
}

// Reads the frame at offset_. Returns false at a clean end of stream (or an allowed truncation).
absl::StatusOr<bool> TraceReader::ReadFrame() {
  FrameHeader fh;
  size_t got = fread(&fh, 1, sizeof fh, file_);
  if (got == 0 && feof(file_)) return false;
  auto truncated = [&](const std::string& what) -> absl::StatusOr<bool> {
    truncation_ = absl::StrCat(path_, ": stream ends inside frame ", frames_read_, " (byte ", offset_, ", ", what,
                               "); ", frames_read_, " complete frames");
    if (!options_.allow_truncated) return absl::DataLossError(absl::StrCat("truncated stream: ", truncation_));
    truncated_ = true;
    return false;
  };
  if (got != sizeof fh) return truncated("partial frame header");
  if (fh.magic != format::kFrameMagic) return Corrupt("bad frame magic");
  if (Crc32c(&fh, offsetof(FrameHeader, header_crc)) != fh.header_crc)
    return Corrupt("frame header checksum mismatch");
  if (fh.compressed_size > format::kMaxFrameBytes || fh.uncompressed_size > format::kMaxFrameBytes)
    return Corrupt("frame larger than the format allows");
  if (fh.frame_index != frames_read_)
    return Corrupt(absl::StrCat("frame index ", fh.frame_index, ", expected ", frames_read_));
  if (expect_header_crc_ && fh.header_crc != expected_header_crc_)
    return Corrupt("the frame is not the one its index entry describes");
  expect_header_crc_ = false;
  compressed_.resize(fh.compressed_size);
  if (fread(compressed_.data(), 1, fh.compressed_size, file_) != fh.compressed_size)
    return truncated("partial frame payload");
  if (Crc32c(compressed_.data(), compressed_.size()) != fh.payload_crc)
    return Corrupt("frame payload checksum mismatch");
  if (dctx_ == nullptr && (dctx_ = ZSTD_createDCtx()) == nullptr) return absl::ResourceExhaustedError("zstd context");
  frame_.resize(fh.uncompressed_size);
  size_t n = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(dctx_), frame_.data(), frame_.size(), compressed_.data(),
                                 compressed_.size());
  if (ZSTD_isError(n) || n != fh.uncompressed_size) frame_.clear();  // bytes zstd may not have written
  if (ZSTD_isError(n)) return Corrupt(absl::StrCat("zstd: ", ZSTD_getErrorName(n)));
  if (n != fh.uncompressed_size) return Corrupt("decompressed size differs from the frame header");
  frame_offset_ = offset_;
  offset_ += sizeof fh + fh.compressed_size;
  ++frames_read_;
  pos_ = 0;
  frame_records_ = fh.record_count;
  records_seen_ = 0;
  return true;
}

absl::Status TraceReader::SeekTo(uint64_t offset, uint32_t frame_index) {
  if (offset < header_.header_size)
    return absl::InvalidArgumentError(absl::StrCat(path_, ": seek before the first frame"));
  if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0)
    return absl::DataLossError(absl::StrCat(path_, ": cannot seek to byte ", offset));
  clearerr(file_);
  offset_ = offset;
  frames_read_ = frame_index;
  frame_.clear();
  pos_ = 0;
  frame_records_ = records_seen_ = 0;
  expect_header_crc_ = false;
  return absl::OkStatus();
}

absl::Status TraceReader::SeekFrame(const format::IndexEntry& entry) {
  absl::Status s = SeekTo(entry.offset, entry.frame_index);
  if (!s.ok()) return s;
  expect_header_crc_ = true;
  expected_header_crc_ = entry.frame_header_crc;
  return absl::OkStatus();
}

absl::StatusOr<bool> TraceReader::Next(RecordView* out) {
  while (pos_ >= frame_.size()) {
    if (records_seen_ != frame_records_)
      return CorruptRecord(absl::StrCat("frame holds ", records_seen_, " records, header says ", frame_records_));
    absl::StatusOr<bool> more = ReadFrame();
    if (!more.ok() || !*more) return more;
  }
  const size_t left = frame_.size() - pos_;
  RecordHeader rh;
  if (left < sizeof rh) return CorruptRecord("record header crosses the frame end");
  memcpy(&rh, frame_.data() + pos_, sizeof rh);
  if (rh.size > left || rh.body_offset < sizeof rh || rh.body_offset > rh.size)
    return CorruptRecord(absl::StrCat("record of type ", rh.type, " has an impossible size ", rh.size));
  const char* rec = frame_.data() + pos_;
  absl::string_view rest(rec + rh.body_offset, rh.size - rh.body_offset);
  out->type = static_cast<format::RecordType>(rh.type);
  uint64_t payload = PayloadBytes(out->type, rest);
  if (payload > rest.size()) return CorruptRecord(absl::StrCat("payload of ", payload, " bytes crosses the record end"));
  out->body = rest.substr(0, rest.size() - payload);
  out->payload = rest.substr(rest.size() - payload);
  pos_ += rh.size;
  ++records_seen_;
  return true;
}

}  // namespace ttrace::store
