// TraceWriter: appends records to one trace stream (include/ttrace/format.h, docs/format.md). The one writer of
// the store format, used by the shim's embedded file sink, the shim's collector sink and (through StreamFile) the
// collector daemon.
//
// Records accumulate in an in-memory frame; the frame is compressed and handed to the StreamOutput when it
// reaches `frame_bytes` or on Flush(), as one contiguous buffer (FrameHeader + compressed bytes) with its index
// entry (the seq range of its records), so a file output writes it with one write(2) and a process killed
// mid-run leaves a stream that reads back up to its last complete frame. A frame that is at least 7/8 float-coded
// tensor payloads (PayloadKind::kFloatCoded, already entropy-coded) is stored in a zstd frame of raw blocks
// instead, unless zstd at level -4 over the whole frame saves 1/32 (repeats across tensors: the codec codes each
// alone). That trial runs only where it can pay: where a coded payload's fingerprint (its size and sampled words)
// repeats one earlier in the frame, or where zstd over samples of the frame saves 1/16 (smooth data); elsewhere
// the frame goes straight to raw blocks. zstd's window always spans the whole frame, so a payload repeated
// anywhere in a frame is stored once.
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
  uint32_t flags = 0;  // FileHeader.flags (format::FileFlags)
};

struct WriterOptions {
  size_t frame_bytes = 4u << 20;  // uncompressed bytes that trigger a frame
  int zstd_level = 3;
};

// What a writer knows of its stream when it closes it: for the manifest.
struct StreamSummary {
  uint64_t frames = 0;   // frames handed to the output
  uint64_t records = 0;  // records in them
  uint64_t bytes = 0;    // header + frames
  bool has_end = false;  // an EndRecord was appended (the last one is in `end`)
  format::EndRecord end{};
};

// Where a stream's bytes go: a file in a store directory (StreamFile), or a connection to the collector (the
// shim's collector sink). Called by one TraceWriter, on its thread, in the order Begin, WriteFrame*, Finish.
class StreamOutput {
 public:
  virtual ~StreamOutput() = default;
  virtual bool Begin(const format::FileHeader& header, std::string* error) = 0;
  // `frame` is a FrameHeader followed by its compressed_size bytes; `entry` is its index entry with offset 0
  // (the output knows where the frame lands) and entry_crc 0 (computed where the offset is set).
  virtual bool WriteFrame(const char* frame, size_t bytes, const format::IndexEntry& entry, std::string* error) = 0;
  // The stream ends; `summary` has the writer's final counts. Called once, also after a failure (to release).
  virtual bool Finish(const StreamSummary& summary, std::string* error) = 0;
};

// The FileHeader a writer starts a stream with (its header_crc set).
format::FileHeader MakeFileHeader(const StreamIdentity& id);

// The seq a record carries (op records, tensors, notices about an op), or format::kNoSeq: what the index ranges.
uint64_t RecordSeq(format::RecordType type, const void* body, size_t body_bytes);

class TraceWriter {
 public:
  // Creates (truncates) the stream file `path`, its index `path`.idx and an open entry in the directory's
  // manifest.ttm (StreamFile with default options), creating missing parent directories, and writes the header.
  static std::unique_ptr<TraceWriter> Open(const std::string& path, const StreamIdentity& id,
                                           const WriterOptions& options, std::string* error);
  // A writer into any output; calls output->Begin with the header.
  static std::unique_ptr<TraceWriter> Create(std::unique_ptr<StreamOutput> output, const StreamIdentity& id,
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
  bool Close(std::string* error = nullptr);  // Flush + output Finish

  uint64_t bytes_written() const { return summary_.bytes; }
  uint64_t records_written() const { return summary_.records; }
  // Frames of mostly float-coded payloads, and how many of them had the zstd trial run / kept its output.
  uint64_t coded_frames() const { return coded_frames_; }
  uint64_t zstd_trials() const { return zstd_trials_; }
  uint64_t zstd_trials_kept() const { return zstd_trials_kept_; }
  const StreamSummary& summary() const { return summary_; }
  StreamOutput* output() { return output_.get(); }

 private:
  TraceWriter(std::unique_ptr<StreamOutput> output, const WriterOptions& options);
  bool Fail(const std::string& message, std::string* error);
  // zstd at `level` over the pending frame into dst, a zstd result code; with `frame_wide`, a window covering the
  // whole frame (and below level 3 a 2^17-entry hash table), else zstd's parameters for the level and size.
  size_t Compress(char* dst, size_t room, int level, bool frame_wide = true);
  // Whether zstd at level 1 over samples of the pending frame (one 32 KiB chunk of every 512 KiB) saves 1/16:
  // redundancy inside tensors (smooth data), which the codec's byte-plane code leaves. `dst` is scratch.
  bool SampleSaves(char* dst, size_t room);
  // Notes a float-coded payload's fingerprint (its size and 17 sampled words): sets repeat_ when an earlier
  // payload of the frame had the same, or when the table is too full to tell.
  void NoteCodedPayload(const char* payload, size_t bytes);

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

  std::unique_ptr<StreamOutput> output_;
  bool finished_ = false;
  WriterOptions options_;
  Buffer pending_;
  std::vector<char> compressed_;  // FrameHeader + zstd frame; sized once to the largest compress bound seen
  uint64_t precoded_bytes_ = 0;    // bytes of float-coded payloads (entropy-coded already) in pending_
  static constexpr size_t kPrints = 512;  // fingerprints of the pending frame's coded payloads (open addressing)
  uint64_t prints_[kPrints] = {};
  size_t prints_used_ = 0;
  uint64_t coded_frames_ = 0, zstd_trials_ = 0, zstd_trials_kept_ = 0;
  bool repeat_ = false;            // a coded payload of pending_ may repeat an earlier one (same fingerprint)
  uint32_t pending_records_ = 0;
  uint64_t pending_min_seq_ = format::kNoSeq, pending_max_seq_ = 0;
  uint32_t pending_seq_records_ = 0;
  uint32_t frame_index_ = 0;
  StreamSummary summary_;
  std::string failed_;
  void* cctx_ = nullptr;  // ZSTD_CCtx, made at the first frame and reused (zstd.h stays out of this header)
};

}  // namespace ttrace::store

#endif  // TTRACE_STORE_TRACE_WRITER_H_
