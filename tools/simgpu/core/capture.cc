// Stream capture and graphs (semantics in simgpu.h). All capture state is guarded by one process-wide lock;
// capture is rare and short next to the work it records, and one lock makes joins across streams, events and
// threads simple to get right. Stream operations pay for none of it while no capture is active (an atomic count).
//
// A graph is a list of nodes in creation order, each a closure (or a kernel function) plus the nodes it depends on.
// A launch runs the nodes one after another on the launch stream in a topological order (creation order when that
// is one, as for captured graphs): one valid execution of the graph, the one a GPU gives when its nodes do not
// overlap.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/core/stream_internal.h"

namespace simgpu {

struct KernelFunction {
  std::function<void()> work;
};

struct GraphNode {
  cudaGraphNodeType type = cudaGraphNodeTypeKernel;
  std::function<void()> work;              // memcpy and host nodes: built from their parameters
  std::shared_ptr<KernelFunction> kernel;  // kernel nodes
  KernelShape shape;
  CopyParams copy;
  MemsetParams memset;
  HostFunction host_fn = nullptr;
  void* host_data = nullptr;
  std::vector<GraphNode*> deps;
  const void* tag = nullptr;           // AddGraphNode's: who put the node there (kept by clones)
  std::shared_ptr<Graph> child;        // a child graph node's embedded graph (its work is the child's nodes)
  const GraphNode* original = nullptr;  // in a CloneGraph clone: the node it copies (compared, never dereferenced)
};

// Device memory a graph frees (allocated and freed inside one capture): released when the last graph, executable
// or enqueued launch holding it goes.
struct GraphResources {
  std::vector<void*> owned;
  ~GraphResources() {
    for (void* p : owned) FreeDevice(p);
  }
};

struct Graph {
  std::vector<std::unique_ptr<GraphNode>> nodes;
  std::shared_ptr<GraphResources> resources = std::make_shared<GraphResources>();
  bool in_capture = false;
  bool embedded = false;  // owned by a child graph node: live while the node is, never destroyed by the application
  const Graph* cloned_from = nullptr;  // CloneGraph's source (compared, never dereferenced)
};

struct Capture {
  uint64_t id = 0;
  Stream* origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  bool invalidated = false;
  std::atomic<bool> ended{false};
  Graph* graph = nullptr;
  bool owns_graph = false;       // created by BeginCapture (not cudaStreamBeginCaptureToGraph)
  std::vector<Stream*> streams;  // taking part: the origin first, then streams joined by event waits
  std::unordered_set<void*> allocations;
};

namespace {

// Marks the end of one launch of an executable graph, so the next launch of the same executable waits for it.
struct LaunchDone {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  void Signal() {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return done; });
  }
};

}  // namespace

struct GraphExec {
  std::shared_ptr<const std::vector<std::function<void()>>> works;  // replaced whole by UpdateGraphExec
  std::vector<std::vector<size_t>> topology;  // each node's dependencies, as positions in the graph's node list
  std::vector<const GraphNode*> nodes;        // the graph's nodes at instantiation (identities, never dereferenced)
  std::vector<std::pair<size_t, size_t>> work_range;  // node i's work: works[first, second)
  std::shared_ptr<GraphResources> resources;
  std::mutex mu;
  std::shared_ptr<LaunchDone> last;  // the latest launch; null before the first
};

namespace {

struct CaptureState {
  std::mutex mu;
  std::vector<std::shared_ptr<Capture>> active;
  std::unordered_set<const Graph*> graphs;
  std::unordered_map<const GraphNode*, Graph*> owner;  // every node of a live graph, embedded ones included
  std::unordered_set<const GraphExec*> execs;
  // Kernel functions handed out, by address (expired entries swept as the table grows).
  std::unordered_map<const KernelFunction*, std::weak_ptr<KernelFunction>> functions;
  size_t sweep_at = 64;
  uint64_t next_id = 1;
};

CaptureState& State() {
  static CaptureState* state = new CaptureState;
  return *state;
}

std::atomic<int> active_captures{0};
thread_local cudaStreamCaptureMode thread_mode = cudaStreamCaptureModeGlobal;

// Captures with a blocking stream on `device` (the ones an operation on the legacy stream would depend on).
std::vector<Capture*> BlockingCapturesOn(int device) {
  std::vector<Capture*> found;
  for (const auto& c : State().active) {
    for (Stream* t : c->streams) {
      if (t->device == device && t->Blocking()) {
        found.push_back(c.get());
        break;
      }
    }
  }
  return found;
}

bool ImplicitOnLegacy(Stream* stream, bool invalidate) {
  if (stream->role != Stream::Role::kLegacy) return false;
  std::vector<Capture*> hit = BlockingCapturesOn(stream->device);
  if (invalidate) {
    for (Capture* c : hit) c->invalidated = true;
  }
  return !hit.empty();
}

// Ends `c`: every stream leaves it, it leaves the active list. Caller holds the lock.
void Terminate(const std::shared_ptr<Capture>& c) {
  for (Stream* t : c->streams) {
    t->capture.reset();
    t->capture_deps.clear();
    t->capture_deps_out.clear();
  }
  c->ended = true;
  c->graph->in_capture = false;
  auto& active = State().active;
  active.erase(std::remove(active.begin(), active.end(), c), active.end());
  active_captures.fetch_sub(1);
}

// Forgets `graph`, its nodes and the graphs embedded in it (their nodes own them). Caller holds the lock.
void Unregister(const Graph* graph) {
  State().graphs.erase(graph);
  for (const auto& n : graph->nodes) {
    State().owner.erase(n.get());
    if (n->child) Unregister(n->child.get());
  }
}

// A new kernel function running `work`. Caller holds the lock.
std::shared_ptr<KernelFunction> NewFunction(std::function<void()> work) {
  CaptureState& state = State();
  auto fn = std::make_shared<KernelFunction>();
  fn->work = std::move(work);
  if (state.functions.size() >= state.sweep_at) {
    for (auto it = state.functions.begin(); it != state.functions.end();)
      it = it->second.expired() ? state.functions.erase(it) : std::next(it);
    state.sweep_at = std::max<size_t>(64, 2 * state.functions.size());
  }
  state.functions[fn.get()] = fn;
  return fn;
}

// Appends `node` to `graph` and registers it. Caller holds the lock.
GraphNode* Append(Graph* graph, std::unique_ptr<GraphNode> node) {
  GraphNode* n = node.get();
  graph->nodes.push_back(std::move(node));
  State().owner[n] = graph;
  return n;
}

void DeleteGraph(Graph* graph) {
  Unregister(graph);
  delete graph;
}

// True when every stream forked into `c` was joined back: its last nodes are ancestors of the origin's.
bool AllJoined(const Capture& c) {
  std::unordered_set<const GraphNode*> reached;
  std::vector<const GraphNode*> todo(c.origin->capture_deps.begin(), c.origin->capture_deps.end());
  while (!todo.empty()) {
    const GraphNode* n = todo.back();
    todo.pop_back();
    if (!reached.insert(n).second) continue;
    todo.insert(todo.end(), n->deps.begin(), n->deps.end());
  }
  for (Stream* t : c.streams) {
    if (t == c.origin) continue;
    for (const GraphNode* n : t->capture_deps) {
      if (reached.count(n) == 0) return false;
    }
  }
  return true;
}

}  // namespace

bool CaptureEnqueue(Stream* stream, std::function<void()>* work, cudaError_t* status) {
  if (active_captures.load() == 0) return false;
  std::lock_guard<std::mutex> lock(State().mu);
  const std::shared_ptr<Capture>& c = stream->capture;
  if (c) {
    if (c->invalidated) {
      *status = cudaErrorStreamCaptureInvalidated;
      return true;
    }
    auto node = std::make_unique<GraphNode>();
    node->kernel = NewFunction(std::move(*work));
    node->deps = stream->capture_deps;
    stream->capture_deps = {Append(c->graph, std::move(node))};
    *status = cudaSuccess;
    return true;
  }
  if (ImplicitOnLegacy(stream, /*invalidate=*/true)) {
    *status = cudaErrorStreamCaptureImplicit;
    return true;
  }
  return false;
}

bool CaptureRecordEvent(Stream* stream, EventCaptureMark* mark, cudaError_t* status) {
  if (active_captures.load() == 0) return false;
  std::lock_guard<std::mutex> lock(State().mu);
  const std::shared_ptr<Capture>& c = stream->capture;
  if (!c) return false;
  if (c->invalidated) {
    *status = cudaErrorStreamCaptureInvalidated;
    return true;
  }
  mark->capture = c;
  mark->nodes = stream->capture_deps;
  *status = cudaSuccess;
  return true;
}

bool CaptureWaitEvent(Stream* stream, const EventCaptureMark& mark, bool recorded_outside, cudaError_t* status) {
  if (active_captures.load() == 0) return false;
  std::lock_guard<std::mutex> lock(State().mu);
  std::shared_ptr<Capture> from = mark.capture.lock();
  std::shared_ptr<Capture> own = stream->capture;
  *status = cudaSuccess;
  if (from && !from->ended) {
    if (from->invalidated) {
      *status = cudaErrorStreamCaptureInvalidated;
    } else if (!own) {
      if (stream->role == Stream::Role::kLegacy) {
        from->invalidated = true;
        *status = cudaErrorStreamCaptureImplicit;
      } else {
        stream->capture = from;
        stream->capture_deps = mark.nodes;
        from->streams.push_back(stream);
      }
    } else if (own == from) {
      for (GraphNode* n : mark.nodes) {
        if (std::find(stream->capture_deps.begin(), stream->capture_deps.end(), n) == stream->capture_deps.end()) {
          stream->capture_deps.push_back(n);
        }
      }
    } else {
      own->invalidated = true;
      from->invalidated = true;
      *status = cudaErrorStreamCaptureMerge;
    }
    return true;
  }
  if (!own) return false;
  if (own->invalidated) {
    *status = cudaErrorStreamCaptureInvalidated;
  } else if (recorded_outside) {
    own->invalidated = true;
    *status = cudaErrorStreamCaptureIsolation;
  }
  return true;
}

bool MarkInActiveCapture(const EventCaptureMark& mark) {
  std::shared_ptr<Capture> c = mark.capture.lock();
  return c && !c->ended;
}

void CaptureStreamDestroyed(Stream* stream) {
  if (active_captures.load() == 0) return;
  std::lock_guard<std::mutex> lock(State().mu);
  std::shared_ptr<Capture> c = stream->capture;
  if (!c) return;
  c->invalidated = true;
  if (c->origin == stream) {
    Terminate(c);
    if (c->owns_graph) DeleteGraph(c->graph);
    return;
  }
  c->streams.erase(std::remove(c->streams.begin(), c->streams.end(), stream), c->streams.end());
  stream->capture.reset();
  stream->capture_deps.clear();
}

cudaError_t BeginCapture(Stream* stream, cudaStreamCaptureMode mode, Graph* into,
                         const std::vector<GraphNode*>& deps) {
  if (stream->role == Stream::Role::kLegacy) return cudaErrorStreamCaptureUnsupported;
  CaptureState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  if (stream->capture || (into != nullptr && into->in_capture)) return cudaErrorIllegalState;
  auto c = std::make_shared<Capture>();
  c->id = state.next_id++;
  c->origin = stream;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->owns_graph = into == nullptr;
  c->graph = into != nullptr ? into : new Graph;
  if (c->owns_graph) state.graphs.insert(c->graph);
  c->graph->in_capture = true;
  c->streams.push_back(stream);
  stream->capture = c;
  stream->capture_deps = deps;
  state.active.push_back(c);
  active_captures.fetch_add(1);
  return cudaSuccess;
}

cudaError_t EndCapture(Stream* stream, Graph** graph) {
  std::lock_guard<std::mutex> lock(State().mu);
  std::shared_ptr<Capture> c = stream->capture;
  if (!c) return cudaErrorIllegalState;
  if (c->origin != stream) {
    c->invalidated = true;
    return cudaErrorStreamCaptureUnmatched;
  }
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id()) {
    return cudaErrorStreamCaptureWrongThread;
  }
  const bool joined = AllJoined(*c);
  Terminate(c);
  if (c->invalidated || !joined) {
    if (c->owns_graph) DeleteGraph(c->graph);
    *graph = nullptr;
    return c->invalidated ? cudaErrorStreamCaptureInvalidated : cudaErrorStreamCaptureUnjoined;
  }
  *graph = c->graph;
  return cudaSuccess;
}

bool IsCapturing(Stream* stream) {
  if (active_captures.load() == 0) return false;
  std::lock_guard<std::mutex> lock(State().mu);
  return stream->capture != nullptr;
}

cudaStreamCaptureStatus CaptureInfo(Stream* stream, unsigned long long* id, Graph** graph,
                                    const std::vector<GraphNode*>** deps) {
  std::lock_guard<std::mutex> lock(State().mu);
  const std::shared_ptr<Capture>& c = stream->capture;
  if (!c) return cudaStreamCaptureStatusNone;
  if (id != nullptr) *id = c->id;
  if (graph != nullptr) *graph = c->graph;
  if (deps != nullptr) {
    stream->capture_deps_out = stream->capture_deps;
    *deps = &stream->capture_deps_out;
  }
  return c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
}

cudaError_t CheckLegacyQuery(Stream* stream) {
  if (active_captures.load() == 0) return cudaSuccess;
  std::lock_guard<std::mutex> lock(State().mu);
  return ImplicitOnLegacy(stream, /*invalidate=*/false) ? cudaErrorStreamCaptureImplicit : cudaSuccess;
}

void ExchangeCaptureMode(cudaStreamCaptureMode* mode) { std::swap(thread_mode, *mode); }

cudaError_t CheckUnsafeCall() {
  if (active_captures.load() == 0 || thread_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  std::lock_guard<std::mutex> lock(State().mu);
  const std::thread::id me = std::this_thread::get_id();
  bool refused = false;
  for (const auto& c : State().active) {
    bool own = c->thread == me && c->mode != cudaStreamCaptureModeRelaxed;
    bool global = thread_mode == cudaStreamCaptureModeGlobal && c->mode == cudaStreamCaptureModeGlobal;
    if (own || global) {
      c->invalidated = true;
      refused = true;
    }
  }
  return refused ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t CheckStreamWait(Stream* stream) {
  if (active_captures.load() == 0) return cudaSuccess;
  std::lock_guard<std::mutex> lock(State().mu);
  if (stream->capture) {
    stream->capture->invalidated = true;
    return cudaErrorStreamCaptureUnsupported;
  }
  return ImplicitOnLegacy(stream, /*invalidate=*/true) ? cudaErrorStreamCaptureImplicit : cudaSuccess;
}

cudaError_t CheckDeviceWait(int device) {
  if (active_captures.load() == 0) return cudaSuccess;
  std::lock_guard<std::mutex> lock(State().mu);
  bool refused = false;
  for (const auto& c : State().active) {
    for (Stream* t : c->streams) {
      if (t->device == device) {
        c->invalidated = true;
        refused = true;
        break;
      }
    }
  }
  return refused ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

void InvalidateCapture(Stream* stream) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (stream->capture) stream->capture->invalidated = true;
}

void NoteCaptureAllocation(Stream* stream, void* ptr) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (stream->capture) stream->capture->allocations.insert(ptr);
}

bool TakeCaptureAllocation(Stream* stream, void* ptr) {
  std::lock_guard<std::mutex> lock(State().mu);
  const std::shared_ptr<Capture>& c = stream->capture;
  if (!c || c->allocations.erase(ptr) == 0) return false;
  c->graph->resources->owned.push_back(ptr);
  return true;
}

Graph* CreateGraph() {
  auto* graph = new Graph;
  std::lock_guard<std::mutex> lock(State().mu);
  State().graphs.insert(graph);
  return graph;
}

bool LiveGraph(const Graph* graph) {
  std::lock_guard<std::mutex> lock(State().mu);
  return State().graphs.count(graph) != 0;
}

cudaError_t DestroyGraph(Graph* graph) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(graph) == 0 || graph->embedded) return cudaErrorInvalidValue;
  if (graph->in_capture) return cudaErrorIllegalState;
  DeleteGraph(graph);
  return cudaSuccess;
}

std::vector<GraphNode*> GraphNodes(const Graph* graph) {
  std::lock_guard<std::mutex> lock(State().mu);
  std::vector<GraphNode*> nodes;
  for (const auto& n : graph->nodes) nodes.push_back(n.get());
  return nodes;
}

std::vector<GraphNode*> GraphNodeDependencies(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  return node->deps;
}

namespace {

// For each node of graph->nodes (creation order): the positions of its dependencies, then, for a child graph
// node, a marker and its embedded graph's topology, flattened (equal vectors: equal topologies).
std::vector<std::vector<size_t>> Topology(const Graph* graph);

// An embedded graph's topology as the tail of its child graph node's entry.
std::vector<size_t> Embedded(const Graph* child) {
  std::vector<size_t> tail = {SIZE_MAX};
  for (const std::vector<size_t>& c : Topology(child)) {
    tail.push_back(c.size());
    tail.insert(tail.end(), c.begin(), c.end());
  }
  return tail;
}

std::vector<std::vector<size_t>> Topology(const Graph* graph) {
  std::unordered_map<const GraphNode*, size_t> at;
  for (size_t i = 0; i < graph->nodes.size(); ++i) at[graph->nodes[i].get()] = i;
  std::vector<std::vector<size_t>> topology;
  for (const auto& n : graph->nodes) {
    std::vector<size_t> deps;
    for (const GraphNode* d : n->deps) deps.push_back(at.at(d));
    if (n->child) {
      const std::vector<size_t> tail = Embedded(n->child.get());
      deps.insert(deps.end(), tail.begin(), tail.end());
    }
    topology.push_back(std::move(deps));
  }
  return topology;
}

// The positions of graph->nodes in launch order: each after its dependencies, ties in creation order. False when
// the graph has a cycle.
bool LaunchOrder(const Graph* graph, std::vector<size_t>* order) {
  const size_t n = graph->nodes.size();
  std::unordered_map<const GraphNode*, size_t> at;
  for (size_t i = 0; i < n; ++i) at[graph->nodes[i].get()] = i;
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; ++i) {
    for (const GraphNode* d : graph->nodes[i]->deps) {
      ++pending[i];
      dependents[at.at(d)].push_back(i);
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  order->clear();
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    order->push_back(i);
    for (size_t j : dependents[i])
      if (--pending[j] == 0) ready.insert(j);
  }
  return order->size() == n;
}

std::function<void()> NodeWork(const GraphNode& n) {
  if (n.kernel) return [fn = n.kernel] { fn->work(); };
  return n.work;
}

// What a launch runs, in order: each node's work, a child graph node's embedded nodes in its place. `ranges` (may
// be null) gets each node's [first, end) in *works, by creation position. False for a graph with a cycle.
bool AppendWorks(const Graph* graph, std::vector<std::function<void()>>* works,
                 std::vector<std::pair<size_t, size_t>>* ranges = nullptr) {
  std::vector<size_t> order;
  if (!LaunchOrder(graph, &order)) return false;
  if (ranges != nullptr) ranges->assign(graph->nodes.size(), {0, 0});
  for (size_t i : order) {
    const GraphNode& n = *graph->nodes[i];
    const size_t first = works->size();
    if (n.child) {
      if (!AppendWorks(n.child.get(), works)) return false;
    } else {
      works->push_back(NodeWork(n));
    }
    if (ranges != nullptr) (*ranges)[i] = {first, works->size()};
  }
  return true;
}

// A copy of `n` without its edges and embedded graph.
std::unique_ptr<GraphNode> CopyNode(const GraphNode& n) {
  auto node = std::make_unique<GraphNode>();
  node->type = n.type;
  node->work = n.work;
  node->kernel = n.kernel;
  node->shape = n.shape;
  node->copy = n.copy;
  node->memset = n.memset;
  node->host_fn = n.host_fn;
  node->host_data = n.host_data;
  node->tag = n.tag;
  return node;
}

std::shared_ptr<Graph> Clone(const Graph* graph);

// Copies `from`'s nodes and edges into the empty graph `to` (registering nothing).
void CopyNodes(const Graph* from, Graph* to, bool note_original) {
  std::unordered_map<const GraphNode*, GraphNode*> map;
  for (const auto& n : from->nodes) {
    std::unique_ptr<GraphNode> node = CopyNode(*n);
    if (n->child) node->child = Clone(n->child.get());
    if (note_original) node->original = n.get();
    map[n.get()] = node.get();
    to->nodes.push_back(std::move(node));
  }
  // Edges last: an edge added after its nodes may point to a node created later.
  for (size_t i = 0; i < from->nodes.size(); ++i)
    for (const GraphNode* d : from->nodes[i]->deps) to->nodes[i]->deps.push_back(map.at(d));
}

std::shared_ptr<Graph> Clone(const Graph* graph) {
  auto copy = std::make_shared<Graph>();
  copy->embedded = true;
  CopyNodes(graph, copy.get(), /*note_original=*/false);
  return copy;
}

// Registers `graph`, its nodes and the graphs embedded in it. Caller holds the lock.
void Register(Graph* graph) {
  State().graphs.insert(graph);
  for (const auto& n : graph->nodes) {
    State().owner[n.get()] = graph;
    if (n->child) Register(n->child.get());
  }
}

bool HasNode(const Graph* graph, const GraphNode* node) {
  auto it = State().owner.find(node);
  return it != State().owner.end() && it->second == graph;
}

// The live node `node` (caller holds the lock), or nullptr.
GraphNode* Live(const GraphNode* node) {
  return State().owner.count(node) != 0 ? const_cast<GraphNode*>(node) : nullptr;
}

bool CanAdd(const Graph* graph, const std::vector<GraphNode*>& deps) {
  if (State().graphs.count(graph) == 0 || graph->in_capture) return false;
  for (const GraphNode* d : deps)
    if (!HasNode(graph, d)) return false;
  return true;
}

void RunCopy(const CopyParams& p) {
  const auto* src = static_cast<const unsigned char*>(p.src);
  auto* dst = static_cast<unsigned char*>(p.dst);
  for (size_t z = 0; z < p.depth; ++z) {
    for (size_t y = 0; y < p.height; ++y) {
      const size_t s = ((p.src_z + z) * p.src_ysize + p.src_y + y) * p.src_pitch + p.src_x;
      const size_t d = ((p.dst_z + z) * p.dst_ysize + p.dst_y + y) * p.dst_pitch + p.dst_x;
      std::memmove(dst + d, src + s, p.width);
    }
  }
}

void RunMemset(const MemsetParams& p) {
  auto* dst = static_cast<unsigned char*>(p.dst);
  for (size_t y = 0; y < p.height; ++y)
    for (size_t x = 0; x < p.width; ++x)
      std::memcpy(dst + y * p.pitch + x * p.element_size, &p.value, p.element_size);  // little-endian: low bytes
}

}  // namespace

bool ValidMemset(const MemsetParams& p) {
  if (p.dst == nullptr || p.width == 0 || p.height == 0) return false;
  if (p.element_size != 1 && p.element_size != 2 && p.element_size != 4) return false;
  return p.height == 1 || p.width * p.element_size <= p.pitch;
}

GraphNode* AddMemsetNode(Graph* graph, const MemsetParams& memset, const std::vector<GraphNode*>& deps) {
  if (!ValidMemset(memset)) return nullptr;
  std::lock_guard<std::mutex> lock(State().mu);
  if (!CanAdd(graph, deps)) return nullptr;
  auto node = std::make_unique<GraphNode>();
  node->type = cudaGraphNodeTypeMemset;
  node->memset = memset;
  node->work = [memset] { RunMemset(memset); };
  node->deps = deps;
  return Append(graph, std::move(node));
}

bool GetMemsetNode(const GraphNode* node, MemsetParams* memset) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeMemset) return false;
  *memset = node->memset;
  return true;
}

bool SetMemsetNode(GraphNode* node, const MemsetParams& memset) {
  if (!ValidMemset(memset)) return false;
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeMemset) return false;
  node->memset = memset;
  node->work = [memset] { RunMemset(memset); };
  return true;
}

bool ValidCopy(const CopyParams& p) {
  if (p.src == nullptr || p.dst == nullptr || p.width == 0 || p.height == 0 || p.depth == 0) return false;
  const bool rows = p.height > 1 || p.depth > 1;
  if (rows && (p.src_x + p.width > p.src_pitch || p.dst_x + p.width > p.dst_pitch)) return false;
  if (p.depth > 1 && (p.src_y + p.height > p.src_ysize || p.dst_y + p.height > p.dst_ysize)) return false;
  return true;
}

GraphNode* AddGraphNode(Graph* graph, std::function<void()> work, const std::vector<GraphNode*>& deps,
                        const void* tag) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (!CanAdd(graph, deps)) return nullptr;
  auto node = std::make_unique<GraphNode>();
  node->kernel = NewFunction(std::move(work));
  node->deps = deps;
  node->tag = tag;
  return Append(graph, std::move(node));
}

GraphNode* AddChildGraphNode(Graph* graph, const Graph* child, const std::vector<GraphNode*>& deps) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (!CanAdd(graph, deps) || State().graphs.count(child) == 0 || graph == child || child->in_capture ||
      !child->resources->owned.empty()) {
    return nullptr;
  }
  auto node = std::make_unique<GraphNode>();
  node->type = cudaGraphNodeTypeGraph;
  node->deps = deps;
  node->child = Clone(child);
  Register(node->child.get());
  return Append(graph, std::move(node));
}

GraphNode* AddMemcpyNode(Graph* graph, const CopyParams& copy, const std::vector<GraphNode*>& deps) {
  if (!ValidCopy(copy)) return nullptr;
  std::lock_guard<std::mutex> lock(State().mu);
  if (!CanAdd(graph, deps)) return nullptr;
  auto node = std::make_unique<GraphNode>();
  node->type = cudaGraphNodeTypeMemcpy;
  node->copy = copy;
  node->work = [copy] { RunCopy(copy); };
  node->deps = deps;
  return Append(graph, std::move(node));
}

GraphNode* AddHostNode(Graph* graph, HostFunction fn, void* data, const std::vector<GraphNode*>& deps) {
  if (fn == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(State().mu);
  if (!CanAdd(graph, deps)) return nullptr;
  auto node = std::make_unique<GraphNode>();
  node->type = cudaGraphNodeTypeHost;
  node->host_fn = fn;
  node->host_data = data;
  node->work = [fn, data] { fn(data); };
  node->deps = deps;
  return Append(graph, std::move(node));
}

bool LiveGraphNode(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  return Live(node) != nullptr;
}

Graph* GraphOfNode(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  auto it = State().owner.find(node);
  return it == State().owner.end() ? nullptr : it->second;
}

bool GraphNodeType(const GraphNode* node, cudaGraphNodeType* type) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr) return false;
  *type = node->type;
  return true;
}

bool GetCopyNode(const GraphNode* node, CopyParams* copy) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeMemcpy) return false;
  *copy = node->copy;
  return true;
}

bool SetCopyNode(GraphNode* node, const CopyParams& copy) {
  if (!ValidCopy(copy)) return false;
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeMemcpy) return false;
  node->copy = copy;
  node->work = [copy] { RunCopy(copy); };
  return true;
}

bool GetHostNode(const GraphNode* node, HostFunction* fn, void** data) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeHost) return false;
  *fn = node->host_fn;
  *data = node->host_data;
  return true;
}

bool SetHostNode(GraphNode* node, HostFunction fn, void* data) {
  if (fn == nullptr) return false;
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeHost) return false;
  node->host_fn = fn;
  node->host_data = data;
  node->work = [fn, data] { fn(data); };
  return true;
}

bool GetKernelNode(const GraphNode* node, KernelFunction** fn, KernelShape* shape) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeKernel) return false;
  *fn = node->kernel.get();
  *shape = node->shape;
  return true;
}

cudaError_t SetKernelNode(GraphNode* node, KernelFunction* fn, const KernelShape& shape) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (Live(node) == nullptr || node->type != cudaGraphNodeTypeKernel) return cudaErrorInvalidValue;
  auto it = State().functions.find(fn);
  std::shared_ptr<KernelFunction> live = it == State().functions.end() ? nullptr : it->second.lock();
  if (!live) return cudaErrorInvalidDeviceFunction;
  node->kernel = std::move(live);
  node->shape = shape;
  return cudaSuccess;
}

cudaError_t AddGraphDependencies(Graph* graph, const std::vector<GraphNode*>& from,
                                 const std::vector<GraphNode*>& to) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(graph) == 0 || from.size() != to.size()) return cudaErrorInvalidValue;
  std::set<std::pair<const GraphNode*, const GraphNode*>> adding;
  for (size_t i = 0; i < from.size(); ++i) {
    if (!HasNode(graph, from[i]) || !HasNode(graph, to[i]) || from[i] == to[i]) return cudaErrorInvalidValue;
    const std::vector<GraphNode*>& deps = to[i]->deps;
    if (std::find(deps.begin(), deps.end(), from[i]) != deps.end() || !adding.insert({from[i], to[i]}).second)
      return cudaErrorInvalidValue;
  }
  for (size_t i = 0; i < from.size(); ++i) to[i]->deps.push_back(from[i]);
  return cudaSuccess;
}

cudaError_t DestroyGraphNode(GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  auto it = State().owner.find(node);
  if (it == State().owner.end()) return cudaErrorInvalidValue;
  Graph* graph = it->second;
  State().owner.erase(it);
  if (node->child) Unregister(node->child.get());
  for (const auto& n : graph->nodes) n->deps.erase(std::remove(n->deps.begin(), n->deps.end(), node), n->deps.end());
  graph->nodes.erase(std::find_if(graph->nodes.begin(), graph->nodes.end(),
                                  [node](const std::unique_ptr<GraphNode>& n) { return n.get() == node; }));
  return cudaSuccess;
}

Graph* CloneGraph(const Graph* graph) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(graph) == 0) return nullptr;
  auto* clone = new Graph;
  clone->cloned_from = graph;
  clone->resources = graph->resources;
  CopyNodes(graph, clone, /*note_original=*/true);
  Register(clone);
  return clone;
}

GraphNode* FindInClone(const GraphNode* original, const Graph* clone) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(clone) == 0 || !HasNode(clone->cloned_from, original)) return nullptr;
  for (const auto& n : clone->nodes)
    if (n->original == original) return n.get();
  return nullptr;
}

Graph* ChildGraphOf(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  return Live(node) != nullptr ? node->child.get() : nullptr;
}

const void* GraphNodeTag(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  return node->tag;
}

bool SetGraphNodeWork(Graph* graph, GraphNode* node, std::function<void()> work) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(graph) == 0 || !HasNode(graph, node) || node->type != cudaGraphNodeTypeKernel)
    return false;
  node->kernel = NewFunction(std::move(work));
  return true;
}

GraphExec* InstantiateGraph(const Graph* graph) {
  std::lock_guard<std::mutex> lock(State().mu);
  auto works = std::make_shared<std::vector<std::function<void()>>>();
  std::vector<std::pair<size_t, size_t>> ranges;
  if (!AppendWorks(graph, works.get(), &ranges)) return nullptr;
  auto* exec = new GraphExec;
  for (const auto& n : graph->nodes) exec->nodes.push_back(n.get());
  exec->work_range = std::move(ranges);
  exec->works = std::move(works);
  exec->topology = Topology(graph);
  exec->resources = graph->resources;
  State().execs.insert(exec);
  return exec;
}

cudaError_t UpdateGraphExec(GraphExec* exec, const Graph* graph, GraphNode** error_node, GraphNode** error_from) {
  *error_node = *error_from = nullptr;
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().execs.count(exec) == 0 || State().graphs.count(graph) == 0) return cudaErrorInvalidValue;
  const std::vector<std::vector<size_t>> topology = Topology(graph);
  if (topology.size() != exec->topology.size()) return cudaErrorGraphExecUpdateFailure;
  for (size_t i = 0; i < topology.size(); ++i) {
    if (topology[i] == exec->topology[i]) continue;
    *error_node = graph->nodes[i].get();
    // The edge's other end: a dependency one side has and the other lacks.
    const std::vector<size_t>& a = topology[i];
    const std::vector<size_t>& b = exec->topology[i];
    for (const std::vector<size_t>* side : {&a, &b}) {
      const std::vector<size_t>& other = side == &a ? b : a;
      for (size_t d : *side)
        if (*error_from == nullptr && d < graph->nodes.size() &&
            std::find(other.begin(), other.end(), d) == other.end())
          *error_from = graph->nodes[d].get();
    }
    return cudaErrorGraphExecUpdateFailure;
  }
  // Equal topologies give equal launch orders (the order depends only on edges and creation positions).
  auto works = std::make_shared<std::vector<std::function<void()>>>();
  if (!AppendWorks(graph, works.get())) return cudaErrorGraphExecUpdateFailure;
  std::lock_guard<std::mutex> exec_lock(exec->mu);
  exec->works = std::move(works);
  return cudaSuccess;
}

cudaError_t SetExecChildGraph(GraphExec* exec, const GraphNode* node, const Graph* child) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().execs.count(exec) == 0 || State().graphs.count(child) == 0) return cudaErrorInvalidValue;
  size_t i = 0;
  while (i < exec->nodes.size() && exec->nodes[i] != node) ++i;
  if (i == exec->nodes.size()) return cudaErrorInvalidValue;
  const std::vector<size_t>& entry = exec->topology[i];
  const auto marker = std::find(entry.begin(), entry.end(), SIZE_MAX);
  if (marker == entry.end()) return cudaErrorInvalidValue;  // not a child graph node
  if (std::vector<size_t>(marker, entry.end()) != Embedded(child)) return cudaErrorGraphExecUpdateFailure;
  std::vector<std::function<void()>> embedded;
  if (!AppendWorks(child, &embedded)) return cudaErrorGraphExecUpdateFailure;
  std::lock_guard<std::mutex> exec_lock(exec->mu);
  auto works = std::make_shared<std::vector<std::function<void()>>>(*exec->works);
  const auto at = static_cast<std::ptrdiff_t>(exec->work_range[i].first);
  std::copy(embedded.begin(), embedded.end(), works->begin() + at);
  exec->works = std::move(works);
  return cudaSuccess;
}

std::vector<GraphNode*> GraphNodeDependents(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  std::vector<GraphNode*> dependents;
  auto it = State().owner.find(node);
  if (it == State().owner.end()) return dependents;
  for (const auto& n : it->second->nodes)
    if (std::find(n->deps.begin(), n->deps.end(), node) != n->deps.end()) dependents.push_back(n.get());
  return dependents;
}

bool LiveGraphExec(const GraphExec* exec) {
  std::lock_guard<std::mutex> lock(State().mu);
  return State().execs.count(exec) != 0;
}

void DestroyGraphExec(GraphExec* exec) {
  {
    std::lock_guard<std::mutex> lock(State().mu);
    if (State().execs.erase(exec) == 0) return;
  }
  delete exec;
}

cudaError_t LaunchGraph(GraphExec* exec, Stream* stream) {
  auto done = std::make_shared<LaunchDone>();
  std::shared_ptr<LaunchDone> prev;
  {
    std::lock_guard<std::mutex> lock(exec->mu);
    prev = std::move(exec->last);
    exec->last = done;
  }
  std::shared_ptr<const std::vector<std::function<void()>>> works;
  {
    std::lock_guard<std::mutex> lock(exec->mu);
    works = exec->works;
  }
  auto resources = exec->resources;
  const size_t n = works->size();
  for (size_t i = 0; i < std::max<size_t>(n, 1); ++i) {
    const bool first = i == 0, last = i + 1 >= n;
    cudaError_t status = Enqueue(stream, [works, resources, i, prev = first ? prev : nullptr,
                                          done = last ? done : nullptr] {
      if (prev) prev->Wait();
      if (i < works->size()) (*works)[i]();
      if (done) done->Signal();
    });
    if (status != cudaSuccess) {
      // Nothing more of this launch will be enqueued. Refused at the first node, the launch never happened and
      // the next one waits for the previous launch instead; refused later, its last node will not signal.
      std::lock_guard<std::mutex> lock(exec->mu);
      if (i == 0 && exec->last == done) exec->last = prev;
      if (i != 0) done->Signal();
      return status;
    }
  }
  return cudaSuccess;
}

}  // namespace simgpu
