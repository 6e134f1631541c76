// TraceWriter: appends records to one trace stream (include/ttrace/format.h, docs/format.md). The one writer of
// the store format, used by the shim's embedded file sink and by the collector.
//
// Records accumulate in an in-memory frame; the frame is compressed and written when it reaches `frame_bytes`
// or on Flush(). A frame that is at least 7/8 float-coded tensor payloads (PayloadKind::kFloatCoded, already
// entropy-coded) is stored in a zstd frame of raw blocks instead, unless a zstd trial on a sample of it saves 1/32:
// zstd would spend its time finding nothing. Each frame is written with one write(2) call sequence of header + payload, so a process killed
// mid-run leaves a stream that reads back up to its last complete frame.
//
// Not thread-safe: one thread owns a writer (the shim's drain thread). Depends on no CUDA library and on no
// Abseil, because the shim links it statically. Errors are reported as false + message; after an I/O error the
// writer stays failed (further calls return false) so the caller can disable capture once.
#ifndef TTRACE_STORE_TRACE_WRITER_H_
#define TTRACE_STORE_TRACE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ttrace/format.h"

namespace ttrace::store {

struct StreamIdentity {
  int32_t rank = -1;
  int32_t world_size = -1;
  int32_t local_rank = -1;
  uint32_t pid = 0;
  uint64_t start_unix_ns = 0;
  std::string job = "default";
  std::string host;
};

struct WriterOptions {
  size_t frame_bytes = 4u << 20;  // uncompressed bytes that trigger a frame
  int zstd_level = 3;
};

class TraceWriter {
 public:
  // Creates (truncates) `path`, creating missing parent directories, and writes the file header.
  static std::unique_ptr<TraceWriter> Open(const std::string& path, const StreamIdentity& id,
                                           const WriterOptions& options, std::string* error);
  ~TraceWriter();  // flushes and closes; errors at this point are lost: call Close() to see them
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Appends one record: `body` is the record struct, `payload` (TensorRecord, NoticeRecord) follows it.
  bool Append(format::RecordType type, const void* body, size_t body_bytes, const void* payload = nullptr,
              size_t payload_bytes = 0, std::string* error = nullptr);
  template <typename Body>
  bool Append(format::RecordType type, const Body& body, const void* payload = nullptr, size_t payload_bytes = 0,
              std::string* error = nullptr) {
    return Append(type, &body, sizeof body, payload, payload_bytes, error);
  }

  bool Flush(std::string* error = nullptr);  // writes the pending frame, if any
  bool Close(std::string* error = nullptr);  // Flush + close(2)

  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t records_written() const { return records_written_; }

 private:
  TraceWriter(int fd, const WriterOptions& options);
  bool Fail(const std::string& message, std::string* error);

  // A byte buffer that grows without zero-filling (records are copied in right after growing).
  class Buffer {
   public:
    char* Append(size_t n);  // room for n more bytes at the end
    const char* data() const { return data_.get(); }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    void clear() { size_ = 0; }
    void Reserve(size_t n);

   private:
    std::unique_ptr<char[]> data_;
    size_t size_ = 0, capacity_ = 0;
  };

  int fd_;
  WriterOptions options_;
  Buffer pending_;
  std::vector<char> compressed_;  // sized once to the largest compress bound seen
  uint64_t precoded_bytes_ = 0;    // bytes of float-coded payloads (entropy-coded already) in pending_
  uint32_t pending_records_ = 0;
  uint32_t frame_index_ = 0;
  uint64_t bytes_written_ = 0;
  uint64_t records_written_ = 0;
  std::string failed_;
};

}  // namespace ttrace::store

#endif  // TTRACE_STORE_TRACE_WRITER_H_
