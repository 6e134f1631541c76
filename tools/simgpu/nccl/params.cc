#include "tools/simgpu/nccl/params.h"

#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simgpu::nccl {
namespace {

double ReadNumber(const char* name, double fallback, bool allow_zero) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(allow_zero ? d >= 0 : d > 0)) {
    std::fprintf(stderr, "simgpu nccl: ignoring %s=%s (expected a %s number); using %g\n", name, v,
                 allow_zero ? "non-negative" : "positive", fallback);
    return fallback;
  }
  return d;
}

size_t ReadBytes(const char* name, double fallback, size_t min, size_t multiple) {
  double d = ReadNumber(name, fallback, false);
  if (d > double(1ull << 30)) d = double(1ull << 30);
  size_t b = static_cast<size_t>(d);
  if (b < min) b = min;
  return (b + multiple - 1) / multiple * multiple;
}

}  // namespace

double TimeoutSeconds() {
  static const double value = ReadNumber("SIMGPU_NCCL_TIMEOUT_S", 120, false);
  return value;
}

size_t ChunkBytes() {
  static const size_t value = ReadBytes("SIMGPU_NCCL_CHUNK_BYTES", 1 << 20, 256, 64);
  return value;
}

ReductionOrder Order() {
  static const ReductionOrder value = [] {
    const char* v = std::getenv("SIMGPU_NCCL_ORDER");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "ring") == 0) return ReductionOrder::kRing;
    if (std::strcmp(v, "rank") == 0) return ReductionOrder::kRank;
    std::fprintf(stderr, "simgpu nccl: ignoring SIMGPU_NCCL_ORDER=%s (expected ring or rank); using ring\n", v);
    return ReductionOrder::kRing;
  }();
  return value;
}

size_t RingChunkBytes() {
  static const size_t value = ReadBytes("SIMGPU_NCCL_RING_CHUNK_BYTES", 2 << 20, 16, 16);
  return value;
}

double AsyncDelaySeconds() {
  static const double value = ReadNumber("SIMGPU_NCCL_ASYNC_DELAY_MS", 0, true) / 1000;
  return value;
}

int CommBlockingOverride() {
  static const int value = [] {
    const char* v = std::getenv("NCCL_COMM_BLOCKING");
    if (v == nullptr || *v == '\0') return -1;
    if (std::strcmp(v, "0") == 0) return 0;
    if (std::strcmp(v, "1") == 0) return 1;
    std::fprintf(stderr, "simgpu nccl: ignoring NCCL_COMM_BLOCKING=%s (expected 0 or 1)\n", v);
    return -1;
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
