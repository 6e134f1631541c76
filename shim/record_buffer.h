// How an intercepted call hands its record to the drain thread without a lock, an allocation or a system call.
//
// OrderCounter hands out tickets (one per record, the order records are written in) and seqs (one per op)
// together, with one 16-byte compare-and-swap, so that seqs increase in ticket order whichever threads call.
//
// RecordBuffer is a single-producer single-consumer byte ring of records: the producer is the one thread that
// owns it (CaptureEngine gives each calling thread its own), the consumer whoever holds consumer_mu() (the drain
// thread; the final drain at shutdown). Push copies a record (a header, the body, the payload, 8-byte aligned; a
// record never wraps around the end) and publishes it with one release store; Front and Pop read the records in
// push order, in place. A thread's records are in push order, not ticket order (a notice
// of a dropped payload is pushed before the op whose Publish comes after its vendor call): the consumer merges
// them by ticket (RecordQueue). The buffer also says which op its thread is inside (Running), so that a call that
// never returns can be named by its seq.
//
// Threads: Push, SetRunning, ClearRunning: the owner only. Front, Pop: a consumer holding consumer_mu(). size(),
// Running(): any thread.
#ifndef TTRACE_SHIM_RECORD_BUFFER_H_
#define TTRACE_SHIM_RECORD_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "ttrace/format.h"

namespace ttrace::shim {

class OrderCounter {
 public:
  struct Pair {
    uint64_t ticket;
    uint64_t seq;  // the seq count before this call: this op's seq when it is one
  };
  // The next ticket, and the next seq when `op` (else the seq count, unchanged). Lock-free; any thread.
  Pair Next(bool op);
  uint64_t tickets() const { return Load().ticket; }
  uint64_t seqs() const { return Load().seq; }

 private:
  Pair Load() const;
  alignas(16) mutable unsigned __int128 value_ = 0;  // low half: tickets handed out; high half: seqs
};

class RecordBuffer {
 public:
  static constexpr size_t kCapacity = 512 << 10;  // bytes: ~2500 GEMM records
  static constexpr size_t kMaxRecordBytes = 4096;  // body + payload; larger records take another path
  struct SlotHeader {
    uint64_t ticket;
    uint16_t type;  // format::RecordType; kWrap: the rest of the ring up to its end is unused
    uint16_t reserved;
    uint32_t body_bytes;
    uint32_t payload_bytes;
    uint32_t reserved1;
  };

  // False when the ring has no room or the record is larger than kMaxRecordBytes (the caller takes another path).
  bool Push(uint64_t ticket, format::RecordType type, const void* body, size_t body_bytes, const void* payload,
            size_t payload_bytes);
  // The oldest pushed record (in place: valid until Pop), or false when there is none. The caller holds
  // consumer_mu().
  bool Front(SlotHeader* header, const char** body, const char** payload);
  void Pop();  // after a successful Front
  std::mutex& consumer_mu() { return consumer_mu_; }
  size_t size() const {  // records pushed and not popped
    return pushed_.load(std::memory_order_relaxed) - popped_.load(std::memory_order_relaxed);
  }

  static constexpr uint64_t kNone = UINT64_MAX;
  void SetRunning(uint64_t ticket, uint64_t seq) {
    // Release on both: a reader that sees this seq also sees the kNone stored by ClearRunning before it.
    running_seq_.store(seq, std::memory_order_release);
    running_ticket_.store(ticket, std::memory_order_release);
  }
  void ClearRunning() { running_ticket_.store(kNone, std::memory_order_release); }
  // True, with its seq, when the owner is inside the op of `ticket`.
  bool Running(uint64_t ticket, uint64_t* seq) const;

  // Pushes whose ticket was below an earlier push's (a notice pushed inside an op, before the op's record): the
  // consumer takes such a ring's records into its queue at once, since its front may hide the ticket due.
  uint64_t reorders() const { return reorders_.load(std::memory_order_acquire); }

  // Set by the owner's thread-exit hook: the buffer may be given to a new thread once it is empty.
  std::atomic<bool> retired{false};

 private:
  static constexpr uint16_t kWrap = 0xffff;
  static size_t EntryBytes(const SlotHeader& h) { return (sizeof h + h.body_bytes + h.payload_bytes + 7) & ~size_t{7}; }

  // Owner: bytes written (head_) and records pushed; its last view of tail_.
  alignas(64) std::atomic<uint64_t> head_{0};
  std::atomic<uint64_t> pushed_{0};
  uint64_t cached_tail_ = 0;
  uint64_t max_ticket_ = 0;
  std::atomic<uint64_t> reorders_{0};
  // Consumer: bytes freed (tail_), records popped, the size of the entry Front returned.
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> popped_{0};
  size_t front_bytes_ = 0;
  std::mutex consumer_mu_;
  alignas(64) std::atomic<uint64_t> running_ticket_{kNone};
  std::atomic<uint64_t> running_seq_{0};
  alignas(64) char ring_[kCapacity];
};

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_RECORD_BUFFER_H_
