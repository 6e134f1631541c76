// Stream capture and graphs (semantics in simgpu.h). All capture state is guarded by one process-wide lock;
// capture is rare and short next to the work it records, and one lock makes joins across streams, events and
// threads simple to get right. Stream operations pay for none of it while no capture is active (an atomic count).
//
// A graph is a list of nodes in capture order, each a closure plus the nodes it depends on. Capture order is a
// topological order, so a launch can run the nodes one after another on the launch stream: one valid execution
// of the graph, the one a GPU gives when its nodes do not overlap.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/core/stream_internal.h"

namespace simgpu {

struct GraphNode {
  std::function<void()> work;
  std::vector<GraphNode*> deps;
  const void* tag = nullptr;     // AddGraphNode's: who put the node there (kept by clones)
  std::shared_ptr<Graph> child;  // a child graph node's embedded graph (its work is the child's nodes)
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
  std::vector<size_t> first_work;             // node i's work: works[first_work[i], first_work[i + 1])
  std::shared_ptr<GraphResources> resources;
  std::mutex mu;
  std::shared_ptr<LaunchDone> last;  // the latest launch; null before the first
};

namespace {

struct CaptureState {
  std::mutex mu;
  std::vector<std::shared_ptr<Capture>> active;
  std::unordered_set<const Graph*> graphs;
  std::unordered_set<const GraphExec*> execs;
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

// Forgets `graph` and the graphs embedded in it (their nodes own them).
void Unregister(const Graph* graph) {
  State().graphs.erase(graph);
  for (const auto& n : graph->nodes)
    if (n->child) Unregister(n->child.get());
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
    node->work = std::move(*work);
    node->deps = stream->capture_deps;
    stream->capture_deps = {node.get()};
    c->graph->nodes.push_back(std::move(node));
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

// For each node of graph->nodes (a topological order): the positions of its dependencies, then, for a child graph
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

// What a launch runs, in order: each node's work, a child graph node's embedded nodes in its place.
void AppendWorks(const Graph* graph, std::vector<std::function<void()>>* works) {
  for (const auto& n : graph->nodes) {
    if (n->child) {
      AppendWorks(n->child.get(), works);
    } else {
      works->push_back(n->work);
    }
  }
}

std::shared_ptr<Graph> Clone(const Graph* graph) {
  auto copy = std::make_shared<Graph>();
  copy->embedded = true;
  std::unordered_map<const GraphNode*, GraphNode*> to;
  for (const auto& n : graph->nodes) {
    auto node = std::make_unique<GraphNode>();
    node->work = n->work;
    node->tag = n->tag;
    for (const GraphNode* d : n->deps) node->deps.push_back(to.at(d));
    if (n->child) node->child = Clone(n->child.get());
    to[n.get()] = node.get();
    copy->nodes.push_back(std::move(node));
  }
  return copy;
}

void Register(const Graph* graph) {
  State().graphs.insert(graph);
  for (const auto& n : graph->nodes)
    if (n->child) Register(n->child.get());
}

bool HasNode(const Graph* graph, const GraphNode* node) {
  for (const auto& n : graph->nodes)
    if (n.get() == node) return true;
  return false;
}

}  // namespace

GraphNode* AddGraphNode(Graph* graph, std::function<void()> work, const std::vector<GraphNode*>& deps,
                        const void* tag) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(graph) == 0 || graph->in_capture) return nullptr;
  for (const GraphNode* d : deps)
    if (!HasNode(graph, d)) return nullptr;
  auto node = std::make_unique<GraphNode>();
  node->work = std::move(work);
  node->deps = deps;
  node->tag = tag;
  graph->nodes.push_back(std::move(node));
  return graph->nodes.back().get();
}

GraphNode* AddChildGraphNode(Graph* graph, const Graph* child, const std::vector<GraphNode*>& deps) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(graph) == 0 || State().graphs.count(child) == 0 || graph == child || graph->in_capture ||
      child->in_capture || !child->resources->owned.empty()) {
    return nullptr;
  }
  for (const GraphNode* d : deps)
    if (!HasNode(graph, d)) return nullptr;
  auto node = std::make_unique<GraphNode>();
  node->deps = deps;
  node->child = Clone(child);
  Register(node->child.get());
  graph->nodes.push_back(std::move(node));
  return graph->nodes.back().get();
}

Graph* ChildGraphOf(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  for (const Graph* g : State().graphs)
    for (const auto& n : g->nodes)
      if (n.get() == node) return n->child.get();
  return nullptr;
}

const void* GraphNodeTag(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  return node->tag;
}

bool SetGraphNodeWork(Graph* graph, GraphNode* node, std::function<void()> work) {
  std::lock_guard<std::mutex> lock(State().mu);
  if (State().graphs.count(graph) == 0 || !HasNode(graph, node)) return false;
  node->work = std::move(work);
  return true;
}

GraphExec* InstantiateGraph(const Graph* graph) {
  auto* exec = new GraphExec;
  std::lock_guard<std::mutex> lock(State().mu);
  auto works = std::make_shared<std::vector<std::function<void()>>>();
  for (const auto& n : graph->nodes) {
    exec->nodes.push_back(n.get());
    exec->first_work.push_back(works->size());
    if (n->child) {
      AppendWorks(n->child.get(), works.get());
    } else {
      works->push_back(n->work);
    }
  }
  exec->first_work.push_back(works->size());
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
        if (*error_from == nullptr && std::find(other.begin(), other.end(), d) == other.end())
          *error_from = graph->nodes[d].get();
    }
    return cudaErrorGraphExecUpdateFailure;
  }
  auto works = std::make_shared<std::vector<std::function<void()>>>();
  AppendWorks(graph, works.get());
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
  AppendWorks(child, &embedded);
  std::lock_guard<std::mutex> exec_lock(exec->mu);
  auto works = std::make_shared<std::vector<std::function<void()>>>(*exec->works);
  std::copy(embedded.begin(), embedded.end(), works->begin() + static_cast<std::ptrdiff_t>(exec->first_work[i]));
  exec->works = std::move(works);
  return cudaSuccess;
}

std::vector<GraphNode*> GraphNodeDependents(const GraphNode* node) {
  std::lock_guard<std::mutex> lock(State().mu);
  std::vector<GraphNode*> dependents;
  for (const Graph* g : State().graphs) {
    if (!HasNode(g, node)) continue;
    for (const auto& n : g->nodes)
      if (std::find(n->deps.begin(), n->deps.end(), node) != n->deps.end()) dependents.push_back(n.get());
  }
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
