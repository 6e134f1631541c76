// CaptureEngine: turns intercepted calls into records and operand snapshots, off the application's critical path.
//
// Records. An interceptor calls Reserve() when the call enters (for an op this also assigns its seq: 0, 1, 2, ...
// per process in host call order; DESIGN.md §4) and Publish() when the vendor call has returned. Records reach
// the sink in Reserve() order (RecordQueue), so op records are in seq order, within flush_ms of their call.
// The hot path takes no lock and allocates nothing (record_buffer.h): Reserve is one 16-byte compare-and-swap,
// Publish copies the record into the calling thread's own RecordBuffer (made at its first call). A buffer that is
// full makes its thread wait for the drain up to ring_wait_ms; after that, and for threads beyond kMaxBuffers and
// records larger than a buffer takes, the record goes the locked path (overflow_). Records are never dropped for
// lack of room. The drain is woken when a buffer holds kRecordsPerWake records (a notify without a waiter costs no
// system call), else at its flush tick. A thread is inside one op at a time:
// that is how a call that never returns is named by its seq (RecordBuffer::Running).
//
// Tensors. CaptureTensors() enqueues, on the op's own stream, cuMemcpyDtoHAsync into a bounded pinned ring
// (allocated once, at the first capture) and records an event after it: the copy sees exactly what the stream has
// done before it, and the application's streams are never synchronized. The tensors of one call (an op's inputs;
// TensorGroup collects them) share one ring allocation, one event and one query of the stream's capture status and
// context: what a call costs the calling thread grows with its copies, not its events and queries. The drain thread
// waits for the event (polling cuEventQuery on our own event, so that the wait can end), packs the staged region
// densely (tensor_pack.h) and writes a TensorRecord. Tensor records follow their op's record in no fixed order: readers
// join by seq. At exit the wait is bounded by exit_wait_ms: a copy the device has not finished by then (a stream
// still busy, or hung, as a collective whose peer died is) loses its payload with a notice, and so do payloads the
// drain has not written by then (a backlog behind a fast producer: one notice counts them), and the process exits.
// Pointer arrays (cublas?gemmBatched: TensorSpec.ptr_array). Batch b's matrix is wherever the array's b-th address
// points when the stream runs the op, which the host cannot know without a sync when the array is in device memory:
// such a tensor is dropped with the reason. An array in host memory the driver knows (pinned or registered, not
// managed) is read at the call, and each batch copied from the address read, as above; the array itself is copied
// on the stream too, just before those copies, and the drain writes the tensor only when that copy (what the vendor
// read) equals what the call read: an array the stream changes after the call (a copy into it still queued) drops
// the tensor instead of writing the wrong batches. Not captured inside CUDA graphs (dropped, kGraphCapture).
// CUDA graphs (capture_graph.cc). A call made while its stream captures a graph does not run: its record is the
// template of a graph node (a kGraphCaptured notice says so). Its operands are copied, inside the graph, into
// pinned staging owned by that node, followed by a host node; at each launch the host node hands the staged data
// to the drain as a new op (a fresh seq, the template's record, a kGraphReplay notice naming the template).
// Staging and the backlog of launched data not yet written share the graph_bytes budget; over it, payloads are
// dropped with a notice. Launches of one executable graph run in order (as CUDA documents), which is what ties a
// node's input and output snapshots of one launch to one seq.
// When the ring is full a call waits up to ring_wait_ms, then drops the payload: it is counted, a NoticeRecord
// says which op lost it, and stderr says so once.
//
// Failures fail open: a failed tensor copy drops that payload; a failed pinned allocation turns tensor capture
// off (notice); a failed sink calls on_failure (the runtime then passes every call straight through). No failure
// here reaches the application: vendor calls and their statuses are the interceptors' business.
//
// Threads. Reserve, Publish, Notice, Drop, CaptureTensor: any thread (CaptureTensor on the thread that issues the
// op, since it enqueues on the op's stream). The drain thread, started by Start(), is the only user of the sink
// until Shutdown() has joined it. The engine owns its sink; the driver table is borrowed (static storage).
#ifndef TTRACE_SHIM_CAPTURE_ENGINE_H_
#define TTRACE_SHIM_CAPTURE_ENGINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "shim/byte_ring.h"
#include "shim/cupti_context.h"
#include "shim/driver_api.h"
#include "shim/record_buffer.h"
#include "shim/record_queue.h"
#include "shim/sink.h"
#include "shim/tensor_pack.h"
#include "ttrace/format.h"

namespace ttrace::shim {

struct EngineConfig {
  bool capture_tensors = false;      // TTRACE_MODE=full (and a driver table given)
  format::CaptureModeId mode = format::CaptureModeId::kUnknown;  // TTRACE_MODE, for the EndRecord
  size_t ring_bytes = 256u << 20;    // TTRACE_BUFFER_MB; 0: no tensors
  size_t max_tensor_bytes = 128u << 20;
  size_t graph_bytes = 256u << 20;   // TTRACE_GRAPH_MB: graph staging plus launched data not yet written
  bool shuffle = true;               // TTRACE_SHUFFLE: byte-shuffled payloads (PayloadKind::kShuffled)
  bool codec = true;                 // TTRACE_CODEC: float payloads float-coded (PayloadKind::kFloatCoded)
  int ring_wait_ms = 200;
  int flush_ms = 1000;
  int exit_wait_ms = 3000;  // TTRACE_EXIT_WAIT_MS
  // Records that may wait behind a call that has not returned before the drain gives up on that call's record
  // (a kRecordDropped notice) and writes them: bounds memory while a vendor call hangs.
  size_t max_waiting_records = 1 << 16;
  // Called once, from the drain thread, when the sink fails; records are discarded from then on.
  std::function<void(const std::string& why)> on_failure;
};
EngineConfig EngineConfigFromOptions(const Options& options);

class CaptureEngine {
 public:
  static constexpr uint64_t kNoSeq = UINT64_MAX;
  static constexpr size_t kNativeScratchBytes = 4096;  // what a neutralised native-graph snapshot copy reads, at most
  struct Slot {
    uint64_t ticket;
    uint64_t seq;  // kNoSeq for set-up calls
  };
  struct Stats {
    uint64_t records = 0;        // records written to the sink
    uint64_t tensors = 0;        // tensor records written
    uint64_t tensor_bytes = 0;   // their payload bytes
    uint64_t dropped = 0;        // payloads dropped
    uint64_t dropped_by_reason[format::kDropReasons] = {};  // by format::DropReason
    uint64_t ops = 0;            // seq numbers assigned
    uint64_t records_dropped = 0;  // call records given up (hung calls)
    uint64_t graph_launches = 0;   // graph node launches whose operands reached the drain
    bool sink_failed = false;
  };

  // `sink` must not be null. `driver` may be null: then no tensors are captured. Starts no thread.
  CaptureEngine(const EngineConfig& config, std::unique_ptr<Sink> sink, const DriverApi* driver);
  ~CaptureEngine();  // Shutdown()
  CaptureEngine(const CaptureEngine&) = delete;
  CaptureEngine& operator=(const CaptureEngine&) = delete;

  void Start();  // starts the drain thread

  Slot Reserve(bool op);
  // Writes the record. For an op's record (slot.seq set) the calling thread's context since its previous op
  // (cupti_context.h) follows, as a ContextRecord of that seq, with the NameRecords of names this stream has not
  // had yet.
  void Publish(const Slot& slot, format::RecordType type, const void* body, size_t body_bytes,
               const void* payload = nullptr, size_t payload_bytes = 0);
  template <typename Body>
  void Publish(const Slot& slot, format::RecordType type, const Body& body) {
    Publish(slot, type, &body, sizeof body);
  }
  // A NoticeRecord about op `seq` (kNoSeq: none), in order with the other records from now on.
  void Notice(format::NoticeCode code, uint64_t seq, uint64_t count, const std::string& message,
              uint32_t reason = 0);
  // Counts a payload of op `seq` as dropped and writes a kPayloadDropped notice; stderr says so once.
  void Drop(uint64_t seq, const std::string& why) { Drop(seq, format::DropReason::kOther, why); }
  void Drop(uint64_t seq, format::DropReason reason, const std::string& why);
  // How the stream ends (EndRecord, written by the close): set before Shutdown() by whoever stops the engine.
  void SetEndReason(format::EndReason reason, int signal);

  bool capturing_tensors() const { return tensors_on_.load(std::memory_order_relaxed); }
  // Snapshots `specs` as `stream` will see them at this point (see the header comment), as one group: one ring
  // allocation, one event. A tensor that is empty or malformed (tensor_pack.h: PlanStaging) is skipped silently:
  // the vendor call rejects it anyway. A cudaStream_t is a CUstream.
  void CaptureTensors(uint64_t seq, CUstream stream, const TensorSpec* specs, size_t count);
  void CaptureTensor(uint64_t seq, CUstream stream, const TensorSpec& spec) { CaptureTensors(seq, stream, &spec, 1); }

  // Waits until everything reserved and captured before this call is written, then flushes the sink. False when
  // that took longer than timeout_ms (a call on another thread still running) or the engine is stopped.
  bool FlushAndWait(int timeout_ms);
  // Stops taking records, writes everything that is ready (a bounded wait for copies in flight), closes the sink
  // and joins the drain thread. Idempotent; any thread except the drain thread. A second caller returns once the
  // first is done (at most exit_wait_ms + 2 s later).
  void Shutdown();

  Stats stats() const;
  std::string sink_name() const { return sink_name_; }

  // cuDNN's native CUDA graphs (capture_native_graph.cc; docs/design.md, "cuDNN's native CUDA graphs"): an op whose
  // work a vendor put into the application's graph, with snapshot nodes the shim added to it.
  struct NativeGraphOp;
  // The nodes of `graph` (false when the driver lacks the graph node calls or they fail).
  bool NativeGraphNodes(CUgraph graph, std::vector<CUgraphNode>* nodes);
  // After a successful populate of op `seq` (its record published: `record`, the first `header_bytes` of it its
  // body): the vendor's nodes are those of `graph` not in `before`; adds a copy of each input spec (`inputs` of
  // `specs`) into pinned staging before the vendor's roots, of each output after its leaves, and a host node after
  // them that hands each launch to the drain as a new op. On success a kGraphCaptured notice makes op `seq` the
  // template; on failure the graph is left as populated and *why says what failed.
  bool CaptureNativePopulate(uint64_t seq, CUgraph graph, const std::vector<CUgraphNode>& before,
                             const std::vector<TensorSpec>& specs, size_t inputs, format::RecordType type,
                             const std::string& record, size_t header_bytes, std::string* why);
  // The vendor's update of `graph` (`real`, returning the vendor's status, 0 for success; the result is returned).
  // When `graph` holds snapshot nodes: the update runs on a clone without them and the vendor's node parameters are
  // copied back, the copies retargeted to `specs` (same order and sizes as at populate; `specs` may be given while
  // tensors are not captured); *op is then the op whose nodes they are (for NativeTemplate). Otherwise *op is null
  // and *why says why the update is not captured: no snapshot nodes (the update ran on `graph` as is), the vendor's
  // update failed on the clone (`graph` untouched), `specs` unknown (empty) or not the populate's (the nodes kept,
  // the copies neutralised: they read the device scratch, the launches publish nothing), or a driver call of the
  // shim's failed (its nodes removed from `graph`, the update run on it: the one case that changes its topology).
  int UpdateNativeGraph(CUgraph graph, const std::vector<TensorSpec>& specs, const std::function<int(CUgraph)>& real,
                        NativeGraphOp** op, std::string* why);
  // Op `seq` (an update's published record) becomes `op`'s template for the launches from now on (a kGraphCaptured
  // notice).
  void NativeTemplate(NativeGraphOp* op, uint64_t seq, format::RecordType type, const std::string& record,
                      size_t header_bytes);

 private:
  using Clock = std::chrono::steady_clock;
  struct GraphOp;
  struct GraphTensor;
  static constexpr size_t kRecordsPerWake = 64;
  static constexpr size_t kMaxBuffers = 64;  // threads with a RecordBuffer (512 KiB each) at once
  enum class CopyState { kCopying, kReady, kFailed };
  struct TensorItem {
    uint64_t seq = 0;
    TensorSpec spec;
    StagingPlan plan;
    size_t offset = 0;
    CUevent event = nullptr;  // recorded after the copies of the item's whole group
    CUcontext ctx = nullptr;  // the event's context (pooled per context); nullptr: unknown, destroyed after use
    bool last_of_group = true;  // pools (or destroys) the event and releases the group's ring allocation
    CopyState state = CopyState::kCopying;
    std::shared_ptr<std::vector<char>> owned;  // graph launches: the staged bytes, outside the ring
    // Pointer arrays: the item's ring space holds the array as the stream read it, then as the call read it
    // (array_words addresses each), then the staging.
    uint64_t array_words = 0;
  };

  void PublishRecord(const Slot& slot, format::RecordType type, const void* body, size_t body_bytes,
                     const void* payload, size_t payload_bytes);
  // capture_context.cc
  void PublishContext(uint64_t seq);
  void WriteName(uint32_t id);
  bool EnsureRing();
  // The device-to-host copies of `spec` into `staging` on `stream` (plan.copies of them, or pitched); *queued
  // counts those enqueued. Copy c reads from batch_sources[c] when given (pointer arrays), else from spec.ptr plus c
  // source strides. The first failure's status, else CUDA_SUCCESS.
  CUresult EnqueueCopies(const TensorSpec& spec, const StagingPlan& plan, char* staging, CUstream stream,
                         uint64_t* queued, const void* const* batch_sources = nullptr);
  // Where the program's array of `count` device addresses can be read by the host now (*host) and by a copy on the
  // device (*device): host memory the driver knows, not managed, the whole array inside one allocation. False, with
  // the reason, otherwise. Needs the stream's context current.
  bool ReadablePointerArray(const void* const* array, uint64_t count, const void** host, CUdeviceptr* device,
                            std::string* why);
  // capture_graph.cc
  void CaptureInGraph(uint64_t seq, CUstream stream, const TensorSpec& spec, const StagingPlan& plan);
  // The template's record: its body, then its payload (a cuDNN graph's tensors and operations). With mu_ held.
  void NoteGraphRecord(uint64_t seq, format::RecordType type, const void* body, size_t body_bytes, const void* payload,
                       size_t payload_bytes);
  static void GraphHostFn(void* tensor);
  void Launched(GraphTensor* tensor);
  // Queues one launch's staged copy of a tensor under `seq` (graph_bytes bounds the backlog). mu_ not held.
  void QueueLaunched(uint64_t seq, const TensorSpec& spec, const StagingPlan& plan, const char* staging,
                     bool first);
  // capture_native_graph.cc
  static void NativeHostFn(void* op);
  void NativeLaunched(NativeGraphOp* op);
  // The current context's device scratch that neutralised snapshot copies read (kNativeScratchBytes, allocated once
  // per context, never freed); false when it cannot be allocated (*why says why).
  bool NativeScratch(CUdeviceptr* scratch, std::string* why);
  // Adds `op`'s copy and host nodes to `graph` (see CaptureNativePopulate); removes what it added on failure.
  CUresult AddNativeNodes(NativeGraphOp* op, CUgraph graph, const std::vector<CUgraphNode>& vendor,
                          const std::vector<CUgraphNode>& before, std::string* why);
  bool ReserveGraphBytes(size_t bytes);
  CUstreamCaptureStatus StreamCapture(CUstream stream);
  CUevent AcquireEvent(CUcontext ctx);
  void DisableTensors(const std::string& why);
  // The calling thread's record buffer for this engine, made on its first call; nullptr: it has none.
  static uint64_t NextEngineId();  // capture_records.cc
  RecordBuffer* ThreadBuffer();
  RecordBuffer* AttachThreadBuffer();
  bool WaitForRoom(RecordBuffer* buffer, const Slot& slot, format::RecordType type, const void* body,
                   size_t body_bytes, const void* payload, size_t payload_bytes);
  // Drain thread (or the final drain), without mu_: writes the records due, in ticket order, from records_ and
  // the rings (capture_records.cc); returns how many.
  size_t MergeBuffers(bool all);
  size_t WriteRecordsDue(std::vector<std::pair<uint64_t, QueuedRecord>>* overflow);
  size_t WriteReady();
  // The seq of the op running under `ticket` (kNoSeq: unknown).
  uint64_t RunningSeq(uint64_t ticket);
  void DrainLoop();
  void FinalDrain(std::unique_lock<std::mutex>& lock);
  void WriteRecords(std::vector<QueuedRecord>* records);
  void WriteTensor(const TensorItem& item);
  void RecordDropped(uint64_t ticket);
  // Waits for one of our copy events: CUDA_SUCCESS, the copy's error, or CUDA_ERROR_NOT_READY when exit began and
  // exit_wait_ms has passed since.
  CUresult WaitCopy(CUevent event);
  bool ExitDeadlinePassed() const;  // Shutdown began exit_wait_ms ago or more
  bool Append(format::RecordType type, const void* body, size_t body_bytes, const void* payload,
              size_t payload_bytes);
  void SinkFailed();
  void WriteEnd();  // capture_end.cc: the EndRecord, from FinalDrain just before the sink closes
  bool FlushTargetReachedLocked() const;  // drain thread, mu_ held

  const EngineConfig config_;
  const DriverApi* const driver_;
  std::unique_ptr<Sink> sink_;  // drain thread only (then Shutdown)
  const std::string sink_name_;
  std::atomic<bool> tensors_on_;

  std::mutex ring_init_mu_;
  char* ring_base_ = nullptr;   // pinned, never freed (process lifetime)
  bool ring_tried_ = false;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;     // drain: something to write, a flush request, stop
  std::condition_variable space_cv_;    // callers: ring space freed
  std::condition_variable flushed_cv_;  // FlushAndWait: request served
  RecordQueue records_;                 // the drain's own (no lock): records waiting for an earlier ticket
  std::vector<QueuedRecord> ready_scratch_;  // the drain's
  std::vector<std::pair<uint64_t, QueuedRecord>> overflow_;  // the locked path's records, for the drain
  OrderCounter order_;                  // tickets and seqs
  const uint64_t id_;                   // this engine among the process's (threads cache their buffer per engine)
  std::mutex buffers_mu_;               // attaching a buffer to a thread
  std::vector<std::shared_ptr<RecordBuffer>> owned_buffers_;  // under buffers_mu_
  std::atomic<RecordBuffer*> buffers_[kMaxBuffers] = {};
  std::atomic<size_t> buffer_count_{0};
  uint64_t seen_reorders_[kMaxBuffers] = {};  // the drain's: RecordBuffer::reorders() when it last took a ring
  std::atomic<bool> has_graph_ops_{false};
  std::atomic<uint64_t> names_written_[kMaxNames / 64 + 1] = {};  // bit per name id: its NameRecord is written
  int record_waiters_ = 0;              // under mu_: threads in WaitForRoom
  std::thread::id drain_id_;            // set before the drain runs
  uint64_t records_dropped_ = 0;
  // The tensors in flight, in ring order: a circular buffer that grows (doubling) only when more tensors are in
  // flight than ever before, so steady capture allocates nothing. Items are named by number (tensors_pushed_ when
  // pushed; the front is tensors_done_), since growth moves them. Under mu_.
  class TensorQueue {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    TensorItem& operator[](size_t i) { return items_[(head_ + i) & (items_.size() - 1)]; }
    const TensorItem& operator[](size_t i) const { return items_[(head_ + i) & (items_.size() - 1)]; }
    TensorItem& front() { return (*this)[0]; }
    TensorItem& push_back();  // a fresh item at the back
    void pop_front();
    void swap(TensorQueue& other) noexcept {
      items_.swap(other.items_);
      std::swap(head_, other.head_);
      std::swap(size_, other.size_);
    }

   private:
    std::vector<TensorItem> items_;  // a power of two long
    size_t head_ = 0, size_ = 0;
  };
  static constexpr size_t kMaxGroup = 16;  // tensors in one CaptureTensors group (more: several groups)
  TensorQueue tensors_;
  ByteRing ring_;
  uint64_t tensors_pushed_ = 0, tensors_done_ = 0;
  std::vector<std::pair<CUcontext, CUevent>> event_pool_;
  std::map<uint64_t, GraphOp*> graph_ops_;  // capture-time seq -> template; never freed (graphs may outlive us)
  std::vector<NativeGraphOp*> native_ops_;  // under mu_; never freed (graphs and their clones may outlive us)
  std::vector<std::pair<CUcontext, CUdeviceptr>> native_scratch_;  // under mu_; never freed (as native_ops_)
  std::atomic<size_t> graph_bytes_used_{0};
  uint64_t flush_requested_ = 0, flush_done_ = 0;
  uint64_t flush_target_ticket_ = 0, flush_target_tensors_ = 0;
  bool stop_ = false;
  bool started_ = false;
  bool joined_ = false;
  bool closed_ = false;                 // Shutdown done
  std::condition_variable closed_cv_;
  Stats stats_;
  std::atomic<uint64_t> records_written_{0};

  std::unique_ptr<char[]> payload_;  // drain thread: a packed tensor (not zero-filled on growth)
  size_t payload_capacity_ = 0;
  bool sink_failed_ = false;       // drain thread
  std::atomic<int64_t> exit_deadline_{0};  // Clock ticks; 0 until Shutdown begins
  std::atomic<uint32_t> end_reason_{static_cast<uint32_t>(format::EndReason::kExit)};
  std::atomic<int> end_signal_{0};
  std::thread drain_;
};

// The operands of one op that are captured at one point of the call (its inputs before the vendor call, its outputs
// after), collected and captured as one group (CaptureEngine::CaptureTensors) when Capture() is called or the group
// goes out of scope. Not thread-safe: one interceptor's.
class TensorGroup {
 public:
  TensorGroup(CaptureEngine* engine, uint64_t seq, CUstream stream) : engine_(engine), seq_(seq), stream_(stream) {}
  ~TensorGroup() { Capture(); }
  TensorGroup(const TensorGroup&) = delete;
  TensorGroup& operator=(const TensorGroup&) = delete;
  void Add(const TensorSpec& spec) {
    if (count_ == kCapacity) Capture();
    specs_[count_++] = spec;
  }
  void Capture() {
    if (count_ > 0) engine_->CaptureTensors(seq_, stream_, specs_, count_);
    count_ = 0;
  }
  CaptureEngine* engine() const { return engine_; }
  uint64_t seq() const { return seq_; }

 private:
  static constexpr size_t kCapacity = 16;
  CaptureEngine* engine_;
  uint64_t seq_;
  CUstream stream_;
  TensorSpec specs_[kCapacity];
  size_t count_ = 0;
};

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_CAPTURE_ENGINE_H_
