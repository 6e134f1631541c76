#include "tools/simgpu/nccl/params.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simgpu::nccl {
namespace {

double ReadPositive(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d > 0)) {
    std::fprintf(stderr, "simgpu nccl: ignoring %s=%s (expected a positive number); using %g\n", name, v,
                 fallback);
    return fallback;
  }
  return d;
}

}  // namespace

double TimeoutSeconds() {
  static const double value = ReadPositive("SIMGPU_NCCL_TIMEOUT_S", 120);
  return value;
}

size_t ChunkBytes() {
  static const size_t value = [] {
    double d = ReadPositive("SIMGPU_NCCL_CHUNK_BYTES", 1 << 20);
    if (d > double(1ull << 30)) d = double(1ull << 30);
    size_t b = static_cast<size_t>(d);
    if (b < 256) b = 256;
    return (b + 63) & ~size_t{63};
  }();
  return value;
}

bool DebugWarn() {
  static const bool value = [] {
    const char* v = std::getenv("NCCL_DEBUG");
    return v != nullptr && (strcasecmp(v, "WARN") == 0 || strcasecmp(v, "INFO") == 0 ||
                            strcasecmp(v, "TRACE") == 0);
  }();
  return value;
}

}  // namespace simgpu::nccl
