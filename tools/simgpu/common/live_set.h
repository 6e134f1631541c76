// LiveSet: the handles a simgpu library has created and not destroyed, so that a destroyed or foreign handle
// gets the library's "not initialized" status instead of touching freed memory. Thread-safe. Leaked on purpose
// (static storage without a destructor) so handles stay checkable while other libraries' destructors run.
#ifndef TTRACE_TOOLS_SIMGPU_COMMON_LIVE_SET_H_
#define TTRACE_TOOLS_SIMGPU_COMMON_LIVE_SET_H_

#include <mutex>
#include <unordered_set>

namespace simgpu {

template <typename T>
class LiveSet {
 public:
  void Insert(const T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(p);
  }
  bool Erase(const T* p) {  // false when p was not live
    std::lock_guard<std::mutex> lock(mu_);
    return live_.erase(p) != 0;
  }
  bool Contains(const T* p) const {
    if (p == nullptr) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return live_.count(p) != 0;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_set<const T*> live_;
};

}  // namespace simgpu

#endif  // TTRACE_TOOLS_SIMGPU_COMMON_LIVE_SET_H_
