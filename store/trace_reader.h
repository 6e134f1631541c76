// TraceReader: reads one trace stream (include/ttrace/format.h, docs/format.md) record by record.
//
// Input is untrusted: every size is checked before it is used, checksums are verified before decompression, and
// a bad stream yields a DataLoss status naming the file, frame and byte offset, never a crash.
//
// Truncation: a stream whose writer was killed ends inside a frame. By default that is a DataLoss error; with
// ReaderOptions::allow_truncated the reader returns every record of the complete frames, then ends cleanly and
// truncated() says so. A corrupted frame (bad magic or checksum) is an error either way.
//
// Example:
//   TTRACE_ASSIGN_OR_RETURN(auto reader, TraceReader::Open(path));
//   RecordView r;
//   while (true) {
//     TTRACE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
//     if (!more) break;
//     if (r.type == format::RecordType::kGemm) { format::GemmRecord g = r.Body<format::GemmRecord>(); ... }
//   }
#ifndef TTRACE_STORE_TRACE_READER_H_
#define TTRACE_STORE_TRACE_READER_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ttrace/format.h"

namespace ttrace::store {

// Advises transparent huge pages for the 2 MiB-aligned part of [p, p + n), when it holds one, of memory about to be
// written for the first time (one page fault per 2 MiB instead of one per 4 KiB where the kernel's THP mode is
// madvise). Advice only: its failure changes nothing but speed.
void AdviseHugePages(void* p, size_t n);

// One record, valid until the next call to Next().
struct RecordView {
  format::RecordType type;   // may hold a value outside the known list: skip those
  absl::string_view body;    // the record body as written (may be shorter or longer than today's struct)
  absl::string_view payload; // bytes after the body (TensorRecord, NoticeRecord), empty otherwise

  // The body as struct T: copies min(body size, sizeof(T)) bytes and zero-fills the rest (format evolution).
  template <typename T>
  T Body() const {
    T t;
    memset(&t, 0, sizeof t);
    memcpy(&t, body.data(), body.size() < sizeof t ? body.size() : sizeof t);
    return t;
  }
};

struct ReaderOptions {
  bool allow_truncated = false;
};

class TraceReader {
 public:
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path,
                                                           const ReaderOptions& options = {});
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const format::FileHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

  // Advances to the next record. Returns false at the end of the stream, DataLoss on a corrupt stream.
  absl::StatusOr<bool> Next(RecordView* out);

  // Positions the reader at the frame an index entry names (store/stream_index.h): the next Next() reads that
  // frame, checking that its header is the one the entry describes (else DataLoss, as for any corrupt frame),
  // and reading goes on from there.
  absl::Status SeekFrame(const format::IndexEntry& entry);
  // Positions the reader at `offset`, where frame `frame_index` starts (the frame after an index's last entry).
  absl::Status SeekTo(uint64_t offset, uint32_t frame_index);
  // The frame of the record Next() returned last (0-based), and how many records of it are still unread.
  uint32_t current_frame() const { return frames_read_ - 1; }
  uint64_t current_frame_offset() const { return frame_offset_; }  // file offset of that frame (for SeekTo)
  uint32_t records_left_in_frame() const { return frame_records_ - records_seen_; }

  bool truncated() const { return truncated_; }
  const std::string& truncation() const { return truncation_; }  // what was cut, for a warning
  uint32_t frames_read() const { return frames_read_; }

 private:
  TraceReader(std::string path, FILE* file, const ReaderOptions& options);
  absl::StatusOr<bool> ReadFrame();
  absl::Status Corrupt(const std::string& what) const;        // at the frame about to be read
  absl::Status CorruptRecord(const std::string& what) const;  // in the frame last read

  std::string path_;
  FILE* file_;
  ReaderOptions options_;
  format::FileHeader header_;
  uint64_t offset_ = 0;  // file offset of the next frame
  uint64_t frame_offset_ = 0;  // file offset of the frame last read
  // A frame's bytes as read and as decompressed. Not zero-filled when they grow (every byte is written by fread or
  // zstd before it is read; a frame that fails either leaves frame_ empty).
  class Bytes {
   public:
    void resize(size_t n) {
      if (n > cap_) {
        p_.reset(new char[n]);  // default-initialized: no pass over the bytes
        cap_ = n;
        AdviseHugePages(p_.get(), n);
      }
      n_ = n;
    }
    void clear() { n_ = 0; }
    char* data() { return p_.get(); }
    const char* data() const { return p_.get(); }
    size_t size() const { return n_; }

   private:
    std::unique_ptr<char[]> p_;
    size_t n_ = 0, cap_ = 0;
  };
  Bytes compressed_;
  Bytes frame_;
  size_t pos_ = 0;              // next record within frame_
  uint32_t frame_records_ = 0;  // records the frame header announced
  uint32_t records_seen_ = 0;   // records read from the current frame
  uint32_t frames_read_ = 0;
  bool truncated_ = false;
  std::string truncation_;
  void* dctx_ = nullptr;  // ZSTD_DCtx, made at the first frame and reused (zstd.h stays out of this header)
  bool expect_header_crc_ = false;  // set by SeekFrame: the next frame's header_crc must be expected_header_crc_
  uint32_t expected_header_crc_ = 0;
};

// Byte count a record type states for its trailing payload; 0 for types without one.
uint64_t PayloadBytes(format::RecordType type, absl::string_view body);

}  // namespace ttrace::store

#endif  // TTRACE_STORE_TRACE_READER_H_
