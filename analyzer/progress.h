// Progress: one self-overwriting status line on stderr for long runs, shown only when stderr is a terminal
// (never in logs, pipes or tests). Updates are throttled to 10 per second. Single-threaded.
#ifndef TTRACE_ANALYZER_PROGRESS_H_
#define TTRACE_ANALYZER_PROGRESS_H_

#include <chrono>
#include <string>

namespace ttrace::analyzer {

class Progress {
 public:
  Progress();  // enabled iff isatty(STDERR_FILENO)
  ~Progress() { Clear(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Update(const std::string& line, bool force = false);
  void Clear();  // erases the line (before other output)

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_PROGRESS_H_
