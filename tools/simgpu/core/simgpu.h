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
#include <library_types.h>

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
// The description of every simulated device (all identical but for name, UUID and PCI bus id), as
// cudaGetDeviceProperties and cudaDeviceGetAttribute report it; DeviceAttribute returns false for an attribute
// simgpu does not describe. `device` must be a valid ordinal.
void DeviceProperties(int device, cudaDeviceProp* prop);
bool DeviceAttribute(cudaDeviceAttr attr, int device, int* value);

// Driver state (libcuda.so.1), shared with the runtime as NVIDIA's runtime shares the driver's. The driver is
// initialized by cuInit or by the first runtime call that uses a device (the runtime initializes the driver);
// a thread's current context is the primary context of its current device once the thread used the runtime or
// set a context, and none after cuCtxSetCurrent(NULL) until it does again. A device's primary context is active
// once the runtime used the device or the driver retained it. The core's device-using functions (ResolveStream,
// CreateStream, CreateEvent, AllocDevice, AllocHostPinned, SetCurrentDevice) call NoteRuntimeUse.
void NoteRuntimeUse();
void InitializeDriver();
bool DriverInitialized();
bool ContextBound();              // the calling thread has a current context
void UnbindContext();             // cuCtxSetCurrent(NULL); SetCurrentDevice binds again
bool PrimaryContextUsed(int device);  // the runtime has used `device`

// ---- streams -------------------------------------------------------------------------------------------------
struct Stream;  // cudaStream_t values handed to the application are Stream* (except the special handles below).

// Maps an application's cudaStream_t to a stream: nullptr and cudaStreamLegacy name the legacy default stream of
// the current device, cudaStreamPerThread the calling thread's per-thread default stream. Returns nullptr for a
// handle that is not a live stream.
Stream* ResolveStream(cudaStream_t stream);
// A stream the application holds a handle to (one CreateStream returned and DestroyStream has not destroyed), or
// nullptr, also for the special handles (nullptr, cudaStreamLegacy, cudaStreamPerThread). Unlike ResolveStream it
// does not count as runtime use: the driver's stream functions take an explicit stream without a current context.
Stream* LookupStream(cudaStream_t stream);
Stream* CreateStream(unsigned flags, int priority);  // flags: cudaStreamDefault | cudaStreamNonBlocking
void DestroyStream(Stream* stream);                   // waits for the stream's queued work first

// Appends work to the stream; it runs after everything enqueued on the stream before it, and as CUDA's legacy
// default stream semantics say: work on the legacy stream also waits for work enqueued earlier on every blocking
// stream of its device (created without cudaStreamNonBlocking, per-thread default streams included), and work on
// a blocking stream waits for work enqueued earlier on the legacy stream. Work runs on the stream's worker thread
// and must not synchronize with its own stream.
// While the stream is capturing (see "stream capture" below) the work is not run but recorded into the capture's
// graph, and runs each time the graph is launched. Returns cudaSuccess, or (work dropped, as CUDA refuses the
// operation): cudaErrorStreamCaptureInvalidated when the stream's capture was invalidated earlier,
// cudaErrorStreamCaptureImplicit when `stream` is the legacy stream while a blocking stream of its device is
// capturing (that capture is invalidated too). Libraries report a refusal as their own launch failure.
cudaError_t Enqueue(Stream* stream, std::function<void()> work);
void SynchronizeStream(Stream* stream);   // blocks until all work enqueued so far has run
// Enqueue, and when `wait`, returns only after the work (and everything before it on the stream) ran: what a copy
// from or to pageable host memory does. A capturing stream cannot wait: cudaErrorStreamCaptureUnsupported, and its
// capture is invalidated (CUDA refuses such a copy during capture).
cudaError_t EnqueueMaybeWait(Stream* stream, std::function<void()> work, bool wait);
bool StreamIdle(Stream* stream);          // cudaStreamQuery
void SynchronizeDevice();                 // all streams of the current device
void SynchronizeDevice(int device);       // all streams of `device` (cudaFree synchronizes the owning device)

// Introspection for cudart (cudaStreamGetFlags/GetPriority/GetDevice). Valid for a live stream only.
int StreamDevice(const Stream* stream);
unsigned StreamFlags(const Stream* stream);
int StreamPriority(const Stream* stream);
uint64_t StreamId(const Stream* stream);  // unique over the process, never 0

// ---- events --------------------------------------------------------------------------------------------------
struct Event;  // cudaEvent_t values handed to the application are Event*.
Event* ResolveEvent(cudaEvent_t event);                // nullptr for a handle that is not a live event
Event* CreateEvent(unsigned flags);                    // flags as cudaEventCreateWithFlags (validated by cudart)
void DestroyEvent(Event* event);
// Completes when the stream reaches this point; on a capturing stream it marks the capture position instead
// (see "stream capture"). Returns Enqueue's refusals, and those of capture.
cudaError_t RecordEvent(Event* event, Stream* stream);
void SynchronizeEvent(Event* event);
bool EventDone(Event* event);
// Later work on stream waits for the event's record. With capture: joins `stream` into the capture the event was
// recorded in (cudaErrorStreamCaptureMerge when the stream is in another capture); a capturing stream waiting on
// an event recorded outside its capture is refused with cudaErrorStreamCaptureIsolation (capture invalidated).
cudaError_t StreamWaitEvent(Stream* stream, Event* event);
// True while the event's latest record was made in a capture that is still in progress (cudaEventQuery and
// cudaEventSynchronize then fail with cudaErrorCapturedEvent).
bool EventInCapture(Event* event);
float ElapsedMs(Event* start, Event* end);             // host clock at completion; both must be EventDone
bool EventRecorded(Event* event);                      // cudaEventRecord was called at least once
unsigned EventFlags(Event* event);
// EventDone is true for an event never recorded (as cudaEventQuery says); a wait on such an event is a no-op.

// ---- stream capture and graphs ------------------------------------------------------------------------------
// As CUDA's stream capture: between BeginCapture and EndCapture on a stream, every operation enqueued on it is
// recorded as a node of a graph instead of running. Enqueue does the recording, so every simgpu library (cuBLAS,
// cuBLASLt, cuDNN, NCCL) is captured without code of its own: a library call made during capture runs its host
// part once, at capture (argument checks, host scalars, the fault call number), and its stream closure is
// replayed at every launch, reading its device operands then, as a captured kernel does on a GPU. A library whose
// closure carries per-call state that must not be replayed (a sequence ticket, a one-shot buffer) must check
// IsCapturing and build a closure that is safe to run once per launch.
// Events join streams into a capture: RecordEvent on a capturing stream marks the nodes it has reached;
// StreamWaitEvent of such an event makes the waiting stream depend on them, pulling a stream that was not
// capturing into the capture (a fork); EndCapture on the origin stream requires every forked stream to have
// been joined back (an event recorded on it, waited on by the origin), else cudaErrorStreamCaptureUnjoined.
// A launch enqueues the graph's nodes on the launch stream one after another in a topological order (see "graph
// nodes by kind");
// launches of one executable graph are ordered after each other, as cudaGraphLaunch documents.
// Refusals follow CUDA: capture on the legacy stream is unsupported; calls that would wait on a capturing stream
// (SynchronizeStream, StreamIdle, device synchronization) and "potentially unsafe" calls (allocation, free;
// CheckUnsafeCall) under the thread's capture mode fail with cudaErrorStreamCaptureUnsupported and invalidate
// the capture; an invalidated capture refuses further work and EndCapture returns no graph.
struct Graph;      // cudaGraph_t values handed to the application are Graph*
struct GraphNode;  // cudaGraphNode_t values are GraphNode*
struct GraphExec;  // cudaGraphExec_t values are GraphExec*

// cudaErrorStreamCaptureUnsupported (legacy stream), cudaErrorIllegalState (already capturing). With `into`,
// records into that existing graph (which must not be in another capture), the first node depending on `deps`.
cudaError_t BeginCapture(Stream* stream, cudaStreamCaptureMode mode, Graph* into = nullptr,
                         const std::vector<GraphNode*>& deps = {});
// Ends the capture begun on `stream`: *graph is the captured graph (the caller owns it: DestroyGraph), or
// nullptr with cudaErrorStreamCaptureInvalidated / cudaErrorStreamCaptureUnjoined. cudaErrorIllegalState when the
// stream is not capturing, cudaErrorStreamCaptureUnmatched when it is not the stream the capture began on (the
// capture is invalidated), cudaErrorStreamCaptureWrongThread for a non-relaxed capture ended on another thread.
cudaError_t EndCapture(Stream* stream, Graph** graph);
bool IsCapturing(Stream* stream);  // active or invalidated capture
// Status, capture id (unique over the process), graph and the current dependency set of `stream` (the vector is
// the stream's own copy, valid until the next capture call on the stream). Any out pointer may be null.
cudaStreamCaptureStatus CaptureInfo(Stream* stream, unsigned long long* id, Graph** graph,
                                    const std::vector<GraphNode*>** deps);
// cudaErrorStreamCaptureImplicit when `stream` is the legacy stream of a device on which a blocking stream is
// capturing (as cudaStreamIsCapturing on cudaStreamLegacy reports), else cudaSuccess.
cudaError_t CheckLegacyQuery(Stream* stream);
// Replaces the calling thread's capture mode (cudaThreadExchangeStreamCaptureMode); the default is global.
void ExchangeCaptureMode(cudaStreamCaptureMode* mode);
// For a "potentially unsafe" call (cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost, ...): refused with
// cudaErrorStreamCaptureUnsupported, invalidating the captures that forbid it, when the calling thread has a
// non-relaxed capture in progress (and its mode is not relaxed), or its mode is global and any thread has a
// global-mode capture in progress. Else cudaSuccess.
cudaError_t CheckUnsafeCall();
// For calls that would wait for the stream (cudaStreamSynchronize, cudaStreamQuery): refused with
// cudaErrorStreamCaptureUnsupported when the stream is capturing (the capture is invalidated), with
// cudaErrorStreamCaptureImplicit when it is the legacy stream and a blocking stream of its device is capturing.
cudaError_t CheckStreamWait(Stream* stream);
// For cudaDeviceSynchronize: refused with cudaErrorStreamCaptureUnsupported while any stream of the device is
// capturing, whatever the capture mode (every such capture is invalidated).
cudaError_t CheckDeviceWait(int device);
// Invalidates the capture `stream` takes part in (no-op when none), for refusals decided by the caller.
void InvalidateCapture(Stream* stream);

// Device memory allocated on a capturing stream (cudaMallocAsync) belongs to the capture: NoteCaptureAllocation
// records it; TakeCaptureAllocation (cudaFreeAsync on a capturing stream) returns true when ptr was allocated in
// the same capture and hands it to the graph, which frees it when the graph and every executable instantiated
// from it are destroyed. An allocation a graph does not free stays the application's, as on a GPU.
void NoteCaptureAllocation(Stream* stream, void* ptr);
bool TakeCaptureAllocation(Stream* stream, void* ptr);

Graph* CreateGraph();                       // an empty graph (cudaGraphCreate)
bool LiveGraph(const Graph* graph);         // false for a handle that is not a live graph
// Executables instantiated from it stay valid. cudaErrorInvalidValue for a handle that is not a live graph,
// cudaErrorIllegalState while a capture records into it.
cudaError_t DestroyGraph(Graph* graph);
std::vector<GraphNode*> GraphNodes(const Graph* graph);  // in creation (capture) order
std::vector<GraphNode*> GraphNodeDependencies(const GraphNode* node);
// Adds a kernel node that runs `work` at each launch after `deps` (nodes of `graph`), as cudaGraphAddKernelNode adds
// one (libraries that put their work into an application's graph: cuDNN's native CUDA graph API, which
// tags its nodes with the plan so that an update can find them, in the graph or in a clone of it). nullptr when
// `graph` is not a live graph, a capture records into it, or a dependency is not one of its nodes.
GraphNode* AddGraphNode(Graph* graph, std::function<void()> work, const std::vector<GraphNode*>& deps,
                        const void* tag = nullptr);
const void* GraphNodeTag(const GraphNode* node);
// cudaGraphAddChildGraphNode: a node that runs a clone of `child` (its nodes, tags and embedded graphs) in its place;
// the clone is a live graph owned by the node (ChildGraphOf, as cudaGraphChildGraphNodeGetGraph: changes to it are
// the node's; DestroyGraph refuses it). nullptr for dead graphs, a graph in capture, a graph into itself, a child
// that frees memory (allocation and free nodes cannot be in a child graph), or a dependency not of `graph`.
GraphNode* AddChildGraphNode(Graph* graph, const Graph* child, const std::vector<GraphNode*>& deps);
Graph* ChildGraphOf(const GraphNode* node);  // nullptr when `node` is not a child graph node of a live graph
// Replaces what kernel node `node` runs with a new KernelFunction (cudaGraphKernelNodeSetParams): later
// instantiations run the new work, executables already instantiated keep theirs until cudaGraphExecUpdate. False
// when `node` is not a kernel node of live `graph`.
bool SetGraphNodeWork(Graph* graph, GraphNode* node, std::function<void()> work);
// ---- graph nodes by kind (cudaGraphAdd*Node, node parameters, clones) -------------------------------------------
// A graph's nodes keep their creation order (GraphNodes, and what cudaGraphExecUpdate pairs by position); a launch
// runs them in a topological order, ties broken by creation order, so edges added after the nodes
// (AddGraphDependencies) are honored. Node kinds, as cudaGraphNodeGetType reports them:
//   kernel  every node stream capture records (simgpu cannot tell a captured kernel from a captured copy: its
//           stream operations are closures) and every AddGraphNode node (cuDNN's native CUDA graph nodes). Its
//           work is a KernelFunction, which the driver hands out as the node's CUfunction
//           (cuGraphKernelNodeGetParams) and takes back (cuGraphKernelNodeSetParams, on any kernel node): simgpu's
//           stand-in for a kernel and its arguments. Grid, block and shared memory are kept as set, and unused.
//   memcpy  a pitched 3D copy between linear memory (CUDA arrays are not modeled), run when the node runs.
//   memset  a pitched 2D fill of 1-, 2- or 4-byte elements (the value's low bytes, as cudaMemset2D takes them).
//   host    a host function and its argument, run on the launch stream's worker when the node runs.
//   graph   a child graph node (AddChildGraphNode).
// Functions taking a node return false / nullptr / cudaErrorInvalidValue for a handle that is not a live node.
struct KernelFunction;  // CUfunction values of simgpu's kernel nodes; live while a node or executable holds one
struct KernelShape {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
};
struct CopyParams {       // cudaMemcpy3DParms between pitched pointers; width in bytes
  const void* src = nullptr;
  size_t src_pitch = 0, src_xsize = 0, src_ysize = 0;  // ysize: rows per slice
  size_t src_x = 0, src_y = 0, src_z = 0;
  void* dst = nullptr;
  size_t dst_pitch = 0, dst_xsize = 0, dst_ysize = 0;
  size_t dst_x = 0, dst_y = 0, dst_z = 0;
  size_t width = 0, height = 0, depth = 0;
  cudaMemcpyKind kind = cudaMemcpyDefault;
};
// A copy simgpu can run: pointers present, extent non-zero, rows within the pitches and slices within ysize.
bool ValidCopy(const CopyParams& p);
using HostFunction = void (*)(void*);
struct MemsetParams {     // cudaMemsetParams: `height` rows of `width` elements of 1, 2 or 4 bytes, `pitch` apart
  void* dst = nullptr;
  size_t pitch = 0;
  unsigned value = 0;
  unsigned element_size = 1;
  size_t width = 0, height = 0;
};
// A memset simgpu can run: dst present, element size 1, 2 or 4, extent non-zero, rows within the pitch.
bool ValidMemset(const MemsetParams& p);

bool LiveGraphNode(const GraphNode* node);
Graph* GraphOfNode(const GraphNode* node);  // the graph `node` belongs to; nullptr for a dead node
bool GraphNodeType(const GraphNode* node, cudaGraphNodeType* type);
// nullptr when the graph is dead or in a capture, a dependency is not of `graph`, or the copy is not ValidCopy.
GraphNode* AddMemcpyNode(Graph* graph, const CopyParams& copy, const std::vector<GraphNode*>& deps);
GraphNode* AddHostNode(Graph* graph, HostFunction fn, void* data, const std::vector<GraphNode*>& deps);
bool GetCopyNode(const GraphNode* node, CopyParams* copy);   // false: not a live memcpy node
bool SetCopyNode(GraphNode* node, const CopyParams& copy);   // false: not a live memcpy node, or not ValidCopy
GraphNode* AddMemsetNode(Graph* graph, const MemsetParams& memset, const std::vector<GraphNode*>& deps);
bool GetMemsetNode(const GraphNode* node, MemsetParams* memset);  // false: not a live memset node
bool SetMemsetNode(GraphNode* node, const MemsetParams& memset);  // false: not a live memset node, or not valid
bool GetHostNode(const GraphNode* node, HostFunction* fn, void** data);
bool SetHostNode(GraphNode* node, HostFunction fn, void* data);  // false: not a live host node, or fn null
bool GetKernelNode(const GraphNode* node, KernelFunction** fn, KernelShape* shape);  // false: not a kernel node
// The node runs `fn` from the next instantiation on. cudaErrorInvalidValue for a node that is not a live kernel
// node, cudaErrorInvalidDeviceFunction for a function that is not a live KernelFunction (simgpu runs no device
// code: only its own functions can be set).
cudaError_t SetKernelNode(GraphNode* node, KernelFunction* fn, const KernelShape& shape);
// cudaGraphAddDependencies: to[i] depends on from[i], all or nothing. cudaErrorInvalidValue when a node is not
// of `graph`, an edge joins a node to itself, or the edge already exists (also twice in one call). A cycle is
// refused at instantiation (InstantiateGraph).
cudaError_t AddGraphDependencies(Graph* graph, const std::vector<GraphNode*>& from,
                                 const std::vector<GraphNode*>& to);
// cudaGraphDestroyNode: removes the node and its edges (a child graph node's embedded graph goes with it).
cudaError_t DestroyGraphNode(GraphNode* node);
// cudaGraphClone: a new graph (the caller owns it) with a copy of each node, its kind, parameters, tag and edges
// (child graph nodes with a clone of their embedded graph). FindInClone (cudaGraphNodeFindInClone): the copy in
// `clone` of `original`, a node of the graph `clone` was cloned from; nullptr otherwise (a node added after the
// clone, a clone of another graph).
Graph* CloneGraph(const Graph* graph);
GraphNode* FindInClone(const GraphNode* original, const Graph* clone);
// A snapshot: later changes to the graph do not affect it. nullptr when the graph (or a graph embedded in it) has
// a cycle.
GraphExec* InstantiateGraph(const Graph* graph);
// cudaGraphExecUpdate: when `graph` has the topology `exec` was instantiated from (as many nodes, each depending on
// the nodes at the same positions), every node of `exec` takes the work of its counterpart in `graph` (launches
// already enqueued keep the old work) and the result is cudaSuccess. Otherwise nothing changes and the result is
// cudaErrorGraphExecUpdateFailure, with *error_node (and *error_from for an edge) the first node that differs
// (null when the node counts differ). cudaErrorInvalidValue for a dead exec or graph.
cudaError_t UpdateGraphExec(GraphExec* exec, const Graph* graph, GraphNode** error_node, GraphNode** error_from);
// cudaGraphExecChildGraphNodeSetParams: in `exec`, child graph node `node` (of the graph `exec` was instantiated
// from) runs `child`'s work from the next launch on. cudaErrorInvalidValue when `node` is not a child graph node of
// that graph or `child` is not a live graph; cudaErrorGraphExecUpdateFailure (nothing changed) when `child`'s
// topology is not that of the node's embedded graph at instantiation.
cudaError_t SetExecChildGraph(GraphExec* exec, const GraphNode* node, const Graph* child);
// The nodes that depend on `node` in its graph (cudaGraphNodeGetDependentNodes), in graph order.
std::vector<GraphNode*> GraphNodeDependents(const GraphNode* node);
bool LiveGraphExec(const GraphExec* exec);
void DestroyGraphExec(GraphExec* exec);     // launches already enqueued still run
// Enqueues the graph's nodes on `stream` (which may itself be capturing: the nodes are then recorded). Returns
// Enqueue's status for the first node refused.
cudaError_t LaunchGraph(GraphExec* exec, Stream* stream);

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
// SIMGPU_FAULT is a ';'-separated list of specs (empty items are ignored). A spec is SITE:FIELD:FIELD..., its
// fields in any order, each at most once; numbers are non-negative decimal integers (at most 18 digits).
//
// Sites with a call counter (one counter per site and process, counting from 0 in host call order; a call
// rejected by argument checks takes no number):
//   gemm   every cuBLAS and cuBLASLt GEMM call (one counter shared by both libraries; a batched call is one call)
//   conv   every cuDNN convolution: forward, backward data and backward filter share one counter
//   attn   every execution of an attention operation graph (cuDNN backend)
//   coll   every NCCL collective (point-to-point send/recv are not counted)
// Fields: rank=R (the process whose RANK is R) and call=N are required, plus exactly one action:
//   bit=B       flip bit B of output element E (bit 0 is the least significant bit of the element's
//               little-endian storage; B < the element's width in bits)                           needs elem=E
//   value=V     stuck-at: set output element E to V converted to the output type, rounded to nearest even
//               (V as C's strtod reads it: 1.5, -2e-3, inf, -inf, nan; a finite V beyond the type's range
//               becomes inf, or NaN for FP8 E4M3 which has no infinity; integer types need an integer V in
//               range)                                                                            needs elem=E
//   stale       coll only: the result of the previous collective on the same communicator is returned
//   swap=I,J    coll only (all-gather): the chunks of ranks I and J are exchanged in the output (I != J)
//   drop=S      coll only (reductions): the reduction omits rank S's contribution
// E is the index of the element in the output's logical order, as each library documents (cuBLAS: column-major
// m x n C, batch after batch). stale, swap and drop take no elem=.
//
// The stream site:
//   stream:rank=R:op=N:delay_ms=T   the N-th operation (0-based) enqueued on any stream of the process whose
//                                   RANK is R starts T ms late; the stream's later work waits behind it. Every
//                                   stream operation counts: library calls, copies, memsets, host functions,
//                                   event records and waits, and each node of a launched graph (work recorded
//                                   by stream capture counts when a launch enqueues it, not when captured).
//                                   A program that reads a result without synchronizing then reads stale data
//                                   deterministically, as a race on a GPU would sometimes.
//
// Examples: gemm:rank=0:call=3:elem=17:bit=30     coll:rank=1:call=0:elem=5:value=nan
//           coll:rank=0:call=2:stale             coll:rank=0:call=1:swap=0,3        coll:rank=2:call=4:drop=1
//           stream:rank=0:op=12:delay_ms=200
//
// Parsed once, when libsimgpu.so loads; a malformed spec prints which spec and which field is wrong to stderr and
// exits with status 2, since a test that silently runs without its fault would pass for the wrong reason. The
// same happens for a matching fault that cannot be applied (element or bit out of range, a value the type
// cannot hold).
enum class FaultSite { kGemm, kCollective, kConv, kAttention, kStream };
enum class FaultAction { kBitFlip, kValue, kStale, kSwap, kDrop, kDelay };
struct Fault {
  FaultSite site = FaultSite::kGemm;
  int rank = 0;
  int64_t call = 0;     // call=N; for kStream the op=N index
  int64_t elem = 0;     // kBitFlip, kValue
  int bit = 0;          // kBitFlip: bit index in [0, 63]
  FaultAction action = FaultAction::kBitFlip;
  double value = 0.0;   // kValue: V as strtod read it
  int swap_i = 0;       // kSwap: the two rank chunks exchanged
  int swap_j = 0;
  int drop_rank = 0;    // kDrop
  int64_t delay_ms = 0; // kDelay (site kStream)
};
const char* FaultSiteName(FaultSite site);  // "gemm", "conv", "attn", "coll", "stream"
std::string DescribeFault(const Fault& fault);  // the spec in canonical field order, for messages
const std::vector<Fault>& Faults();
// Parses a spec; returns false with a message on error and leaves *out untouched (exposed for tests).
bool ParseFaults(const std::string& spec, std::vector<Fault>* out, std::string* error);

// The faults (any action) matching this process's rank, `site` and `call`, in spec order. Libraries call it once
// per call on the host, when the call is numbered, and apply the result on the stream worker after the output
// is written. Coll-only actions (stale, swap, drop) are carried out by the NCCL library from these fields.
std::vector<Fault> MatchingFaults(FaultSite site, int64_t call);

// The next call number of `site` in this process (0, 1, 2, ... in the order of the calls to this function), one
// counter per site shared by every simgpu library: cuBLAS and cuBLASLt GEMMs both number their calls here, so a
// gemm fault's call=N names the N-th GEMM whichever library ran it. A library takes the number on the host, once
// per call that passed its argument checks.
int64_t NextCallIndex(FaultSite site);

// Stops the process (status 2, message naming the spec) when fault.elem >= n_elems: a fault that matches a call
// but names an element the output does not have.
void CheckFaultElement(const Fault& fault, uint64_t n_elems);

// Applies a kBitFlip or kValue fault to the one element at elem_ptr, stored as `dtype`: flips the bit, or
// stores fault.value converted to dtype (round to nearest even; FP64, FP32, FP16, BF16, FP8 E4M3 and E5M2, and
// the 8/16/32/64-bit signed and unsigned integers). Stops the process (status 2) when the bit does not fit the
// element, the value does not fit an integer type, dtype has no element conversion (value= on complex, E8M0 or
// FP4 elements; bit= on FP4), or the fault is not an element action. The caller maps fault.elem to elem_ptr and
// checks it with CheckFaultElement first. Runs on any thread (normally the stream worker).
void ApplyElementFault(const Fault& fault, void* elem_ptr, cudaDataType dtype);

// Contiguous outputs: applies every matching kBitFlip and kValue fault of (site, call) to out[fault.elem], out
// holding n_elems elements of `dtype`, checking each element index first. Other actions are left to the caller.
void ApplyElementFaults(FaultSite site, int64_t call, void* out, cudaDataType dtype, size_t n_elems);

// Stores `value` as one element of `dtype` at out, rounded to nearest even (the conversion value= uses).
// Returns false, writing nothing, when dtype has no conversion or an integer type cannot hold value.
bool StoreElementValue(double value, cudaDataType dtype, void* out);
// Size in bytes of one element of dtype; 0 for types without whole-byte elements (FP4) or unknown types.
size_t DataTypeBytes(cudaDataType dtype);

// Earlier, type-less forms (kept for existing callers). ApplyFaults applies the matching kBitFlip faults to a
// contiguous output of n_elems elements of elem_bytes each and stops the process on a matching kValue fault (it
// cannot convert without a type); coll-only actions are left to the caller. FlipBit flips fault.bit of the
// element at elem_ptr after the same range checks as above.
void ApplyFaults(FaultSite site, int64_t call, void* out, size_t elem_bytes, size_t n_elems);
void FlipBit(const Fault& fault, void* elem_ptr, size_t elem_bytes, size_t n_elems);

// The stream site: total delay in ms for the op-th operation enqueued in this process (0 when no fault matches).
// Called by the stream core for each enqueued operation.
int64_t StreamDelayMs(int64_t op);

}  // namespace simgpu

#endif  // TTRACE_TOOLS_SIMGPU_CORE_SIMGPU_H_
