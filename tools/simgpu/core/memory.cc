// Memory: "device" and pinned allocations are host allocations recorded in one address-ordered map, so any
// interior pointer can be attributed (cudaPointerGetAttributes, argument checks on copies). The simulated
// capacity is enforced per device so that cudaErrorMemoryAllocation can be produced and tested.
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>

#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

constexpr size_t kAlignment = 256;  // cudaMalloc guarantees at least 256-byte alignment

struct MemoryRegistry {
  std::mutex mu;
  std::map<uintptr_t, Allocation> by_base;
  size_t device_bytes[kMaxDevices] = {};
};

MemoryRegistry& Mem() {
  static MemoryRegistry* registry = new MemoryRegistry;
  return *registry;
}

void* Allocate(size_t bytes, MemoryKind kind) {
  if (bytes == 0) return nullptr;
  int device = CurrentDevice();
  if (device < 0 || device >= kMaxDevices) return nullptr;
  MemoryRegistry& r = Mem();
  std::lock_guard<std::mutex> lock(r.mu);
  if (kind == MemoryKind::kDevice && bytes > kDeviceMemoryBytes - r.device_bytes[device]) return nullptr;
  void* p = nullptr;
  if (posix_memalign(&p, kAlignment, bytes) != 0) return nullptr;
  Allocation a;
  a.kind = kind;
  a.device = device;
  a.base = p;
  a.bytes = bytes;
  r.by_base[reinterpret_cast<uintptr_t>(p)] = a;
  if (kind == MemoryKind::kDevice) r.device_bytes[device] += bytes;
  return p;
}

bool Release(void* ptr, MemoryKind kind) {
  MemoryRegistry& r = Mem();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == r.by_base.end() || it->second.kind != kind) return false;
  if (kind == MemoryKind::kDevice) r.device_bytes[it->second.device] -= it->second.bytes;
  r.by_base.erase(it);
  free(ptr);
  return true;
}

}  // namespace

void* AllocDevice(size_t bytes) {
  NoteRuntimeUse();
  return Allocate(bytes, MemoryKind::kDevice);
}
bool FreeDevice(void* ptr) { return Release(ptr, MemoryKind::kDevice); }
void* AllocHostPinned(size_t bytes) {
  NoteRuntimeUse();
  return Allocate(bytes, MemoryKind::kHostPinned);
}
bool FreeHostPinned(void* ptr) { return Release(ptr, MemoryKind::kHostPinned); }

Allocation FindAllocation(const void* ptr) {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  MemoryRegistry& r = Mem();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.upper_bound(addr);
  if (it == r.by_base.begin()) return Allocation{};
  --it;
  if (addr - it->first >= it->second.bytes) return Allocation{};
  return it->second;
}

MemoryKind KindOf(const void* ptr, int* device) {
  Allocation a = FindAllocation(ptr);
  if (device != nullptr) *device = a.device;
  return a.kind;
}

bool InAllocation(const void* ptr, size_t bytes, MemoryKind kind) {
  Allocation a = FindAllocation(ptr);
  if (a.kind != kind) return false;
  if (kind == MemoryKind::kUnregistered) return true;
  size_t offset = reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(a.base);
  return bytes <= a.bytes - offset;
}

size_t DeviceBytesInUse(int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  MemoryRegistry& r = Mem();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.device_bytes[device];
}

}  // namespace simgpu
