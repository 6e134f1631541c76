// The shim's shadow of cuDNN backend descriptors (DESIGN.md §5): cuDNN's getters do not answer for variant packs
// (UNIQUE_IDS, DATA_POINTERS return NOT_SUPPORTED), so the attributes a program sets are kept here, as it sets
// them, and the graph of an execution plan is resolved once, when the plan is finalized.
//
// Who calls: the backend interceptors (cudnn_backend.cc), after the vendor call succeeded. Create / Set / Finalize /
// Got / Destroy are set-up calls and may allocate; Lookup is on the hot path of cudnnBackendExecute and allocates
// nothing (it copies a shared pointer and at most kMaxPackEntries uid/pointer pairs under a shared lock).
//
// Ownership: a descriptor's shadow lives while the program's descriptor does, and longer while a descriptor that
// references it (an operation its tensors, a plan its graph) needs it: cuDNN lets a program destroy a tensor
// descriptor once the operation that uses it is finalized. Bounds: at most kMaxDescriptors live shadows and
// kMaxShadowBytes of attribute values; past them new descriptors are not shadowed and graphs that need them are
// recorded as unknown (format.h: kGraphUnknown). Thread-safe.
#ifndef TTRACE_SHIM_CUDNN_SHADOW_H_
#define TTRACE_SHIM_CUDNN_SHADOW_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ttrace/format.h"

namespace ttrace::shim::cudnn {

// An execution plan's graph, resolved at its finalization: tensors (ptr and value filled per execution) and ops.
struct PlanGraph {
  std::vector<format::GraphTensor> tensors;
  std::vector<format::GraphOp> ops;
  std::vector<bool> read, written;  // per tensor: some operation reads / writes it
};

inline constexpr int kMaxPackEntries = 64;
struct PackView {
  int count = 0;  // -1: the pack is not shadowed (or holds more than kMaxPackEntries)
  int64_t uids[kMaxPackEntries];
  void* ptrs[kMaxPackEntries];
  void* workspace = nullptr;
};

inline constexpr size_t kMaxDescriptors = 1 << 20;
inline constexpr size_t kMaxShadowBytes = size_t{64} << 20;

void Created(const void* desc, int32_t type);
// A successful SetAttribute: `count` elements of attribute type `type` (cudnnBackendAttributeType_t).
void Set(const void* desc, int32_t name, int32_t type, int64_t count, const void* values);
void Finalized(const void* desc);
// A successful GetAttribute that filled `count` descriptors the program created (heuristics results, an engine
// config's engine): they inherit `desc`'s operation graph.
void Got(const void* desc, int32_t type, int64_t count, const void* values);
void Destroyed(const void* desc);

// The plan's graph (null when it is not known) and the pack's uids and pointers. No allocation.
std::shared_ptr<const PlanGraph> PlanOf(const void* plan);
void PackOf(const void* pack, PackView* out);

// Resolves the operation graph reachable from a descriptor (a plan, engine config, engine, heuristics or the
// graph itself). Tests use it; Finalized() calls it for plans.
std::shared_ptr<const PlanGraph> ResolveGraph(const void* desc, std::string* why);

}  // namespace ttrace::shim::cudnn

#endif  // TTRACE_SHIM_CUDNN_SHADOW_H_
