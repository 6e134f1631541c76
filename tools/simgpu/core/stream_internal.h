// Internal to libsimgpu.so (not part of its API): the stream object shared by streams.cc, events.cc and
// capture.cc, and the hooks by which stream capture intercepts stream operations.
#ifndef TTRACE_TOOLS_SIMGPU_CORE_STREAM_INTERNAL_H_
#define TTRACE_TOOLS_SIMGPU_CORE_STREAM_INTERNAL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "tools/simgpu/core/simgpu.h"

namespace simgpu {

struct Capture;

struct Stream {
  enum class Role { kLegacy, kPerThread, kCreated };
  struct Item {
    std::function<void()> work;
    std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> deps;  // (stream, ticket that must be complete)
    int64_t delay_ms = 0;  // SIMGPU_FAULT stream site: start this late once the dependencies are met
  };

  int device = 0;
  unsigned flags = cudaStreamDefault;
  int priority = 0;
  Role role = Role::kCreated;
  uint64_t id = 0;  // cudaStreamGetId: unique over the process

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  uint64_t enqueued = 0;   // tickets handed out; the n-th item enqueued has ticket n (1-based)
  uint64_t completed = 0;  // items finished; items finish in ticket order
  bool stopping = false;
  std::thread worker;

  // Stream capture state, guarded by the capture lock (capture.cc): the capture this stream takes part in (null
  // when not capturing), the nodes its next captured operation depends on, and the copy of them last handed out
  // by cudaStreamGetCaptureInfo (valid until the next call on the stream, as CUDA specifies).
  std::shared_ptr<Capture> capture;
  std::vector<GraphNode*> capture_deps;
  std::vector<GraphNode*> capture_deps_out;

  bool Blocking() const { return role != Role::kLegacy && (flags & cudaStreamNonBlocking) == 0; }
};

// What an event recorded in a capturing stream stands for: the capture and the nodes the stream had reached.
struct EventCaptureMark {
  std::weak_ptr<Capture> capture;
  std::vector<GraphNode*> nodes;
};

// Hooks for streams.cc and events.cc. Each returns false when capture is not involved (the caller proceeds as
// usual), else true with *status set: the operation was recorded into a capture (cudaSuccess) or refused.
bool CaptureEnqueue(Stream* stream, std::function<void()>* work, cudaError_t* status);
bool CaptureRecordEvent(Stream* stream, EventCaptureMark* mark, cudaError_t* status);
bool CaptureWaitEvent(Stream* stream, const EventCaptureMark& mark, bool recorded_outside, cudaError_t* status);
bool MarkInActiveCapture(const EventCaptureMark& mark);
// Called by DestroyStream before the stream goes: a capture it takes part in is invalidated.
void CaptureStreamDestroyed(Stream* stream);

}  // namespace simgpu

#endif  // TTRACE_TOOLS_SIMGPU_CORE_STREAM_INTERNAL_H_
