// One write(2) per message so that lines from many ranks sharing a terminal do not interleave mid-line.
#include "shim/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace ttrace::shim {

void Log(const char* format, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "ttrace[%d]: ", static_cast<int>(getpid()));
  va_list args;
  va_start(args, format);
  int m = vsnprintf(line + n, sizeof line - n - 1, format, args);
  va_end(args);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace ttrace::shim
