// StreamStore: where the collector keeps the streams it receives: `<root>/<job>/rank-<R>.ttr` (or
// `pid-<P>-<host>.ttr` without a rank), each a store::StreamFile (stream, index, manifest entries, fsynced at the
// close), named only from validated fields of the client's FileHeader, so no client can write outside its job's
// directory or two connections into one file.
//
// Thread-safe: connections on their own threads open and release streams concurrently.
#ifndef TTRACE_COLLECTOR_STREAM_STORE_H_
#define TTRACE_COLLECTOR_STREAM_STORE_H_

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "store/stream_file.h"
#include "ttrace/format.h"
#include "ttrace/wire.h"

namespace ttrace::collector {

// True for a name usable as one path component: 1..max bytes of [A-Za-z0-9._-], not starting with '.'
// (no "..", no hidden files).
bool SafeName(const std::string& name, size_t max = 64);

class StreamStore {
 public:
  // `durable`: streams are fsynced when they finish (store::StreamFileOptions::sync_on_close), which is what the
  // daemon promises; only the fuzz harness, which throws its streams away, turns it off.
  explicit StreamStore(std::string root, unsigned file_mode = 0640, bool durable = true)
      : root_(std::move(root)), file_mode_(file_mode), durable_(durable) {}

  struct Opened {
    std::unique_ptr<store::StreamFile> file;  // null when refused
    std::string path;                         // the stream's path (also when busy)
    wire::RefuseReason refused = wire::RefuseReason::kNone;
    std::string why;
  };
  // Creates the stream a validated header names; refuses invalid names and a stream another connection writes.
  // The caller writes the header (StreamFile::Begin) and calls Release(path) once it has finished the file.
  Opened Open(const format::FileHeader& header);
  void Release(const std::string& path);

  const std::string& root() const { return root_; }

 private:
  std::string root_;
  unsigned file_mode_;
  bool durable_;
  std::mutex mu_;
  std::set<std::string> active_;
};

}  // namespace ttrace::collector

#endif  // TTRACE_COLLECTOR_STREAM_STORE_H_
