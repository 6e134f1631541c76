// Messages of libttrace.so on stderr. The shim speaks only about its own problems, and says each one once:
// a training job must not drown in a log line per intercepted call.
#ifndef TTRACE_SHIM_LOG_H_
#define TTRACE_SHIM_LOG_H_

#include <atomic>
#include <string>

namespace ttrace::shim {

// Writes "ttrace[<pid>]: <message>\n" to stderr with one write(2). Any thread; never allocates.
void Log(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Like Log, but once per job, for a problem every rank of a job meets alike (no GPU for CUPTI under simgpu: N ranks,
// N identical lines). Of the processes with the same parent (the launcher: torchrun's agent, simrun, an MPI daemon)
// writing to the trace directory `dir`, the first to say a text says it, with " (said once for the job)"; the others
// stay silent. The first is the one that creates `dir`/.ttrace-said-<hash of the text, the parent's pid and start
// time> (O_EXCL): another job, or a rank with another problem, says its own. When the marker cannot be created for
// another reason (no such directory: a collector sink), the first process of the job on the host to bind the
// abstract unix socket "\0ttrace-said-<same hash>" says it, with " (said once for the job on this host)", and keeps
// that socket for its life (one descriptor; nothing on disk); ranks starting while it lives stay silent, and the
// process says it as Log would when the socket cannot be made. The engine's thread at start; allocates.
void LogOncePerJob(const std::string& dir, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace ttrace::shim

// Logs the first time this statement runs in the process (per call site), any thread.
#define TTRACE_LOG_ONCE(...)                                   \
  do {                                                         \
    static std::atomic<bool> ttrace_logged_once_{false};       \
    if (!ttrace_logged_once_.exchange(true, std::memory_order_relaxed)) \
      ::ttrace::shim::Log(__VA_ARGS__);                        \
  } while (0)

#endif  // TTRACE_SHIM_LOG_H_
