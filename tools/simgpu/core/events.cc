// Events: each cudaEventRecord creates a fresh marker that the stream completes when it reaches it; the event
// points at its latest marker. Waits and queries capture the marker current at call time, so re-recording an
// event never changes what an earlier cudaStreamWaitEvent waits for, as CUDA specifies. Markers are shared with
// the queued closures, so destroying an event with a pending record is safe.
// A record on a capturing stream marks a capture position instead (EventCaptureMark); it becomes the event's
// latest record, so a later wait joins the capture, until a record outside capture replaces it.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/core/stream_internal.h"

namespace simgpu {

namespace {

struct Marker {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::chrono::steady_clock::time_point when;
};

void WaitMarker(Marker* m) {
  std::unique_lock<std::mutex> lock(m->mu);
  m->cv.wait(lock, [m] { return m->done; });
}

}  // namespace

struct Event {
  unsigned flags = 0;
  std::mutex mu;
  std::shared_ptr<Marker> latest;  // null until the first record outside capture
  bool latest_in_capture = false;  // the latest record was made in a capture: `mark`, not `latest`, holds it
  EventCaptureMark mark;
};

namespace {

struct EventRegistry {
  std::mutex mu;
  std::unordered_map<const Event*, std::unique_ptr<Event>> live;
};

EventRegistry& Events() {
  static EventRegistry* registry = new EventRegistry;
  return *registry;
}

std::shared_ptr<Marker> Latest(Event* event) {
  std::lock_guard<std::mutex> lock(event->mu);
  return event->latest;
}

}  // namespace

Event* ResolveEvent(cudaEvent_t handle) {
  auto* e = reinterpret_cast<Event*>(handle);
  EventRegistry& r = Events();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.live.count(e) ? e : nullptr;
}

Event* CreateEvent(unsigned flags) {
  NoteRuntimeUse();
  auto event = std::make_unique<Event>();
  event->flags = flags;
  Event* raw = event.get();
  EventRegistry& r = Events();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live[raw] = std::move(event);
  return raw;
}

void DestroyEvent(Event* event) {
  EventRegistry& r = Events();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live.erase(event);
}

cudaError_t RecordEvent(Event* event, Stream* stream) {
  EventCaptureMark mark;
  cudaError_t status;
  if (CaptureRecordEvent(stream, &mark, &status)) {
    if (status == cudaSuccess) {
      std::lock_guard<std::mutex> lock(event->mu);
      event->mark = std::move(mark);
      event->latest_in_capture = true;
    }
    return status;
  }
  auto marker = std::make_shared<Marker>();
  status = Enqueue(stream, [marker] {
    {
      std::lock_guard<std::mutex> lock(marker->mu);
      marker->when = std::chrono::steady_clock::now();
      marker->done = true;
    }
    marker->cv.notify_all();
  });
  if (status != cudaSuccess) return status;
  std::lock_guard<std::mutex> lock(event->mu);
  event->latest = marker;
  event->latest_in_capture = false;
  event->mark = EventCaptureMark{};
  return cudaSuccess;
}

bool EventInCapture(Event* event) {
  std::lock_guard<std::mutex> lock(event->mu);
  return event->latest_in_capture && MarkInActiveCapture(event->mark);
}

void SynchronizeEvent(Event* event) {
  std::shared_ptr<Marker> m = Latest(event);
  if (m) WaitMarker(m.get());
}

bool EventDone(Event* event) {
  std::shared_ptr<Marker> m = Latest(event);
  if (!m) return true;
  std::lock_guard<std::mutex> lock(m->mu);
  return m->done;
}

cudaError_t StreamWaitEvent(Stream* stream, Event* event) {
  std::shared_ptr<Marker> m;
  EventCaptureMark mark;
  {
    std::lock_guard<std::mutex> lock(event->mu);
    if (event->latest_in_capture) {
      mark = event->mark;
    } else {
      m = event->latest;
    }
  }
  cudaError_t status;
  if (CaptureWaitEvent(stream, mark, /*recorded_outside=*/m != nullptr, &status)) return status;
  if (!m) return cudaSuccess;
  return Enqueue(stream, [m] { WaitMarker(m.get()); });
}

float ElapsedMs(Event* start, Event* end) {
  std::shared_ptr<Marker> a = Latest(start);
  std::shared_ptr<Marker> b = Latest(end);
  if (!a || !b) return 0.0f;
  std::chrono::steady_clock::time_point ta, tb;
  {
    std::lock_guard<std::mutex> lock(a->mu);
    ta = a->when;
  }
  {
    std::lock_guard<std::mutex> lock(b->mu);
    tb = b->when;
  }
  return std::chrono::duration<float, std::milli>(tb - ta).count();
}

bool EventRecorded(Event* event) { return Latest(event) != nullptr; }

unsigned EventFlags(Event* event) { return event->flags; }

}  // namespace simgpu
