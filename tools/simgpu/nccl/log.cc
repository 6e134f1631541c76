// The last-error text lives in a fixed buffer (as NCCL's ncclLastError does) so that the pointer returned by
// ncclGetLastError never dangles.
#include "tools/simgpu/nccl/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "tools/simgpu/nccl/params.h"

namespace simgpu::nccl {
namespace {

std::mutex g_mu;
char g_last[1024];

void Record(bool always, const char* fmt, va_list ap) {
  char msg[sizeof g_last];
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::snprintf(g_last, sizeof g_last, "%s", msg);
  }
  if (always || DebugWarn()) std::fprintf(stderr, "simgpu nccl [pid %d]: %s\n", static_cast<int>(getpid()), msg);
}

}  // namespace

void Warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Record(false, fmt, ap);
  va_end(ap);
}

void Error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Record(true, fmt, ap);
  va_end(ap);
}

const char* LastError() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_last;
}

}  // namespace simgpu::nccl
