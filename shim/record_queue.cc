// An ordered map suffices: records wait only while an earlier call is still inside its vendor function, so the
// map stays as small as the number of concurrently running intercepted calls, unless one of them hangs: then
// CaptureEngine bounds it with SkipStalled.
#include "shim/record_queue.h"

#include <algorithm>
#include <utility>

namespace ttrace::shim {

bool RecordQueue::Put(uint64_t ticket, QueuedRecord record) {
  if (ticket < next_take_) return false;
  published_.emplace(ticket, std::move(record));
  return true;
}

void RecordQueue::TakeReady(std::vector<QueuedRecord>* out) {
  while (!published_.empty() && published_.begin()->first == next_take_) {
    out->push_back(std::move(published_.begin()->second));
    published_.erase(published_.begin());
    ++next_take_;
  }
}

void RecordQueue::TakeAll(uint64_t reserved, std::vector<QueuedRecord>* out) {
  for (auto& [ticket, record] : published_) {
    out->push_back(std::move(record));
    next_take_ = std::max(next_take_, ticket + 1);
  }
  published_.clear();
  next_take_ = std::max(next_take_, reserved);
}

void RecordQueue::SkipStalled(std::vector<uint64_t>* skipped, std::vector<QueuedRecord>* out) {
  if (published_.empty()) return;
  for (; next_take_ < published_.begin()->first; ++next_take_) skipped->push_back(next_take_);
  TakeReady(out);
}

}  // namespace ttrace::shim
