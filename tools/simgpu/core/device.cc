// Devices and process identity, read from the environment once. A malformed variable stops the process with a
// clear message rather than running a test on a device layout or rank it did not ask for.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tools/simgpu/core/env.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

thread_local int current_device = 0;
thread_local bool context_bound = false;
std::atomic<bool> driver_initialized{false};
std::atomic<uint64_t> devices_used{0};  // bit d: the runtime used device d (kMaxDevices == 64)
static_assert(kMaxDevices <= 64, "devices_used holds one bit per device");

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
void SetCurrentDevice(int device) {
  current_device = device;
  NoteRuntimeUse();
}

// Called on every stream operation: reads first, so the shared words are written once, not per call.
void NoteRuntimeUse() {
  context_bound = true;
  if (!driver_initialized.load(std::memory_order_relaxed)) driver_initialized.store(true);
  if (current_device >= 0 && current_device < kMaxDevices) {
    const uint64_t bit = uint64_t{1} << current_device;
    if ((devices_used.load(std::memory_order_relaxed) & bit) == 0) devices_used.fetch_or(bit);
  }
}

void InitializeDriver() { driver_initialized.store(true, std::memory_order_relaxed); }
bool DriverInitialized() { return driver_initialized.load(std::memory_order_relaxed); }
bool ContextBound() { return context_bound; }
void UnbindContext() { context_bound = false; }
bool PrimaryContextUsed(int device) {
  return device >= 0 && device < kMaxDevices && (devices_used.load() >> device & 1) != 0;
}

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
