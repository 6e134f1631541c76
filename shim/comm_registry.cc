// FNV-1a because it is tiny, stable across platforms and versions, and good enough to tell apart the few
// communicators of one job; the analyzer never trusts the hash alone (it also checks ranks and sizes).
#include "shim/comm_registry.h"

#include <algorithm>
#include <vector>

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
  comms_[handle] = Entry{info};
}

uint64_t SplitHash(uint64_t parent_hash, uint64_t split_number, int32_t color) {
  unsigned char bytes[20];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(parent_hash >> (8 * i));
  for (int i = 0; i < 8; ++i) bytes[8 + i] = static_cast<unsigned char>(split_number >> (8 * i));
  for (int i = 0; i < 4; ++i) bytes[16 + i] = static_cast<unsigned char>(static_cast<uint32_t>(color) >> (8 * i));
  return Fnv1a64(bytes, sizeof bytes);
}

uint64_t ShrinkHash(uint64_t parent_hash, uint64_t shrink_number, const int32_t* excluded, int count) {
  std::vector<int32_t> ranks;
  if (excluded != nullptr && count > 0) ranks.assign(excluded, excluded + count);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<unsigned char> bytes = {'s', 'h', 'r', 'i', 'n', 'k'};
  const auto put = [&bytes](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  put(parent_hash, 8);
  put(shrink_number, 8);
  for (const int32_t r : ranks) put(static_cast<uint32_t>(r), 4);
  return Fnv1a64(bytes.data(), bytes.size());
}

// `lock` holds mu_; it is released while `describe` runs.
CommRegistry::Entry& CommRegistry::FindOrAdd(std::unique_lock<std::mutex>& lock, uint64_t handle,
                                             const std::function<CommInfo()>& describe) {
  auto it = comms_.find(handle);
  if (it != comms_.end()) return it->second;
  lock.unlock();
  const CommInfo info = describe();
  lock.lock();
  return comms_.emplace(handle, Entry{info}).first->second;
}

CommInfo CommRegistry::NextOp(uint64_t handle, const std::function<CommInfo()>& describe, uint64_t* op_index) {
  std::unique_lock<std::mutex> lock(mu_);
  Entry& e = FindOrAdd(lock, handle, describe);
  *op_index = e.next_op++;
  return e.info;
}

CommInfo CommRegistry::NextP2p(uint64_t handle, const std::function<CommInfo()>& describe, int32_t peer, bool send,
                               uint64_t* op_index) {
  std::unique_lock<std::mutex> lock(mu_);
  Entry& e = FindOrAdd(lock, handle, describe);
  *op_index = e.next_p2p[static_cast<int64_t>(peer) * 2 + (send ? 1 : 0)]++;
  return e.info;
}

void CommRegistry::Complete(uint64_t handle, const CommInfo& described) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(handle);
  if (it == comms_.end()) return;
  CommInfo& info = it->second.info;
  if (info.rank < 0) info.rank = described.rank;
  if (info.size < 0) info.size = described.size;
  if (info.device < 0) info.device = described.device;
}

bool CommRegistry::NextSplit(uint64_t parent, CommInfo* info, uint64_t* split_number) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(parent);
  if (it == comms_.end()) return false;
  *info = it->second.info;
  *split_number = it->second.next_split++;
  return true;
}

bool CommRegistry::NextShrink(uint64_t parent, CommInfo* info, uint64_t* shrink_number) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(parent);
  if (it == comms_.end()) return false;
  *info = it->second.info;
  *shrink_number = it->second.next_shrink++;
  return true;
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
