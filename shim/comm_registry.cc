// FNV-1a because it is tiny, stable across platforms and versions, and good enough to tell apart the few
// communicators of one job; the analyzer never trusts the hash alone (it also checks ranks and sizes).
#include "shim/comm_registry.h"

namespace ttrace::shim {

uint64_t Fnv1a64(const void* data, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t InitAllHash(uint32_t pid, uint64_t call_number) {
  unsigned char bytes[12];
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<unsigned char>(pid >> (8 * i));
  for (int i = 0; i < 8; ++i) bytes[4 + i] = static_cast<unsigned char>(call_number >> (8 * i));
  return Fnv1a64(bytes, sizeof bytes);
}

void CommRegistry::Add(uint64_t handle, const CommInfo& info) {
  std::lock_guard<std::mutex> lock(mu_);
  comms_[handle] = Entry{info, 0};
}

CommInfo CommRegistry::NextOp(uint64_t handle, const std::function<CommInfo()>& describe, uint64_t* op_index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = comms_.find(handle);
    if (it != comms_.end()) {
      *op_index = it->second.next_op++;
      return it->second.info;
    }
  }
  const CommInfo info = describe();
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = comms_.emplace(handle, Entry{info, 0}).first->second;
  *op_index = e.next_op++;
  return e.info;
}

bool CommRegistry::Remove(uint64_t handle, CommInfo* info) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(handle);
  if (it == comms_.end()) return false;
  *info = it->second.info;
  comms_.erase(it);
  return true;
}

bool CommRegistry::Find(uint64_t handle, CommInfo* info) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(handle);
  if (it == comms_.end()) return false;
  *info = it->second.info;
  return true;
}

uint64_t CommRegistry::NextInitAll() {
  std::lock_guard<std::mutex> lock(mu_);
  return init_all_calls_++;
}

CommRegistry& Comms() {
  static CommRegistry* registry = new CommRegistry;
  return *registry;
}

}  // namespace ttrace::shim
