// simgpu core: the CPU "device" that every simgpu library (libcudart.so.13, libcublas.so.13, libnccl.so.2, ...)
// shares. It lives in libsimgpu.so (build/simgpu/lib), which each simgpu library names as DT_NEEDED, so all of
// them see one device, one set of streams and one fault plan per process.
//
// Model: "device memory" is host memory. A stream is an ordered queue of host closures run by a worker thread
// of its own, as a GPU runs a stream's kernels asynchronously with the host; so a program that reads a result
// without synchronizing reads it early, as it would on a GPU. Events mark positions in a stream.
//
// Thread safety: every function here may be called from any thread.
#ifndef TTRACE_TOOLS_SIMGPU_CORE_SIMGPU_H_
#define TTRACE_TOOLS_SIMGPU_CORE_SIMGPU_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace simgpu {

// ---- devices -------------------------------------------------------------------------------------------------
// Number of simulated devices: SIMGPU_DEVICES (an integer in [1, kMaxDevices], default 8; anything else prints a
// message and exits with status 2). Device ordinal of the calling thread (cudaSetDevice; default 0; not checked
// here: cudart validates ordinals).
constexpr int kMaxDevices = 64;
int DeviceCount();
int CurrentDevice();
void SetCurrentDevice(int device);

// ---- streams -------------------------------------------------------------------------------------------------
struct Stream;  // cudaStream_t values handed to the application are Stream* (except the special handles below).

// Maps an application's cudaStream_t to a stream: nullptr and cudaStreamLegacy name the legacy default stream of
// the current device, cudaStreamPerThread the calling thread's per-thread default stream. Returns nullptr for a
// handle that is not a live stream.
Stream* ResolveStream(cudaStream_t stream);
Stream* CreateStream(unsigned flags, int priority);  // flags: cudaStreamDefault | cudaStreamNonBlocking
void DestroyStream(Stream* stream);                   // waits for the stream's queued work first

// Appends work to the stream; it runs after everything enqueued on the stream before it, and as CUDA's legacy
// default stream semantics say: work on the legacy stream also waits for work enqueued earlier on every blocking
// stream of its device (created without cudaStreamNonBlocking, per-thread default streams included), and work on
// a blocking stream waits for work enqueued earlier on the legacy stream. Work runs on the stream's worker thread
// and must not synchronize with its own stream.
void Enqueue(Stream* stream, std::function<void()> work);
void SynchronizeStream(Stream* stream);   // blocks until all work enqueued so far has run
bool StreamIdle(Stream* stream);          // cudaStreamQuery
void SynchronizeDevice();                 // all streams of the current device
void SynchronizeDevice(int device);       // all streams of `device` (cudaFree synchronizes the owning device)

// Introspection for cudart (cudaStreamGetFlags/GetPriority/GetDevice). Valid for a live stream only.
int StreamDevice(const Stream* stream);
unsigned StreamFlags(const Stream* stream);
int StreamPriority(const Stream* stream);

// ---- events --------------------------------------------------------------------------------------------------
struct Event;  // cudaEvent_t values handed to the application are Event*.
Event* ResolveEvent(cudaEvent_t event);                // nullptr for a handle that is not a live event
Event* CreateEvent(unsigned flags);                    // flags as cudaEventCreateWithFlags (validated by cudart)
void DestroyEvent(Event* event);
void RecordEvent(Event* event, Stream* stream);        // completes when the stream reaches this point
void SynchronizeEvent(Event* event);
bool EventDone(Event* event);
void StreamWaitEvent(Stream* stream, Event* event);    // later work on stream waits for the event's record
float ElapsedMs(Event* start, Event* end);             // host clock at completion; both must be EventDone
bool EventRecorded(Event* event);                      // cudaEventRecord was called at least once
unsigned EventFlags(Event* event);
// EventDone is true for an event never recorded (as cudaEventQuery says); a wait on such an event is a no-op.

// ---- memory --------------------------------------------------------------------------------------------------
// Device and pinned allocations are tracked so cudaPointerGetAttributes and argument checks can tell them apart.
// Each device has kDeviceMemoryBytes of simulated memory; allocations are 256-byte aligned, not zeroed.
// Allocation functions do not synchronize; cudart synchronizes before freeing, as cudaFree does.
enum class MemoryKind { kUnregistered, kDevice, kHostPinned };
constexpr size_t kDeviceMemoryBytes = size_t{80} << 30;
void* AllocDevice(size_t bytes);       // on the current device; nullptr when out of (simulated) memory or bytes == 0
bool FreeDevice(void* ptr);            // false (and nothing freed) when ptr is not the base of a device allocation
void* AllocHostPinned(size_t bytes);   // nullptr when the host is out of memory or bytes == 0
bool FreeHostPinned(void* ptr);        // false when ptr is not the base of a pinned allocation
MemoryKind KindOf(const void* ptr, int* device = nullptr);  // any address inside an allocation
struct Allocation {
  MemoryKind kind = MemoryKind::kUnregistered;
  int device = -1;      // owning device (kDevice), the allocating thread's device (kHostPinned)
  void* base = nullptr;
  size_t bytes = 0;
};
// The allocation containing ptr; kind kUnregistered (and the other fields default) when none does.
Allocation FindAllocation(const void* ptr);
// True when [ptr, ptr + bytes) lies inside one allocation of the given kind.
bool InAllocation(const void* ptr, size_t bytes, MemoryKind kind);
size_t DeviceBytesInUse(int device);   // for cudaMemGetInfo

// ---- process identity ----------------------------------------------------------------------------------------
// RANK from the environment (as torchrun sets it), 0 when unset; a RANK that is not a non-negative integer prints
// a message and exits with status 2.
int ProcessRank();

// ---- fault injection (SIMGPU_FAULT) --------------------------------------------------------------------------
// Grammar: a ';'-separated list of specs (empty items are ignored), each  KIND:key=value:key=value...
// Every key (rank, call, elem, bit) is required exactly once; values are non-negative decimal integers; bit < 64.
//   gemm:rank=R:call=N:elem=E:bit=B   flip bit B of output element E of the N-th cuBLAS GEMM call (0-based, per
//                                     process) in the process whose RANK is R
//   coll:rank=R:call=N:elem=E:bit=B   the same for the N-th NCCL collective's result
// Parsed once; a malformed spec prints a clear message to stderr and aborts the process (exit status 2), since
// a test that silently runs without its fault would pass for the wrong reason.
enum class FaultSite { kGemm, kCollective };
struct Fault {
  FaultSite site;
  int rank;
  int64_t call;
  int64_t elem;
  int bit;
};
const std::vector<Fault>& Faults();
// Parses a spec; returns false with a message on error (exposed for tests).
bool ParseFaults(const std::string& spec, std::vector<Fault>* out, std::string* error);

// Called by a library on the stream worker after it wrote the output of its `call`-th operation of `site`:
// applies every matching fault for this process's rank to the output (n_elems elements of elem_bytes each, stored
// contiguously). A matching fault whose elem >= n_elems or bit >= 8 * elem_bytes cannot be applied: it prints a
// message and exits with status 2 (the same reason as for a malformed spec).
void ApplyFaults(FaultSite site, int64_t call, void* out, size_t elem_bytes, size_t n_elems);

// For outputs that are not contiguous (a GEMM's C with ldc > m, batch strides): the faults matching this process's
// rank, `site` and `call`; the caller maps each fault's elem to an address and calls FlipBit (which exits with
// status 2, as above, when the element index is >= n_elems or the bit does not fit elem_bytes).
std::vector<Fault> MatchingFaults(FaultSite site, int64_t call);
void FlipBit(const Fault& fault, void* elem_ptr, size_t elem_bytes, size_t n_elems);

}  // namespace simgpu

#endif  // TTRACE_TOOLS_SIMGPU_CORE_SIMGPU_H_
