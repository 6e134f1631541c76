// Progress: one self-overwriting status line on stderr for long runs. Shown only when both stdout and stderr are
// terminals (never in logs, pipes, redirected reports or tests), and only once the run has lasted `delay` (1 s by
// default: short checks print nothing). Updates are throttled to 10 per second. Single-threaded: call it from one
// thread (check.h calls its progress callback on the calling thread).
#ifndef TTRACE_ANALYZER_PROGRESS_H_
#define TTRACE_ANALYZER_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace ttrace::analyzer {

class Progress {
 public:
  Progress();  // enabled iff isatty(STDOUT_FILENO) and isatty(STDERR_FILENO)
  explicit Progress(bool enabled, std::chrono::milliseconds delay = std::chrono::milliseconds(1000));
  ~Progress() { Clear(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Shows `line` (unless throttled or within the delay; `force` skips the throttle, not the delay).
  void Update(const std::string& line, bool force = false);
  void Clear();  // erases the line (before other output)
  double seconds() const;  // since construction

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point start_, last_{};
};

// "ttrace: [#######.............] 1,234 of 5,000 ops, 1.2 of 4.8 GB, 310 MB/s, ETA 12 s": a bar of the bytes done
// (of the ops when no op has bytes), the rate over `seconds` and the time left at that rate.
std::string FormatProgress(uint64_t ops_done, uint64_t ops_total, uint64_t bytes_done, uint64_t bytes_total,
                           double seconds);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_PROGRESS_H_
