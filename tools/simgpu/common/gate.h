// Test helper: a gate that stream work can wait on, so a test holds a stream at a known point and observes what
// the host sees before the stream proceeds. Header-only; used by simgpu's tests only.
#ifndef TTRACE_TOOLS_SIMGPU_COMMON_GATE_H_
#define TTRACE_TOOLS_SIMGPU_COMMON_GATE_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace simgpu::testing {

class Gate {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  // A cudaHostFn_t that waits on the gate passed as user data.
  static void WaitFn(void* gate) { static_cast<Gate*>(gate)->Wait(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Polls `done` until it returns true or `timeout` passes; returns its last value. For asserting that something
// happens while a gate elsewhere is still closed, without a deadlock when an implementation wrongly serializes.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

}  // namespace simgpu::testing

#endif  // TTRACE_TOOLS_SIMGPU_COMMON_GATE_H_
