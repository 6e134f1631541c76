// StreamFile: a stream written into a store directory: the stream file `<name>.ttr`, its index `<name>.ttr.idx`
// (format::IndexHeader + IndexEntry per frame) and the stream's entries in the directory's manifest.ttm (open at
// Begin, closed or cut at Finish). The StreamOutput of the shim's embedded sink and of the collector daemon.
//
// Crash consistency: every frame reaches the stream file in one write(2), and its index entry is written after
// it, so the index never runs ahead of the stream; a killed writer leaves a stream that reads back to its last
// complete frame and an index that may lag behind it (readers scan past its end).
//
// fsync policy (docs/format.md "Durability"): nothing is synced while the stream is written (a killed process
// loses nothing that write(2) accepted; only a machine crash loses what the page cache held). With
// `sync_on_close` the stream and index are fsynced at Finish before the closing manifest entry is appended and
// synced, so a closed entry promises a durable stream. The collector sets it; the shim does not (the
// application's exit would wait for the disk).
//
// Not thread-safe: one thread owns a StreamFile. Absl-free (the shim links it statically).
#ifndef TTRACE_STORE_STREAM_FILE_H_
#define TTRACE_STORE_STREAM_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "store/trace_writer.h"
#include "ttrace/format.h"

namespace ttrace::store {

struct StreamFileOptions {
  bool index = true;     // write <path>.idx
  bool manifest = true;  // append entries to <dir>/manifest.ttm
  bool sync_on_close = false;
  format::ManifestWriter writer = format::ManifestWriter::kShim;
  std::string libraries;  // for the manifest; set_libraries() updates it before Finish
  unsigned file_mode = 0644;
};

class StreamFile : public StreamOutput {
 public:
  // Creates (truncates) `path` and its index, creating missing parent directories. nullptr + `error` on failure.
  static std::unique_ptr<StreamFile> Create(const std::string& path, const StreamFileOptions& options,
                                            std::string* error);
  ~StreamFile() override;

  bool Begin(const format::FileHeader& header, std::string* error) override;
  bool WriteFrame(const char* frame, size_t bytes, const format::IndexEntry& entry, std::string* error) override;
  bool Finish(const StreamSummary& summary, std::string* error) override;

  // Data the writer of the file lost before it reached the file (the collector: a client gone mid-frame, a
  // frame over a limit): counted into the manifest's frames_lost / bytes_lost, the first reason kept.
  void NoteLoss(format::LossReason reason, uint64_t frames, uint64_t bytes);
  void set_libraries(const std::string& libraries) { options_.libraries = libraries; }

  const std::string& path() const { return path_; }
  uint64_t frames() const { return frames_; }
  uint64_t records() const { return records_; }
  uint64_t bytes() const { return offset_; }
  bool failed() const { return !failed_.empty(); }
  // Index trouble is not fatal (the index is a hint): the first problem, empty when none.
  const std::string& index_error() const { return index_error_; }

 private:
  StreamFile(std::string path, int fd, int index_fd, const StreamFileOptions& options);
  bool Fail(const std::string& message, std::string* error);
  void IndexFailed(const std::string& message);
  bool AppendManifest(format::ManifestState state, const StreamSummary* summary, std::string* error);

  std::string path_;
  std::string dir_;
  std::string name_;
  int fd_;
  int index_fd_;
  StreamFileOptions options_;
  format::FileHeader header_{};
  bool begun_ = false;
  uint64_t offset_ = 0;
  uint64_t frames_ = 0;
  uint64_t records_ = 0;
  uint64_t frames_lost_ = 0;
  uint64_t bytes_lost_ = 0;
  uint32_t lost_reason_ = 0;
  std::string failed_;
  std::string index_error_;
};

// The index path of a stream: `stream_path` + ".idx".
std::string IndexPath(const std::string& stream_path);

// mkdir -p of the directory part of `path` (mode 0777 less the umask, or `mode`).
bool MakeParents(const std::string& path, unsigned mode = 0777);

// write(2) until done, over short writes and EINTR.
bool WriteAll(int fd, const void* data, size_t n);

}  // namespace ttrace::store

#endif  // TTRACE_STORE_STREAM_FILE_H_
