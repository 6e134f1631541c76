// The stream and its index are two files rather than one with a trailer so that the index can grow with the
// stream (a trailer exists only after a clean close) and a reader of a killed writer's stream still finds most
// frames by seq. A failed index write stops the index, never the stream.
#include "store/stream_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <ctime>

#include "store/crc32c.h"
#include "store/manifest.h"

namespace ttrace::store {
namespace {

uint64_t UnixNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (w == 0) {
      errno = ENOSPC;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool MakeParents(const std::string& path, unsigned mode) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    std::string dir = path.substr(0, pos);
    if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string IndexPath(const std::string& stream_path) { return stream_path + ".idx"; }

std::unique_ptr<StreamFile> StreamFile::Create(const std::string& path, const StreamFileOptions& options,
                                               std::string* error) {
  if (!MakeParents(path)) {
    if (error) *error = "cannot create the directory of " + path + ": " + strerror(errno);
    return nullptr;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, options.file_mode);
  if (fd < 0) {
    if (error) *error = "cannot open " + path + ": " + strerror(errno);
    return nullptr;
  }
  int index_fd = -1;
  std::string index_error;
  if (options.index) {
    index_fd = ::open(IndexPath(path).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, options.file_mode);
    if (index_fd < 0) index_error = "cannot open " + IndexPath(path) + ": " + strerror(errno);
  } else {
    ::unlink(IndexPath(path).c_str());  // an index of an earlier stream of this name would be stale
  }
  std::unique_ptr<StreamFile> f(new StreamFile(path, fd, index_fd, options));
  f->index_error_ = index_error;
  return f;
}

StreamFile::StreamFile(std::string path, int fd, int index_fd, const StreamFileOptions& options)
    : path_(std::move(path)), fd_(fd), index_fd_(index_fd), options_(options) {
  const size_t slash = path_.rfind('/');
  dir_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
  name_ = slash == std::string::npos ? path_ : path_.substr(slash + 1);
}

StreamFile::~StreamFile() {
  if (fd_ >= 0) ::close(fd_);
  if (index_fd_ >= 0) ::close(index_fd_);
}

bool StreamFile::Fail(const std::string& message, std::string* error) {
  if (failed_.empty()) failed_ = message;
  if (error) *error = failed_;
  return false;
}

void StreamFile::IndexFailed(const std::string& message) {
  if (index_error_.empty()) index_error_ = message;
  if (index_fd_ >= 0) ::close(index_fd_);
  index_fd_ = -1;
}

void StreamFile::NoteLoss(format::LossReason reason, uint64_t frames, uint64_t bytes) {
  if (lost_reason_ == 0) lost_reason_ = static_cast<uint32_t>(reason);
  frames_lost_ += frames;
  bytes_lost_ += bytes;
}

bool StreamFile::Begin(const format::FileHeader& header, std::string* error) {
  if (!failed_.empty()) return Fail(failed_, error);
  header_ = header;
  begun_ = true;
  if (!WriteAll(fd_, &header, sizeof header)) {
    NoteLoss(format::LossReason::kWriteFailed, 0, 0);
    return Fail("cannot write " + path_ + ": " + strerror(errno), error);
  }
  offset_ = sizeof header;
  if (index_fd_ >= 0) {
    format::IndexHeader ih;
    memset(&ih, 0, sizeof ih);
    memcpy(ih.magic, format::kIndexMagic, sizeof ih.magic);
    ih.version = format::kIndexVersion;
    ih.header_size = sizeof ih;
    ih.entry_size = sizeof(format::IndexEntry);
    ih.stream_header_crc = header.header_crc;
    ih.stream_start_unix_ns = header.start_unix_ns;
    ih.stream_pid = header.pid;
    ih.header_crc = Crc32c(&ih, offsetof(format::IndexHeader, header_crc));
    if (!WriteAll(index_fd_, &ih, sizeof ih)) IndexFailed("cannot write " + IndexPath(path_) + ": " + strerror(errno));
  }
  std::string manifest_error;
  if (options_.manifest) AppendManifest(format::ManifestState::kOpen, nullptr, &manifest_error);
  return true;  // the manifest is the directory's summary: a stream without its entry is still a stream
}

bool StreamFile::WriteFrame(const char* frame, size_t bytes, const format::IndexEntry& entry, std::string* error) {
  if (!failed_.empty()) return Fail(failed_, error);
  if (!WriteAll(fd_, frame, bytes)) {
    const int err = errno;
    NoteLoss(format::LossReason::kWriteFailed, 1, bytes);
    return Fail("cannot write " + path_ + ": " + strerror(err), error);
  }
  if (index_fd_ >= 0) {
    format::IndexEntry e = entry;
    e.offset = offset_;
    e.entry_crc = Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
    if (!WriteAll(index_fd_, &e, sizeof e)) IndexFailed("cannot write " + IndexPath(path_) + ": " + strerror(errno));
  }
  offset_ += bytes;
  ++frames_;
  records_ += entry.record_count;
  return true;
}

bool StreamFile::AppendManifest(format::ManifestState state, const StreamSummary* summary, std::string* error) {
  format::ManifestEntry e = MakeManifestEntry(header_, name_, options_.writer, options_.libraries);
  e.state = static_cast<uint32_t>(state);
  e.frames = frames_;
  e.records = records_;
  e.bytes = offset_;
  e.frames_lost = frames_lost_;
  e.bytes_lost = bytes_lost_;
  e.lost_reason = lost_reason_;
  if (state != format::ManifestState::kOpen) e.end_unix_ns = UnixNs();
  if (summary != nullptr && summary->has_end) {
    const format::EndRecord& end = summary->end;
    e.flags |= format::kManifestHasEnd;
    e.end_reason = end.reason;
    e.end_signal = end.signal;
    e.ops = end.ops;
    e.tensors = end.tensors;
    e.tensor_bytes = end.tensor_bytes;
    e.records_dropped = end.records_dropped;
    e.payloads_dropped = end.payloads_dropped;
    static_assert(format::kDropReasons <= sizeof e.dropped / sizeof e.dropped[0]);
    for (uint32_t r = 0; r < format::kDropReasons; ++r) e.dropped[r] = end.dropped[r];
  }
  return AppendManifestEntry(dir_, &e, options_.sync_on_close && state != format::ManifestState::kOpen, error,
                             options_.file_mode);
}

bool StreamFile::Finish(const StreamSummary& summary, std::string* error) {
  if (fd_ < 0) return failed_.empty() || Fail(failed_, error);
  bool ok = failed_.empty();
  if (ok && options_.sync_on_close) {
    if (::fsync(fd_) != 0) {
      NoteLoss(format::LossReason::kWriteFailed, 0, 0);
      ok = Fail("cannot sync " + path_ + ": " + strerror(errno), error);
    }
    if (index_fd_ >= 0 && ::fsync(index_fd_) != 0) IndexFailed("cannot sync " + IndexPath(path_));
  }
  if (::close(fd_) != 0 && ok) {
    NoteLoss(format::LossReason::kWriteFailed, 0, 0);
    ok = Fail(std::string("close failed: ") + strerror(errno), error);
  }
  fd_ = -1;
  if (index_fd_ >= 0) ::close(index_fd_);
  index_fd_ = -1;
  if (!ok && error != nullptr && error->empty()) *error = failed_;
  // The stream's last record is an EndRecord only when the writer appended one and every frame landed.
  const bool closed = summary.has_end && failed_.empty() && frames_ == summary.frames;
  if (begun_ && options_.manifest) {
    std::string manifest_error;
    AppendManifest(closed ? format::ManifestState::kClosed : format::ManifestState::kCut, &summary,
                   &manifest_error);
  }
  return ok;
}

}  // namespace ttrace::store
