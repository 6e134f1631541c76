// CommRegistry: what the shim knows about each NCCL communicator of this process.
//
// A communicator is identified across ranks by a 64-bit hash: FNV-1a of its ncclUniqueId bytes for
// ncclCommInitRank (every rank hashes the same id), and for ncclCommInitAll (one process, one id-less clique) a
// hash of (pid, the process's InitAll call number), with rank = index in the clique; ncclCommInitRankScalable hashes
// all its ids; a child of ncclCommSplit hashes (parent hash, the parent's split number, color): every member of the
// parent calls split collectively and in the same order, so ranks of one child agree and two children differ; a
// child of ncclCommShrink hashes (parent hash, the parent's shrink number, the set of excluded ranks): every rank
// that stays calls shrink in the same order with the same list, and the excluded ones do not call it, so shrinks are
// numbered apart from splits (an excluded rank that lives on keeps the splits' numbers of the others).
// comm_op_index counts the collectives on each communicator on this rank, so equal (comm_hash, comm_op_index) on
// different ranks are one collective; point-to-point calls are counted apart, per (peer, direction), so that the
// k-th send from a to b is the k-th receive at b from a and collectives keep their numbers whatever p2p traffic
// ranks have.
// Thread-safe (one mutex). The process-wide instance (Comms()) is never destroyed.
#ifndef TTRACE_SHIM_COMM_REGISTRY_H_
#define TTRACE_SHIM_COMM_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace ttrace::shim {

uint64_t Fnv1a64(const void* data, size_t bytes);
uint64_t InitAllHash(uint32_t pid, uint64_t call_number);
uint64_t SplitHash(uint64_t parent_hash, uint64_t split_number, int32_t color);
// `excluded` is taken as a set: order and repeats do not change the hash.
uint64_t ShrinkHash(uint64_t parent_hash, uint64_t shrink_number, const int32_t* excluded, int count);

struct CommInfo {
  uint64_t hash = 0;     // 0: unknown (a communicator created through an API the shim does not intercept)
  int32_t rank = -1;
  int32_t size = -1;
  int32_t device = -1;
};

class CommRegistry {
 public:
  // Registers (or replaces: handles are reused after destroy) a communicator.
  void Add(uint64_t handle, const CommInfo& info);
  // The communicator's identity and the index of this call on it (post-incremented). An unknown handle is
  // registered with `describe()` (called without the lock held) so that its calls are still counted.
  CommInfo NextOp(uint64_t handle, const std::function<CommInfo()>& describe, uint64_t* op_index);
  // As NextOp for a point-to-point call: the index among this rank's sends to (`send`) or receives from `peer`.
  CommInfo NextP2p(uint64_t handle, const std::function<CommInfo()>& describe, int32_t peer, bool send,
                   uint64_t* op_index);
  // Fills in the rank, size and device of a known communicator where they are unknown (-1): a child of a
  // non-blocking split is not ready to say them at its creation.
  void Complete(uint64_t handle, const CommInfo& described);
  // The parent's identity and its next split number (post-incremented); false when the parent is unknown.
  bool NextSplit(uint64_t parent, CommInfo* info, uint64_t* split_number);
  // As NextSplit, for ncclCommShrink: the parent's next shrink number.
  bool NextShrink(uint64_t parent, CommInfo* info, uint64_t* shrink_number);
  // Removes the communicator; false (info unchanged) when unknown.
  bool Remove(uint64_t handle, CommInfo* info);
  // The communicator's identity; false (info unchanged) when unknown.
  bool Find(uint64_t handle, CommInfo* info);
  // The next ncclCommInitAll call number of this process.
  uint64_t NextInitAll();

 private:
  struct Entry {
    CommInfo info;
    uint64_t next_op = 0;
    uint64_t next_split = 0;
    uint64_t next_shrink = 0;
    std::unordered_map<int64_t, uint64_t> next_p2p;  // by peer * 2 + (send ? 1 : 0)
  };
  Entry& FindOrAdd(std::unique_lock<std::mutex>& lock, uint64_t handle, const std::function<CommInfo()>& describe);
  std::mutex mu_;
  std::unordered_map<uint64_t, Entry> comms_;
  uint64_t init_all_calls_ = 0;
};

CommRegistry& Comms();

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_COMM_REGISTRY_H_
