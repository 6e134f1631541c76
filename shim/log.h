// Messages of libttrace.so on stderr. The shim speaks only about its own problems, and says each one once:
// a training job must not drown in a log line per intercepted call.
#ifndef TTRACE_SHIM_LOG_H_
#define TTRACE_SHIM_LOG_H_

#include <atomic>

namespace ttrace::shim {

// Writes "ttrace[<pid>]: <message>\n" to stderr with one write(2). Any thread; never allocates.
void Log(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace ttrace::shim

// Logs the first time this statement runs in the process (per call site), any thread.
#define TTRACE_LOG_ONCE(...)                                   \
  do {                                                         \
    static std::atomic<bool> ttrace_logged_once_{false};       \
    if (!ttrace_logged_once_.exchange(true, std::memory_order_relaxed)) \
      ::ttrace::shim::Log(__VA_ARGS__);                        \
  } while (0)

#endif  // TTRACE_SHIM_LOG_H_
