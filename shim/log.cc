// One write(2) per message so that lines from many ranks sharing a terminal do not interleave mid-line.
#include "shim/log.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

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

namespace {

// The start time of process `pid` (field 22 of /proc/PID/stat, clock ticks since boot), 0 when unreadable: with the
// pid it names the launcher even after its pid is reused.
uint64_t StartTime(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');  // the command name may hold spaces and parentheses
  for (int field = 2; p != nullptr && field < 22; ++field) p = strchr(p + 1, ' ');
  return p != nullptr ? strtoull(p + 1, nullptr, 10) : 0;
}

uint64_t Fnv1a(const void* data, size_t n, uint64_t h) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

enum class Claim { kOurs, kTaken, kFailed };

// Binds the abstract unix socket address "\0<name>" and keeps the socket open for the life of the process (never
// closed: the name stays taken while the process lives and vanishes with it; nothing is left on disk). Another
// process holding the name: kTaken.
Claim HoldAbstractName(const char* name) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Claim::kFailed;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = strnlen(name, sizeof addr.sun_path - 1);
  memcpy(addr.sun_path + 1, name, len);  // sun_path[0] == '\0': the abstract namespace
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), static_cast<socklen_t>(sizeof(sa_family_t) + 1 + len)) == 0)
    return Claim::kOurs;
  const Claim claim = errno == EADDRINUSE ? Claim::kTaken : Claim::kFailed;
  close(fd);
  return claim;
}

}  // namespace

void LogOncePerJob(const std::string& dir, const char* format, ...) {
  char text[900];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  const int parent = static_cast<int>(getppid());
  const uint64_t started = StartTime(parent);
  uint64_t h = Fnv1a(text, strlen(text), 1469598103934665603ull);
  h = Fnv1a(&parent, sizeof parent, h);
  h = Fnv1a(&started, sizeof started, h);
  char name[40];
  snprintf(name, sizeof name, "/.ttrace-said-%016llx", static_cast<unsigned long long>(h));
  const int fd = dir.empty() ? -1 : open((dir + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST && !dir.empty()) return;  // another process of the job said it
  if (fd >= 0) {
    close(fd);
    return Log("%s (said once for the job)", text);
  }
  switch (HoldAbstractName(name + 2)) {
    case Claim::kOurs: return Log("%s (said once for the job on this host)", text);
    case Claim::kTaken: return;  // a live process of the job on this host said it
    case Claim::kFailed: return Log("%s", text);
  }
}

}  // namespace ttrace::shim
