// Written with write(2) on fd 2 so it never interleaves with buffered std::cerr contents.
#include "analyzer/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/report.h"

namespace ttrace::analyzer {

namespace {

std::string Bytes(double b) {
  if (b >= 1e9) return absl::StrFormat("%.1f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.1f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.1f kB", b / 1e3);
  return absl::StrFormat("%.0f B", b);
}

std::string Duration(double s) {
  if (s < 60) return absl::StrFormat("%.0f s", std::ceil(s));
  if (s < 3600) return absl::StrFormat("%.0f min %02.0f s", std::floor(s / 60), std::fmod(std::floor(s), 60));
  return absl::StrFormat("%.0f h %02.0f min", std::floor(s / 3600), std::fmod(std::floor(s / 60), 60));
}

}  // namespace

Progress::Progress() : Progress(isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1) {}

Progress::Progress(bool enabled, std::chrono::milliseconds delay)
    : enabled_(enabled), delay_(delay), start_(std::chrono::steady_clock::now()) {}

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Update(const std::string& line, bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < delay_) return;
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

std::string FormatProgress(uint64_t ops_done, uint64_t ops_total, uint64_t bytes_done, uint64_t bytes_total,
                           double seconds) {
  const bool by_bytes = bytes_total > 0;
  const double done = static_cast<double>(by_bytes ? bytes_done : ops_done);
  const double total = static_cast<double>(by_bytes ? bytes_total : ops_total);
  const double fraction = total > 0 ? std::clamp(done / total, 0.0, 1.0) : 1.0;
  constexpr int kWidth = 20;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string line = absl::StrCat("ttrace: [", std::string(static_cast<size_t>(filled), '#'),
                                  std::string(static_cast<size_t>(kWidth - filled), '.'), "] ", FormatCount(ops_done),
                                  " of ", FormatCount(ops_total), " ops");
  if (by_bytes) absl::StrAppend(&line, ", ", Bytes(static_cast<double>(bytes_done)), " of ", Bytes(total));
  if (seconds > 0 && done > 0) {
    const double rate = done / seconds;
    absl::StrAppend(&line, ", ", by_bytes ? absl::StrCat(Bytes(rate), "/s") : absl::StrFormat("%.0f ops/s", rate),
                    ", ETA ", Duration((total - done) / rate));
  }
  return line;
}

}  // namespace ttrace::analyzer
