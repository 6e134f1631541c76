// Devices and process identity, read from the environment once. A malformed variable stops the process with a
// clear message rather than running a test on a device layout or rank it did not ask for.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "tools/simgpu/core/env.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

thread_local int current_device = 0;

int ReadIntEnv(const char* name, long fallback, long lo, long hi) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return static_cast<int>(fallback);
  long value = 0;
  if (!ParseDecimal(text, &value) || value < lo || value > hi) {
    Die("simgpu: %s=\"%s\" is not an integer in [%ld, %ld]\n", name, text, lo, hi);
  }
  return static_cast<int>(value);
}

}  // namespace

bool ParseDecimal(const std::string& text, long* out) {
  if (text.empty() || text.size() > 18) return false;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

void Die(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fflush(stderr);
  _exit(2);
}

int DeviceCount() {
  static const int count = ReadIntEnv("SIMGPU_DEVICES", 8, 1, kMaxDevices);
  return count;
}

int CurrentDevice() { return current_device; }
void SetCurrentDevice(int device) { current_device = device; }

int ProcessRank() {
  static const int rank = ReadIntEnv("RANK", 0, 0, 1 << 30);
  return rank;
}

// Reads the environment when the library loads, so a malformed variable fails the program at start-up instead
// of at its first GEMM.
__attribute__((constructor)) static void ValidateEnvironment() {
  DeviceCount();
  ProcessRank();
  Faults();
}

}  // namespace simgpu
