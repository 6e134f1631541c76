// Sink: where the shim's records go: a per-rank file in a store directory (store::TraceWriter into a
// store::StreamFile: stream, index, manifest entries; embedded, no daemon), or a ttrace-collector
// (store::RemoteOutput, falling back to that file).
//
// Ownership and threads: CaptureEngine owns its sink and calls it from the drain thread only (and from the
// thread that runs Shutdown after the drain thread has stopped). A sink that fails stays failed; error() says why.
#ifndef TTRACE_SHIM_SINK_H_
#define TTRACE_SHIM_SINK_H_

#include <memory>
#include <string>

#include "store/trace_writer.h"
#include "shim/options.h"
#include "ttrace/format.h"

namespace ttrace::shim {

class Sink {
 public:
  virtual ~Sink() = default;
  // False on an I/O failure (the sink is then failed). A record larger than format::kMaxFrameBytes is refused
  // with false as well; CaptureEngine never offers one.
  virtual bool Append(format::RecordType type, const void* body, size_t body_bytes, const void* payload,
                      size_t payload_bytes) = 0;
  virtual bool Flush() = 0;
  virtual bool Close() = 0;
  virtual std::string error() const = 0;
  virtual std::string name() const = 0;  // for messages: the file path
};

// Opens (creates, truncates) the stream file at `path`, creating its directory. nullptr + `error` on failure.
std::unique_ptr<Sink> OpenFileSink(const std::string& path, const store::StreamIdentity& identity,
                                   std::string* error, const store::WriterOptions& options = {});

// Streams to the collector at `endpoint` (store::RemoteOutput: unix:PATH or tcp:HOST:PORT, `token` in the hello);
// when it cannot be reached, refuses, or goes away, the stream continues in the local file `fallback_path` (with
// every frame not yet acknowledged) and a message says so once. nullptr + `error` only when neither works.
std::unique_ptr<Sink> OpenCollectorSink(const std::string& endpoint, const std::string& token, int timeout_ms,
                                        const std::string& fallback_path, const store::StreamIdentity& identity,
                                        std::string* error, const store::WriterOptions& options = {});

// The first line of `path` (the collector token), without its line end; empty when unreadable.
std::string ReadTokenFile(const std::string& path);

// The vendor libraries loaded in this process (vendor_libraries.inc, libcuda, libcudart) as their files are
// named once symbolic links are resolved ("libcublas.so.13.1.0.3 libnccl.so.2.27.7"), space-separated: the
// manifest's library versions. Takes the loader's lock (dl_iterate_phdr): never from a signal handler.
std::string LoadedVendorLibraries();

// This process's stream: <options.dir>/rank-<RANK>.ttr, or <options.dir>/pid-<pid>.ttr when RANK is unset or not
// a non-negative integer.
std::string StreamPath(const Options& options, const EnvLookup& env, int pid);

// Identity for the stream header: RANK, WORLD_SIZE, LOCAL_RANK (-1 when unset or invalid), pid, job, host, now.
store::StreamIdentity StreamIdentityFromEnv(const Options& options, const EnvLookup& env, int pid);

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_SINK_H_
