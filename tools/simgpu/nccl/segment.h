// The memory a communicator's ranks share: a POSIX shared-memory segment named by the ncclUniqueId when the
// ranks are separate processes (ncclCommInitRank), or anonymous shared memory when one process holds every rank
// (ncclCommInitAll). Layout, all offsets derived from the header:
//
//   SegmentHeader | RankSlot[nranks] | staging[nranks][2][chunk_bytes] | RingHeader[nranks*nranks] |
//   ring data[nranks*nranks][ring_bytes]
//
// Staging buffers carry collectives chunk by chunk (two per rank, alternating with the barrier epoch's parity);
// ring (src, dst) is a single-producer single-consumer byte ring for ncclSend from src to ncclRecv on dst.
// Every field another process writes is read through atomics; data written before a release store (barrier
// arrival, ring head/tail) is visible after the matching acquire load.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_SEGMENT_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_SEGMENT_H_

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace simgpu::nccl {

// What a rank is about to execute, published so that peers can detect mismatched calls.
struct OpStamp {
  uint32_t kind;
  uint32_t dtype;
  uint32_t redop;
  int32_t root;
  uint64_t count;
};

struct alignas(64) SegmentHeader {
  std::atomic<uint32_t> ready;  // 1 once the creator has laid out the segment (release)
  uint32_t nranks;
  uint64_t magic;
  uint64_t chunk_bytes;
  uint64_t ring_bytes;
  uint64_t total_bytes;
  alignas(64) std::atomic<uint32_t> bell;      // futex word: bumped after every arrival and ring transfer
  std::atomic<uint32_t> sleepers;              // threads blocked in FUTEX_WAIT on bell
  alignas(64) std::atomic<int32_t> failed_by;  // rank + 1 of the first rank that gave up; 0 while healthy
  char failure[256];                           // its reason, written before failed_by
};

struct alignas(64) RankSlot {
  std::atomic<int32_t> pid;      // 0 until the rank joined
  int32_t device;                // the rank's CUDA device (duplicate-GPU check)
  std::atomic<uint64_t> epoch;   // stream barriers this rank has arrived at
  OpStamp stamp[2];              // by epoch parity
  std::atomic<uint64_t> host_epoch;  // host exchanges (ncclCommSplit) this rank has arrived at
  int32_t split_color[2];            // by host epoch parity
  int32_t split_key[2];
};

struct alignas(64) RingHeader {
  std::atomic<uint64_t> head;  // bytes the sender has written, ever
  char pad0[56];
  std::atomic<uint64_t> tail;  // bytes the receiver has consumed, ever
  char pad1[56];
};

static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be address-free");

// ncclUniqueId <-> segment name. MakeUniqueId draws a fresh random name; it does not create the segment.
ncclResult_t MakeUniqueId(ncclUniqueId* id);
bool ParseUniqueId(const ncclUniqueId& id, std::string* name);
// The id every member of a child communicator derives from its identity hash (Comm::Split).
ncclUniqueId DerivedUniqueId(uint64_t hash);
// FNV-1a over the id's bytes: a communicator's identity (NCCL's commHash is a hash of the id too).
uint64_t HashBytes(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull);

class Segment {
 public:
  // Creates the named segment (first caller) or attaches to it (waiting up to the timeout for the creator to
  // lay it out). Returns ncclInvalidArgument for an id not made by ncclGetUniqueId, ncclInvalidUsage when the
  // segment was made for a different nranks or its ranks have all joined already, ncclSystemError on OS
  // failures and timeouts; the message went to the log.
  static ncclResult_t Open(const ncclUniqueId& id, int nranks, std::shared_ptr<Segment>* out);
  // Anonymous shared memory for nranks ranks in this process; nullptr when out of memory (logged).
  static std::shared_ptr<Segment> Anonymous(int nranks);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Removes the name, so the memory goes away with the last mapping. Idempotent.
  void Unlink();

  int nranks() const { return static_cast<int>(header()->nranks); }
  size_t chunk_bytes() const { return header()->chunk_bytes; }
  size_t ring_bytes() const { return header()->ring_bytes; }
  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base_); }
  RankSlot* slot(int rank) const;
  char* staging(int rank, int parity) const;
  RingHeader* ring(int src, int dst) const;
  char* ring_data(int src, int dst) const;

 private:
  Segment(char* base, size_t bytes, std::string name) : base_(base), bytes_(bytes), name_(std::move(name)) {}

  char* base_;
  size_t bytes_;
  std::string name_;  // empty for anonymous segments and after Unlink
};

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_SEGMENT_H_
