// Classic ring: the live bytes are one circular interval [tail, head) of length used_; tail is implied by the
// oldest span.
#include "shim/byte_ring.h"

namespace ttrace::shim {
namespace {

size_t RoundUp(size_t n) { return (n + ByteRing::kAlignment - 1) / ByteRing::kAlignment * ByteRing::kAlignment; }

}  // namespace

bool ByteRing::CanEverFit(size_t bytes) const { return bytes > 0 && RoundUp(bytes) <= capacity_; }

bool ByteRing::Allocate(size_t bytes, size_t* offset) {
  if (!CanEverFit(bytes)) return false;
  const size_t n = RoundUp(bytes);
  if (spans_.empty()) head_ = 0, used_ = 0;
  const size_t tail = spans_.empty() ? 0 : spans_.front().offset;
  if (spans_.empty() || head_ > tail || (head_ == tail && used_ == 0)) {
    // Free space: [head, capacity) and then [0, tail).
    if (capacity_ - head_ >= n) {
      *offset = head_;
      spans_.push_back({head_, n});
    } else if (tail >= n) {
      *offset = 0;
      spans_.push_back({0, n + (capacity_ - head_)});  // the skipped tail is freed with this span
    } else {
      return false;
    }
  } else {
    // Wrapped: free space is [head, tail).
    if (tail - head_ < n) return false;
    *offset = head_;
    spans_.push_back({head_, n});
  }
  used_ += spans_.back().bytes;
  head_ = *offset + n;
  if (head_ == capacity_) head_ = 0;
  return true;
}

void ByteRing::ReleaseOldest() {
  if (spans_.empty()) return;
  used_ -= spans_.front().bytes;
  spans_.pop_front();
}

}  // namespace ttrace::shim
