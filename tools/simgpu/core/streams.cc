// Streams: a FIFO of closures drained by one worker thread per stream, so the host runs ahead of the "device"
// as it does with a GPU. CUDA's legacy default stream semantics are dependencies between queue items: an item
// records, when it is enqueued, the tickets of the streams it must wait for, and the worker waits for those
// tickets before running it. Tickets are taken under a per-device order lock, so dependencies always point to
// items enqueued earlier and cannot form a cycle.
//
// The SIMGPU_FAULT stream site numbers every enqueued item in one process-wide sequence; a delayed item holds its
// worker after its dependencies are met, so everything behind it on the stream is late too.
//
// The registry and the legacy streams are never destroyed: worker threads may still be waiting on them while the
// process exits.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/core/stream_internal.h"

namespace simgpu {

namespace {

struct DeviceStreams {
  std::mutex order_mu;  // serializes ticket assignment among the legacy and blocking streams of the device
  std::shared_ptr<Stream> legacy;
  std::vector<std::shared_ptr<Stream>> all;  // every live stream of the device, the legacy one included
};

struct Registry {
  std::mutex mu;  // guards `live`, each device's `all` and `legacy`
  std::unordered_map<const Stream*, std::shared_ptr<Stream>> live;
  std::vector<std::unique_ptr<DeviceStreams>> devices;
};

Registry& Reg() {
  static Registry* registry = [] {
    auto* r = new Registry;
    for (int d = 0; d < kMaxDevices; ++d) r->devices.push_back(std::make_unique<DeviceStreams>());
    return r;
  }();
  return *registry;
}

void RunWorker(Stream* s) {
  for (;;) {
    Stream::Item item;
    {
      std::unique_lock<std::mutex> lock(s->mu);
      s->cv.wait(lock, [s] { return s->stopping || !s->queue.empty(); });
      if (s->queue.empty()) return;
      item = std::move(s->queue.front());
      s->queue.pop_front();
    }
    for (auto& [dep, ticket] : item.deps) {
      std::unique_lock<std::mutex> lock(dep->mu);
      dep->cv.wait(lock, [&, d = dep.get()] { return d->completed >= ticket; });
    }
    if (item.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(item.delay_ms));
    item.work();
    // Released before the item counts as complete, so whatever the closure held (a graph's memory, a
    // library's buffers) is gone once a synchronization returns.
    item = Stream::Item{};
    {
      std::lock_guard<std::mutex> lock(s->mu);
      ++s->completed;
    }
    s->cv.notify_all();
  }
}

std::shared_ptr<Stream> StartStream(int device, unsigned flags, int priority, Stream::Role role) {
  auto s = std::make_shared<Stream>();
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  s->role = role;
  static std::atomic<uint64_t> next_id{1};
  s->id = next_id.fetch_add(1);
  s->worker = std::thread(RunWorker, s.get());
  char name[16];
  snprintf(name, sizeof name, "simgpu-d%d", device);
  pthread_setname_np(s->worker.native_handle(), name);
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live[s.get()] = s;
  r.devices[device]->all.push_back(s);
  return s;
}

void StopStream(const std::shared_ptr<Stream>& s) {
  {
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.erase(s.get());
    auto& all = r.devices[s->device]->all;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i] == s) {
        all.erase(all.begin() + i);
        break;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stopping = true;
  }
  s->cv.notify_all();
  if (s->worker.get_id() == std::this_thread::get_id()) {
    s->worker.detach();
  } else {
    s->worker.join();
  }
}

Stream* LegacyStream(int device) {
  Registry& r = Reg();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.devices[device]->legacy) return r.devices[device]->legacy.get();
  }
  std::shared_ptr<Stream> fresh = StartStream(device, cudaStreamDefault, 0, Stream::Role::kLegacy);
  std::lock_guard<std::mutex> lock(r.mu);
  std::shared_ptr<Stream>& slot = r.devices[device]->legacy;
  if (!slot) {
    slot = fresh;
    return slot.get();
  }
  // Another thread won the race; retire ours (it has no work).
  r.live.erase(fresh.get());
  auto& all = r.devices[device]->all;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == fresh) {
      all.erase(all.begin() + i);
      break;
    }
  }
  {
    std::lock_guard<std::mutex> slock(fresh->mu);
    fresh->stopping = true;
  }
  fresh->cv.notify_all();
  fresh->worker.detach();
  return slot.get();
}

// Per-thread default streams, one per device, destroyed (after draining) when the thread exits.
struct PerThreadStreams {
  std::shared_ptr<Stream> by_device[kMaxDevices];
  ~PerThreadStreams() {
    for (auto& s : by_device) {
      if (s) StopStream(s);
    }
  }
};

Stream* PerThreadStream(int device) {
  thread_local PerThreadStreams streams;
  std::shared_ptr<Stream>& s = streams.by_device[device];
  if (!s) s = StartStream(device, cudaStreamDefault, 0, Stream::Role::kPerThread);
  return s.get();
}

void WaitTicket(Stream* s, uint64_t ticket) {
  std::unique_lock<std::mutex> lock(s->mu);
  s->cv.wait(lock, [&] { return s->completed >= ticket; });
}

}  // namespace

Stream* ResolveStream(cudaStream_t handle) {
  int device = CurrentDevice();
  if (device < 0 || device >= DeviceCount()) return nullptr;
  NoteRuntimeUse();
  if (handle == nullptr || handle == cudaStreamLegacy) return LegacyStream(device);
  if (handle == cudaStreamPerThread) return PerThreadStream(device);
  auto* s = reinterpret_cast<Stream*>(handle);
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.live.count(s) ? s : nullptr;
}

Stream* LookupStream(cudaStream_t handle) {
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread) return nullptr;
  auto* s = reinterpret_cast<Stream*>(handle);
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(s);
  return it != r.live.end() && it->second->role == Stream::Role::kCreated ? s : nullptr;
}

Stream* CreateStream(unsigned flags, int priority) {
  NoteRuntimeUse();
  return StartStream(CurrentDevice(), flags, priority, Stream::Role::kCreated).get();
}

void DestroyStream(Stream* stream) {
  std::shared_ptr<Stream> s;
  {
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.live.find(stream);
    if (it == r.live.end() || it->second->role != Stream::Role::kCreated) return;
    s = it->second;
  }
  CaptureStreamDestroyed(s.get());
  StopStream(s);
}

cudaError_t Enqueue(Stream* stream, std::function<void()> work) {
  cudaError_t refused;
  if (CaptureEnqueue(stream, &work, &refused)) return refused;
  static std::atomic<int64_t> operations{0};
  Stream::Item item;
  item.work = std::move(work);
  item.delay_ms = StreamDelayMs(operations.fetch_add(1, std::memory_order_relaxed));
  Registry& r = Reg();
  DeviceStreams& dev = *r.devices[stream->device];
  bool ordered = stream->role == Stream::Role::kLegacy || stream->Blocking();
  std::unique_lock<std::mutex> order_lock(dev.order_mu, std::defer_lock);
  if (ordered) {
    order_lock.lock();
    std::vector<std::shared_ptr<Stream>> others;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      if (stream->role == Stream::Role::kLegacy) {
        for (const auto& s : dev.all) {
          if (s->Blocking()) others.push_back(s);
        }
      } else if (dev.legacy) {
        others.push_back(dev.legacy);
      }
    }
    for (auto& s : others) {
      std::lock_guard<std::mutex> lock(s->mu);
      if (s->completed < s->enqueued) item.deps.emplace_back(s, s->enqueued);
    }
  }
  {
    std::lock_guard<std::mutex> lock(stream->mu);
    ++stream->enqueued;
    stream->queue.push_back(std::move(item));
  }
  stream->cv.notify_all();
  return cudaSuccess;
}

cudaError_t EnqueueMaybeWait(Stream* stream, std::function<void()> work, bool wait) {
  if (!wait) return Enqueue(stream, std::move(work));
  if (IsCapturing(stream)) {
    InvalidateCapture(stream);
    return cudaErrorStreamCaptureUnsupported;
  }
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  const cudaError_t status = Enqueue(stream, [work = std::move(work), done] {
    work();
    done->set_value();
  });
  if (status == cudaSuccess) finished.wait();
  return status;
}

void SynchronizeStream(Stream* stream) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(stream->mu);
    ticket = stream->enqueued;
  }
  WaitTicket(stream, ticket);
}

bool StreamIdle(Stream* stream) {
  std::lock_guard<std::mutex> lock(stream->mu);
  return stream->completed == stream->enqueued;
}

void SynchronizeDevice() { SynchronizeDevice(CurrentDevice()); }

void SynchronizeDevice(int device) {
  if (device < 0 || device >= DeviceCount()) return;
  std::vector<std::shared_ptr<Stream>> streams;
  {
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    streams = r.devices[device]->all;
  }
  std::vector<uint64_t> tickets;
  for (auto& s : streams) {
    std::lock_guard<std::mutex> lock(s->mu);
    tickets.push_back(s->enqueued);
  }
  for (size_t i = 0; i < streams.size(); ++i) WaitTicket(streams[i].get(), tickets[i]);
}

int StreamDevice(const Stream* stream) { return stream->device; }
unsigned StreamFlags(const Stream* stream) { return stream->flags; }
int StreamPriority(const Stream* stream) { return stream->priority; }
uint64_t StreamId(const Stream* stream) { return stream->id; }

}  // namespace simgpu
