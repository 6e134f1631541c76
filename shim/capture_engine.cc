// Why this shape:
// - Records are small and cheap to copy, so interceptors publish them by value and never wait for the sink.
// - The ring is FIFO because the drain finishes tensors in the order they were enqueued (a single stream of
//   events), so space comes back in allocation order and the allocator needs no free lists.
// - Records wake the drain thread only in batches (kRecordsPerWake) or at its flush tick: a wake-up per record
//   costs the calling thread a futex call and, on a busy host, a context switch. Tensors wake it at once, since
//   their ring space is waited for. How records travel without a lock is in capture_records.cc.
// - Nothing here calls CUDA while holding mu_: a thread whose copy or event call blocks on the GPU never stalls the
//   drain thread or another capturing thread.
// - Everything goes through the driver API (driver_api.h), which leaves the application's cudaGetLastError state
//   alone: no error of ours reaches the application.
#include "shim/capture_engine.h"

#include <algorithm>
#include <cstring>

#include "shim/log.h"

namespace ttrace::shim {

EngineConfig EngineConfigFromOptions(const Options& options) {
  EngineConfig c;
  c.capture_tensors = options.mode == CaptureMode::kFull && options.buffer_mb > 0;
  c.mode = options.mode == CaptureMode::kFull ? format::CaptureModeId::kFull : format::CaptureModeId::kMeta;
  c.ring_bytes = static_cast<size_t>(options.buffer_mb) << 20;
  c.max_tensor_bytes = static_cast<size_t>(options.max_tensor_mb) << 20;
  c.graph_bytes = static_cast<size_t>(options.graph_mb) << 20;
  c.shuffle = options.shuffle;
  c.codec = options.codec;
  c.ring_wait_ms = static_cast<int>(options.ring_wait_ms);
  c.flush_ms = options.flush_ms > 0 ? static_cast<int>(options.flush_ms) : 1;
  c.exit_wait_ms = options.exit_wait_ms > 0 ? static_cast<int>(options.exit_wait_ms) : 0;
  return c;
}

CaptureEngine::CaptureEngine(const EngineConfig& config, std::unique_ptr<Sink> sink, const DriverApi* driver)
    : config_(config),
      driver_(driver),
      sink_(std::move(sink)),
      sink_name_(sink_ ? sink_->name() : ""),
      tensors_on_(config.capture_tensors && driver != nullptr && config.ring_bytes > 0),
      id_(NextEngineId()),
      ring_(config.ring_bytes) {}

CaptureEngine::~CaptureEngine() { Shutdown(); }

void CaptureEngine::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stop_) return;
  started_ = true;
  drain_ = std::thread([this] { DrainLoop(); });
  drain_id_ = drain_.get_id();
}

void CaptureEngine::Notice(format::NoticeCode code, uint64_t seq, uint64_t count, const std::string& message,
                           uint32_t reason) {
  format::NoticeRecord n;
  memset(&n, 0, sizeof n);
  n.code = static_cast<uint32_t>(code);
  n.message_bytes = static_cast<uint32_t>(message.size());
  n.seq = seq;
  n.count = count;
  n.reason = reason;
  Publish(Reserve(false), format::RecordType::kNotice, &n, sizeof n, message.data(), message.size());
}

void CaptureEngine::Drop(uint64_t seq, format::DropReason reason, const std::string& why) {
  uint64_t count;
  const uint32_t r = static_cast<uint32_t>(reason) < format::kDropReasons ? static_cast<uint32_t>(reason) : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    count = ++stats_.dropped;
    ++stats_.dropped_by_reason[r];
  }
  TTRACE_LOG_ONCE("dropping tensor payloads (first: op %llu, %s); every drop is counted in the trace",
                  static_cast<unsigned long long>(seq), why.c_str());
  Notice(format::NoticeCode::kPayloadDropped, seq, count, "payload dropped: " + why, r);
}

void CaptureEngine::DisableTensors(const std::string& why) {
  if (tensors_on_.exchange(false)) {
    Log("tensor capture disabled: %s; call records continue", why.c_str());
    Notice(format::NoticeCode::kCaptureDisabled, kNoSeq, 0, "tensor capture disabled: " + why);
  }
}

bool CaptureEngine::EnsureRing() {
  std::lock_guard<std::mutex> lock(ring_init_mu_);
  if (ring_tried_) return ring_base_ != nullptr;
  ring_tried_ = true;
  void* p = nullptr;
  const CUresult e = driver_->MemHostAlloc(&p, config_.ring_bytes, CU_MEMHOSTALLOC_PORTABLE);
  if (e != CUDA_SUCCESS || p == nullptr) {
    DisableTensors("cannot allocate the " + std::to_string(config_.ring_bytes >> 20) +
                   " MiB pinned ring (TTRACE_BUFFER_MB): " + CudaErrorText(driver_, e));
    return false;
  }
  ring_base_ = static_cast<char*>(p);
  return true;
}

bool CaptureEngine::ReadablePointerArray(const void* const* array, uint64_t count, const void** host,
                                         CUdeviceptr* device, std::string* why) {
  auto get = driver_->PointerGetAttribute;
  const CUdeviceptr at = reinterpret_cast<CUdeviceptr>(array);
  if (get == nullptr) {
    *why = "the driver has no cuPointerGetAttribute to locate a pointer array";
    return false;
  }
  unsigned int type = 0;
  if (get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, at) != CUDA_SUCCESS) {
    *why = "pointer array in memory the driver does not know (pageable host memory?): not read";
    return false;
  }
  if (type != CU_MEMORYTYPE_HOST) {
    *why = "pointer array in device memory: its per-batch operands cannot be located without a host sync";
    return false;
  }
  int managed = 0;
  if (get(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, at) == CUDA_SUCCESS && managed != 0) {
    *why = "pointer array in managed memory: not read by the host while the device may use it";
    return false;
  }
  CUdeviceptr start = 0;
  size_t size = 0;
  void* host_view = nullptr;
  if (get(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, at) != CUDA_SUCCESS ||
      get(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, at) != CUDA_SUCCESS || at < start ||
      count > (size - (at - start)) / sizeof(void*) ||
      get(&host_view, CU_POINTER_ATTRIBUTE_HOST_POINTER, at) != CUDA_SUCCESS || host_view == nullptr) {
    *why = "pointer array not inside one host allocation the driver knows: not read";
    return false;
  }
  CUdeviceptr device_view = 0;
  if (get(&device_view, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, at) != CUDA_SUCCESS || device_view == 0)
    device_view = at;  // the address the vendor was given, which its kernels read
  *host = host_view;
  *device = device_view;
  return true;
}

CUstreamCaptureStatus CaptureEngine::StreamCapture(CUstream stream) {
  if (driver_->StreamIsCapturing == nullptr) return CU_STREAM_CAPTURE_STATUS_NONE;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  // An error (a stream we cannot ask about) is treated as an invalidated capture: nothing is enqueued on it.
  if (driver_->StreamIsCapturing(stream, &status) != CUDA_SUCCESS) return CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  return status;
}

CUevent CaptureEngine::AcquireEvent(CUcontext ctx) {
  if (ctx != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < event_pool_.size(); ++i) {
      if (event_pool_[i].first == ctx) {
        CUevent e = event_pool_[i].second;
        event_pool_[i] = event_pool_.back();
        event_pool_.pop_back();
        return e;
      }
    }
  }
  CUevent e = nullptr;
  if (driver_->EventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
  return e;
}

namespace {

// Makes the context of `stream` current on the calling thread for its lifetime (pushed only when another one is
// current): cuEventRecord needs an event of the stream's context, and the ring is allocated in it. ctx() is that
// context, nullptr when unknown (the current one is used then, and events are not pooled).
class StreamContext {
 public:
  StreamContext(const DriverApi* driver, CUstream stream) : driver_(driver) {
    if (driver->StreamGetCtx == nullptr || driver->StreamGetCtx(stream, &ctx_) != CUDA_SUCCESS) {
      ctx_ = nullptr;
      return;
    }
    CUcontext current = nullptr;
    if (driver->CtxGetCurrent == nullptr || driver->CtxGetCurrent(&current) != CUDA_SUCCESS) current = nullptr;
    if (ctx_ == current) return;
    pushed_ = driver->CtxPushCurrent != nullptr && driver->CtxPopCurrent != nullptr &&
              driver->CtxPushCurrent(ctx_) == CUDA_SUCCESS;
    if (!pushed_) ctx_ = nullptr;
  }
  ~StreamContext() {
    CUcontext popped;
    if (pushed_) driver_->CtxPopCurrent(&popped);
  }
  StreamContext(const StreamContext&) = delete;
  StreamContext& operator=(const StreamContext&) = delete;
  CUcontext ctx() const { return ctx_; }

 private:
  const DriverApi* driver_;
  CUcontext ctx_ = nullptr;
  bool pushed_ = false;
};

}  // namespace

CUresult CaptureEngine::EnqueueCopies(const TensorSpec& spec, const StagingPlan& plan, char* staging, CUstream stream,
                                      uint64_t* queued, const void* const* batch_sources) {
  CUresult e = CUDA_SUCCESS;
  const char* src = static_cast<const char*>(spec.ptr);
  for (uint64_t c = 0; c < plan.copies && e == CUDA_SUCCESS; ++c) {
    const char* from = batch_sources != nullptr
                           ? static_cast<const char*>(batch_sources[c])
                           : src + static_cast<int64_t>(c) * plan.copy_src_stride * plan.elem_bytes;
    char* to = staging + c * plan.copy_bytes;
    if (plan.pitched) {
      CUDA_MEMCPY2D copy;
      memset(&copy, 0, sizeof copy);
      copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.srcDevice = reinterpret_cast<CUdeviceptr>(from);
      copy.srcPitch = static_cast<size_t>(spec.ld) * plan.elem_bytes;
      copy.dstMemoryType = CU_MEMORYTYPE_HOST;
      copy.dstHost = to;
      copy.dstPitch = static_cast<size_t>(spec.rows) * plan.elem_bytes;
      copy.WidthInBytes = copy.dstPitch;
      copy.Height = static_cast<size_t>(spec.cols);
      e = driver_->Memcpy2DAsync(&copy, stream);
    } else {
      e = driver_->MemcpyDtoHAsync(to, reinterpret_cast<CUdeviceptr>(from), plan.copy_bytes, stream);
    }
    if (e == CUDA_SUCCESS) ++*queued;
  }
  return e;
}

CaptureEngine::TensorItem& CaptureEngine::TensorQueue::push_back() {
  if (size_ == items_.size()) {
    std::vector<TensorItem> grown(items_.empty() ? 64 : 2 * items_.size());
    for (size_t i = 0; i < size_; ++i) grown[i] = std::move((*this)[i]);
    items_.swap(grown);
    head_ = 0;
  }
  TensorItem& item = (*this)[size_++];
  item = TensorItem();
  return item;
}

void CaptureEngine::TensorQueue::pop_front() {
  front().owned.reset();
  head_ = (head_ + 1) & (items_.size() - 1);
  --size_;
}

void CaptureEngine::CaptureTensors(uint64_t seq, CUstream stream, const TensorSpec* specs, size_t count) {
  if (!capturing_tensors() || count == 0) return;
  if (count > kMaxGroup) {
    for (size_t i = 0; i < count; i += kMaxGroup)
      CaptureTensors(seq, stream, specs + i, std::min(kMaxGroup, count - i));
    return;
  }
  // Each tensor: its plan and ring space (its pointer array twice, then the staging; see the header comment).
  struct Planned {
    const TensorSpec* spec;
    StagingPlan plan;
    uint64_t array_bytes;
    uint64_t ring_bytes;  // rounded up to the ring's alignment: the group's tensors lie back to back
    const void* host_array;
    CUdeviceptr device_array;
  };
  Planned planned[kMaxGroup];
  size_t n = 0;
  uint64_t group_bytes = 0;
  const bool pitched = driver_->Memcpy2DAsync != nullptr;
  for (size_t i = 0; i < count; ++i) {
    const TensorSpec& spec = specs[i];
    Planned& p = planned[n];
    if (!PlanStaging(spec, &p.plan, pitched)) continue;
    if (p.plan.packed_bytes > config_.max_tensor_bytes) {
      Drop(seq, format::DropReason::kTooLarge,
           std::to_string(p.plan.packed_bytes) + " bytes exceed TTRACE_MAX_TENSOR_MB");
      continue;
    }
    if (p.plan.packed_bytes + sizeof(format::RecordHeader) + sizeof(format::TensorRecord) > format::kMaxFrameBytes) {
      Drop(seq, format::DropReason::kTooLarge,
           std::to_string(p.plan.packed_bytes) + " bytes exceed the largest record of the trace format");
      continue;
    }
    // batch <= packed_bytes, bounded above: no overflow.
    p.spec = &spec;
    p.array_bytes = spec.ptr_array != nullptr ? static_cast<uint64_t>(spec.batch) * sizeof(void*) : 0;
    p.ring_bytes = p.plan.staging_bytes + 2 * p.array_bytes;
    if (!ring_.CanEverFit(p.ring_bytes)) {
      Drop(seq, format::DropReason::kTooLarge,
           std::to_string(p.ring_bytes) + " bytes exceed the ring (TTRACE_BUFFER_MB)");
      continue;
    }
    p.ring_bytes = (p.ring_bytes + ByteRing::kAlignment - 1) / ByteRing::kAlignment * ByteRing::kAlignment;
    p.host_array = nullptr;
    p.device_array = 0;
    group_bytes += p.ring_bytes;
    ++n;
  }
  if (n == 0) return;
  if (n > 1 && !ring_.CanEverFit(group_bytes)) {  // each fits alone: one group each
    for (size_t i = 0; i < n; ++i) CaptureTensors(seq, stream, planned[i].spec, 1);
    return;
  }
  const RelaxedCaptureMode relaxed(driver_);
  const CUstreamCaptureStatus capture = StreamCapture(stream);
  const StreamContext context(driver_, stream);
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    for (size_t i = 0; i < n; ++i) {
      const TensorSpec& spec = *planned[i].spec;
      const bool collective = spec.slot == format::TensorSlot::kSend || spec.slot == format::TensorSlot::kRecv;
      if (capture != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        Drop(seq, format::DropReason::kGraphCapture, "the stream's CUDA graph capture is invalidated");
      } else if (spec.ptr_array != nullptr) {
        Drop(seq, format::DropReason::kGraphCapture, "pointer-array operands in CUDA graphs are not snapshotted");
      } else if (collective) {
        // A launch would need a fresh per-communicator index on every rank to be matched; not done yet.
        Drop(seq, format::DropReason::kGraphCapture, "collectives captured into CUDA graphs are not snapshotted yet");
      } else {
        CaptureInGraph(seq, stream, spec, planned[i].plan);
      }
    }
    return;
  }
  // Pointer arrays the host cannot read leave the group.
  size_t kept = 0;
  group_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    Planned& p = planned[i];
    if (p.spec->ptr_array != nullptr) {
      std::string why;
      if (!ReadablePointerArray(p.spec->ptr_array, static_cast<uint64_t>(p.spec->batch), &p.host_array,
                                &p.device_array, &why)) {
        Drop(seq, format::DropReason::kOther, why);
        continue;
      }
    }
    group_bytes += p.ring_bytes;
    planned[kept++] = p;
  }
  n = kept;
  if (n == 0 || !EnsureRing()) return;

  uint64_t first = 0;  // the group's first item number
  size_t offset = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(config_.ring_wait_ms);
    bool got = false;
    while (!stop_ && !(got = ring_.Allocate(group_bytes, &offset))) {
      if (space_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        got = !stop_ && ring_.Allocate(group_bytes, &offset);
        break;
      }
    }
    if (!got) {
      const bool stopping = stop_;
      lock.unlock();
      if (!stopping)
        for (size_t i = 0; i < n; ++i)
          Drop(seq, format::DropReason::kRingFull, "the ring stayed full for TTRACE_RING_WAIT_MS");
      return;
    }
    first = tensors_pushed_;
    size_t at = offset;
    for (size_t i = 0; i < n; ++i) {
      TensorItem& item = tensors_.push_back();
      item.seq = seq;
      item.spec = *planned[i].spec;
      item.plan = planned[i].plan;
      item.offset = at;
      item.array_words = planned[i].array_bytes / sizeof(void*);
      item.last_of_group = i + 1 == n;
      at += planned[i].ring_bytes;
      ++tensors_pushed_;
    }
  }

  uint64_t queued = 0, expected = 0;
  CUresult errors[kMaxGroup];
  size_t at = offset;
  for (size_t i = 0; i < n; ++i) {
    const Planned& p = planned[i];
    char* space = ring_base_ + at;
    at += p.ring_bytes;
    CUresult e = CUDA_SUCCESS;
    expected += p.plan.copies + (p.array_bytes > 0 ? 1 : 0);
    if (p.array_bytes > 0) {
      // The array as the stream reads it at this point (the vendor reads it later still, in stream order), and as
      // the host reads it now: the batches are copied from these addresses. ByteRing offsets are 256-aligned.
      e = driver_->MemcpyDtoHAsync(space, p.device_array, p.array_bytes, stream);
      if (e == CUDA_SUCCESS) ++queued;
      memcpy(space + p.array_bytes, p.host_array, p.array_bytes);
    }
    if (e == CUDA_SUCCESS)
      e = EnqueueCopies(*p.spec, p.plan, space + 2 * p.array_bytes, stream, &queued,
                        p.array_bytes > 0 ? reinterpret_cast<const void* const*>(space + p.array_bytes) : nullptr);
    errors[i] = e;
  }
  // The event marks the end of every queued copy of the group, also when a copy failed: the drain hands the ring
  // space back only after it, since a queued copy may still be writing there.
  CUevent event = nullptr;
  bool unfenced = false;
  if (queued > 0) {
    event = AcquireEvent(context.ctx());
    const CUresult r = event == nullptr ? CUDA_ERROR_UNKNOWN : driver_->EventRecord(event, stream);
    if (r != CUDA_SUCCESS)
      for (size_t i = 0; i < n; ++i)
        if (errors[i] == CUDA_SUCCESS) errors[i] = r;
    unfenced = r != CUDA_SUCCESS && queued < expected;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The group is still queued: the drain pops only items that are not copying, and ours are.
    for (size_t i = 0; i < n && first + i - tensors_done_ < tensors_.size(); ++i) {
      TensorItem& item = tensors_[first + i - tensors_done_];
      item.state = errors[i] == CUDA_SUCCESS ? CopyState::kReady : CopyState::kFailed;
      item.event = event;
      item.ctx = context.ctx();
    }
  }
  work_cv_.notify_one();
  for (size_t i = 0; i < n; ++i)
    if (errors[i] != CUDA_SUCCESS)
      Drop(seq, format::DropReason::kCopyFailed, "device-to-host copy failed: " + CudaErrorText(driver_, errors[i]));
  // Copies are in flight with nothing to tell when they end: no ring space may be reused after this.
  if (unfenced) DisableTensors("a device-to-host copy failed and its earlier copies could not be fenced");
}

bool CaptureEngine::FlushAndWait(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_ || stop_) return false;
  const uint64_t generation = ++flush_requested_;
  flush_target_ticket_ = order_.tickets();
  flush_target_tensors_ = tensors_pushed_;
  work_cv_.notify_one();
  return flushed_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                              [&] { return flush_done_ >= generation; });
}

bool CaptureEngine::FlushTargetReachedLocked() const {
  return flush_done_ < flush_requested_ && records_.taken() >= flush_target_ticket_ &&
         tensors_done_ >= flush_target_tensors_;
}

void CaptureEngine::Shutdown() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (joined_) {
      // Another thread is closing (a signal's close racing exit): the stream is not closed until it is done.
      closed_cv_.wait_for(lock, std::chrono::milliseconds(config_.exit_wait_ms + 2000), [&] { return closed_; });
      return;
    }
    stop_ = true;
    joined_ = true;
  }
  exit_deadline_.store((Clock::now() + std::chrono::milliseconds(config_.exit_wait_ms)).time_since_epoch().count());
  tensors_on_.store(false);
  work_cv_.notify_all();
  space_cv_.notify_all();
  if (drain_.joinable()) {
    drain_.join();
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    FinalDrain(lock);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  closed_cv_.notify_all();
}

CaptureEngine::Stats CaptureEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.ops = order_.seqs();
  s.records = records_written_.load();
  s.records_dropped = records_dropped_;
  return s;
}

}  // namespace ttrace::shim
