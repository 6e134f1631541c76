// The index is checked in the order that keeps every later use sound: header (magic, checksum, version, sizes),
// binding to the stream, then each entry (checksum, frame number, offset following the previous frame, end inside
// the stream file). The first entry that fails ends the usable prefix. A lookup reads the frames whose seq range
// holds the seq, then scans what the index does not cover; if a frame read through the index is not what its
// entry says, the whole stream is scanned instead.
#include "store/stream_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "store/crc32c.h"
#include "store/stream_file.h"
#include "store/trace_writer.h"

namespace ttrace::store {
namespace {

bool ReadExactly(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Reads the records of the frame the reader is positioned at (after SeekFrame), keeping those of `seq`. Returns
// false with `why` when the frame disagrees with its entry.
bool ReadIndexedFrame(TraceReader* reader, const format::IndexEntry& e, uint64_t seq,
                                      std::vector<OwnedRecord>* out, std::string* why) {
  RecordView r;
  uint32_t records = 0, seq_records = 0;
  while (records < e.record_count) {
    absl::StatusOr<bool> more = reader->Next(&r);
    if (!more.ok()) {
      *why = std::string(more.status().message());
      return false;
    }
    if (!*more || reader->current_frame() != e.frame_index) break;
    ++records;
    const uint64_t s = RecordSeq(r.type, r.body.data(), r.body.size());
    if (s == format::kNoSeq) continue;
    ++seq_records;
    if (s < e.min_seq || s > e.max_seq) {
      *why = absl::StrCat("frame ", e.frame_index, " holds seq ", s, " outside its index range");
      return false;
    }
    if (s == seq) out->push_back(OwnedRecord{r.type, std::string(r.body), std::string(r.payload)});
  }
  if (records != e.record_count || seq_records != e.seq_records) {
    *why = absl::StrCat("frame ", e.frame_index, " does not hold the records its index entry counts");
    return false;
  }
  return true;
}

// Reads from the reader's position to the end of the stream, keeping the records of `seq`.
absl::Status ScanRest(TraceReader* reader, uint64_t seq, SeqRecords* out, uint32_t first_frame) {
  RecordView r;
  while (true) {
    absl::StatusOr<bool> more = reader->Next(&r);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (RecordSeq(r.type, r.body.data(), r.body.size()) == seq)
      out->records.push_back(OwnedRecord{r.type, std::string(r.body), std::string(r.payload)});
  }
  out->frames_read += reader->frames_read() - first_frame;
  out->frames_total = reader->frames_read();
  out->truncated = reader->truncated();
  out->truncation = reader->truncation();
  return absl::OkStatus();
}

}  // namespace

LoadedIndex LoadIndex(const std::string& stream_path, const format::FileHeader& header, uint64_t stream_bytes) {
  LoadedIndex out;
  const std::string path = IndexPath(stream_path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.problem = absl::StrCat(path, ": no index (", strerror(errno), "); scanning the stream");
    return out;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  format::IndexHeader h;
  if (!ReadExactly(fd, &h, sizeof h) || memcmp(h.magic, format::kIndexMagic, sizeof h.magic) != 0 ||
      Crc32c(&h, offsetof(format::IndexHeader, header_crc)) != h.header_crc) {
    out.problem = absl::StrCat(path, ": not an intact index; scanning the stream");
    return out;
  }
  if (h.version != format::kIndexVersion || h.header_size < sizeof h || h.header_size > 4096 ||
      h.entry_size < sizeof(format::IndexEntry) || h.entry_size > 4096) {
    out.problem = absl::StrCat(path, ": index version ", h.version, " not readable here; scanning the stream");
    return out;
  }
  if (h.stream_header_crc != header.header_crc || h.stream_start_unix_ns != header.start_unix_ns ||
      h.stream_pid != header.pid) {
    out.problem = absl::StrCat(path, ": stale index (it indexes another stream of this name); scanning the stream");
    return out;
  }
  if (lseek(fd, h.header_size, SEEK_SET) < 0) {
    out.problem = absl::StrCat(path, ": cannot read the index; scanning the stream");
    return out;
  }
  std::vector<char> buf(h.entry_size);
  uint64_t expected_offset = header.header_size;
  for (uint32_t i = 0;; ++i) {
    if (!ReadExactly(fd, buf.data(), buf.size())) break;  // the end, or an entry cut by a kill: the prefix holds
    format::IndexEntry e;
    memcpy(&e, buf.data(), sizeof e);
    uint32_t crc;
    memcpy(&crc, buf.data() + h.entry_size - sizeof crc, sizeof crc);
    std::string bad;
    if (Crc32c(buf.data(), h.entry_size - sizeof crc) != crc)
      bad = "checksum mismatch";
    else if (e.frame_index != i)
      bad = absl::StrCat("frame ", e.frame_index, " where frame ", i, " was expected");
    else if (e.offset != expected_offset)
      bad = absl::StrCat("offset ", e.offset, " where the frame starts at ", expected_offset);
    else if (e.compressed_size > format::kMaxFrameBytes ||
             e.offset + sizeof(format::FrameHeader) + e.compressed_size > stream_bytes)
      bad = "the frame it names runs past the end of the stream";
    else if (e.seq_records > e.record_count || (e.seq_records > 0 && e.min_seq > e.max_seq))
      bad = "impossible seq range";
    if (!bad.empty()) {
      out.problem = absl::StrCat(path, ": index entry ", i, ": ", bad, "; using the ", i,
                                 " entries before it and scanning the rest");
      break;
    }
    out.entries.push_back(e);
    expected_offset = e.offset + sizeof(format::FrameHeader) + e.compressed_size;
  }
  return out;
}

absl::StatusOr<SeqRecords> ReadSeq(const std::string& path, uint64_t seq, const ReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<TraceReader>> opened = TraceReader::Open(path, options);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<TraceReader> reader = std::move(*opened);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return absl::NotFoundError(absl::StrCat("cannot stat ", path));
  LoadedIndex index = LoadIndex(path, reader->header(), static_cast<uint64_t>(st.st_size));
  SeqRecords out;
  out.index_problem = index.problem;
  if (!index.entries.empty()) {
    std::string why;
    bool consistent = true;
    for (const format::IndexEntry& e : index.entries) {
      if (e.seq_records == 0 || seq < e.min_seq || seq > e.max_seq) continue;
      absl::Status sought = reader->SeekFrame(e);
      if (!sought.ok()) return sought;
      ++out.frames_read;
      consistent = ReadIndexedFrame(reader.get(), e, seq, &out.records, &why);
      if (!consistent) break;
    }
    if (consistent) {
      // The frames after the index's last entry (a writer killed between a frame and its entry) are scanned.
      const format::IndexEntry& last = index.entries.back();
      const uint32_t next = last.frame_index + 1;
      absl::Status s = reader->SeekTo(last.offset + sizeof(format::FrameHeader) + last.compressed_size, next);
      if (s.ok()) s = ScanRest(reader.get(), seq, &out, next);
      if (s.ok()) {
        out.used_index = true;
        return out;
      }
      if (!absl::IsDataLoss(s)) return s;
      why = std::string(s.message());
      // A truncated tail is the stream's own state, not the index's: report it as the scan would.
      if (why.rfind("truncated stream", 0) == 0) return s;
    }
    out = SeqRecords{};
    out.index_problem = absl::StrCat(IndexPath(path), ": index inconsistent with the stream (", why,
                                     "); scanning the stream");
    opened = TraceReader::Open(path, options);
    if (!opened.ok()) return opened.status();
    reader = std::move(*opened);
  }
  absl::Status s = ScanRest(reader.get(), seq, &out, 0);
  if (!s.ok()) return s;
  return out;
}

}  // namespace ttrace::store
