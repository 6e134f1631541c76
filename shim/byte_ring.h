// ByteRing: first-in-first-out allocation of byte ranges in a fixed buffer (the pinned capture ring).
//
// Allocations are contiguous and released in the order they were made, which is the order the drain thread
// finishes tensors. An allocation that does not fit before the end of the buffer starts over at offset 0 (the
// skipped tail is accounted to it and freed with it). Only offsets are managed; the owner holds the memory.
// Not thread-safe: CaptureEngine calls it under its mutex.
#ifndef TTRACE_SHIM_BYTE_RING_H_
#define TTRACE_SHIM_BYTE_RING_H_

#include <cstddef>
#include <cstdint>
#include <deque>

namespace ttrace::shim {

class ByteRing {
 public:
  static constexpr size_t kAlignment = 256;

  explicit ByteRing(size_t capacity) : capacity_(capacity) {}

  // Offset of `bytes` free contiguous bytes (rounded up to kAlignment), or false when they do not fit now.
  bool Allocate(size_t bytes, size_t* offset);
  // Releases the oldest live allocation.
  void ReleaseOldest();

  // Whether an allocation of `bytes` can ever succeed (fits in an empty ring).
  bool CanEverFit(size_t bytes) const;
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  size_t live() const { return spans_.size(); }

 private:
  struct Span {
    size_t offset;
    size_t bytes;  // including a skipped tail before it
  };
  size_t capacity_;
  size_t head_ = 0;  // next free offset
  size_t used_ = 0;
  std::deque<Span> spans_;
};

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_BYTE_RING_H_
