// A frame is compressed in one ZSTD_compress call: frames are a few MiB, so streaming compression would buy
// nothing but state. Writes loop over short writes and EINTR; nothing here allocates per record beyond the
// frame buffer's growth.
#include "store/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "store/crc32c.h"

namespace ttrace::store {
namespace {

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// mkdir -p of the directory part of `path`.
bool MakeParents(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    std::string dir = path.substr(0, pos);
    if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// A zstd frame of raw blocks holding `n` bytes (RFC 8878 3.1.1): any zstd decoder reads it back at memcpy speed.
// Header: magic; descriptor 0x80 (a 4-byte content size, no single segment, checksum or dictionary); window
// descriptor 0x38 (2^17 bytes, so blocks of up to 128 KiB); the content size. Each block: a 3-byte header
// (bit 0 last block, bits 1-2 type 0 = raw, bits 3-23 size), then its bytes.
constexpr size_t kRawBlock = 128u << 10;
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

// Would zstd find matches in this frame? A level-1 trial on four 32 KiB pieces spread over it, into `scratch`
// (at least ZSTD_compressBound(32 KiB) bytes): float-coded payloads of smooth data (a slowly varying signal,
// repeated rows) still hold repeats that zstd finds and the codec, byte by byte, does not.
bool ZstdFindsMatches(const char* data, size_t n, char* scratch, size_t scratch_bytes) {
  constexpr size_t kPiece = 32u << 10;
  if (n < 8 * kPiece) return true;
  size_t out = 0;
  for (size_t k = 0; k < 4; ++k) {
    const size_t c = ZSTD_compress(scratch, scratch_bytes, data + (n - kPiece) * (2 * k + 1) / 8, kPiece, 1);
    if (ZSTD_isError(c)) return true;
    out += c;
  }
  return out * 32 < 4 * kPiece * 31;  // saves at least 1/32
}

void CopyPadded(char* dst, size_t n, const std::string& src) {
  memset(dst, 0, n);
  memcpy(dst, src.data(), src.size() < n - 1 ? src.size() : n - 1);
}

}  // namespace

std::unique_ptr<TraceWriter> TraceWriter::Open(const std::string& path, const StreamIdentity& id,
                                               const WriterOptions& options, std::string* error) {
  if (!MakeParents(path)) {
    if (error) *error = "cannot create the directory of " + path + ": " + strerror(errno);
    return nullptr;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot open " + path + ": " + strerror(errno);
    return nullptr;
  }
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
  h.header_crc = Crc32c(&h, offsetof(format::FileHeader, header_crc));
  if (!WriteAll(fd, &h, sizeof h)) {
    if (error) *error = "cannot write " + path + ": " + strerror(errno);
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter(fd, options));
  w->bytes_written_ = sizeof h;
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

TraceWriter::TraceWriter(int fd, const WriterOptions& options) : fd_(fd), options_(options) {
  pending_.Reserve(options_.frame_bytes + (64u << 10));
}

TraceWriter::~TraceWriter() { Close(nullptr); }

bool TraceWriter::Fail(const std::string& message, std::string* error) {
  if (failed_.empty()) failed_ = message;
  if (error) *error = failed_;
  return false;
}

bool TraceWriter::Append(format::RecordType type, const void* body, size_t body_bytes, const void* payload,
                         size_t payload_bytes, std::string* error) {
  if (!failed_.empty() || fd_ < 0) return Fail(failed_.empty() ? "writer closed" : failed_, error);
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
          static_cast<uint8_t>(format::PayloadKind::kFloatCoded))
    precoded_bytes_ += payload_bytes;
  char* at = pending_.Append(total);
  memcpy(at, &rh, sizeof rh);
  memcpy(at + sizeof rh, body, body_bytes);
  if (payload_bytes) memcpy(at + sizeof rh + body_bytes, payload, payload_bytes);
  ++pending_records_;
  if (pending_.size() >= options_.frame_bytes) return Flush(error);
  return true;
}

bool TraceWriter::Flush(std::string* error) {
  if (!failed_.empty()) return Fail(failed_, error);
  if (pending_.empty()) return true;
  const size_t bound = std::max(ZSTD_compressBound(pending_.size()), RawZstdBound(pending_.size()));
  if (compressed_.size() < bound) compressed_.resize(bound);
  const bool stored = precoded_bytes_ * 8 >= pending_.size() * 7 &&
                      !ZstdFindsMatches(pending_.data(), pending_.size(), compressed_.data(), compressed_.size());
  size_t n = stored ? RawZstdFrame(pending_.data(), pending_.size(), compressed_.data())
                    : ZSTD_compress(compressed_.data(), compressed_.size(), pending_.data(), pending_.size(),
                                    options_.zstd_level);
  if (ZSTD_isError(n)) return Fail(std::string("zstd: ") + ZSTD_getErrorName(n), error);
  if (n > format::kMaxFrameBytes) return Fail("compressed frame exceeds the frame limit", error);
  format::FrameHeader fh;
  fh.magic = format::kFrameMagic;
  fh.frame_index = frame_index_;
  fh.compressed_size = static_cast<uint32_t>(n);
  fh.uncompressed_size = static_cast<uint32_t>(pending_.size());
  fh.record_count = pending_records_;
  fh.payload_crc = Crc32c(compressed_.data(), n);
  fh.reserved = 0;
  fh.header_crc = Crc32c(&fh, offsetof(format::FrameHeader, header_crc));
  if (!WriteAll(fd_, &fh, sizeof fh) || !WriteAll(fd_, compressed_.data(), n))
    return Fail(std::string("write failed: ") + strerror(errno), error);
  ++frame_index_;
  bytes_written_ += sizeof fh + n;
  records_written_ += pending_records_;
  pending_records_ = 0;
  precoded_bytes_ = 0;
  pending_.clear();
  return true;
}

bool TraceWriter::Close(std::string* error) {
  if (fd_ < 0) return failed_.empty() || Fail(failed_, error);
  bool ok = Flush(error);
  if (::close(fd_) != 0 && ok) ok = Fail(std::string("close failed: ") + strerror(errno), error);
  fd_ = -1;
  return ok;
}

}  // namespace ttrace::store
