// Written with write(2) on fd 2 so it never interleaves with buffered std::cerr contents.
#include "analyzer/progress.h"

#include <unistd.h>

namespace ttrace::analyzer {

Progress::Progress() : enabled_(isatty(STDERR_FILENO) == 1) {}

void Progress::Update(const std::string& line, bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && shown_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const std::string text = "\r\033[K" + line;
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
  shown_ = true;
}

void Progress::Clear() {
  if (!enabled_ || !shown_) return;
  static const char kErase[] = "\r\033[K";
  ssize_t ignored = write(STDERR_FILENO, kErase, sizeof kErase - 1);
  (void)ignored;
  shown_ = false;
}

}  // namespace ttrace::analyzer
