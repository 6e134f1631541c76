// The engine's half of the context between ops (cupti_context.h): an op's ContextRecord follows its record from
// the op's own thread, and each name reaches a stream once, before the first ContextRecord of that thread using it.
// Fixed-size buffers on the stack: the op's thread allocates nothing here.
#include <algorithm>
#include <cstring>

#include "shim/capture_engine.h"
#include "shim/cupti_context.h"
#include "shim/runtime.h"

namespace ttrace::shim {

void CaptureEngine::WriteName(uint32_t id) {
  if (id == 0 || id > kMaxNames) return;
  std::atomic<uint64_t>& word = names_written_[id / 64];
  const uint64_t bit = uint64_t{1} << (id % 64);
  if ((word.load(std::memory_order_relaxed) & bit) != 0 || (word.fetch_or(bit) & bit) != 0) return;
  format::NameKind kind;
  const char* text;
  uint32_t len;
  if (!ContextName(id, &kind, &text, &len)) return;
  format::NameRecord n;
  memset(&n, 0, sizeof n);
  n.id = id;
  n.kind = static_cast<uint16_t>(kind);
  n.name_bytes = len;
  PublishRecord(Reserve(false), format::RecordType::kName, &n, sizeof n, text, len);
}

void CaptureEngine::PublishContext(uint64_t seq) {
  ThreadContext c;
  if (!TakeThreadContext(&c)) return;
  const uint32_t nvtx = std::min(c.nvtx_depth, kMaxNvtxEntries);
  for (uint32_t i = 0; i < c.kernel_entries; ++i) WriteName(c.kernel_ids[i]);
  for (uint32_t i = 0; i < nvtx; ++i) WriteName(c.nvtx_ids[i]);
  format::ContextRecord r;
  memset(&r, 0, sizeof r);
  r.seq = seq;
  r.kernels = c.kernels;
  r.unnamed_kernels = c.unnamed_kernels;
  r.graph_launches = c.graph_launches;
  r.kernel_entries = c.kernel_entries;
  r.nvtx_depth = c.nvtx_depth;
  r.nvtx_entries = nvtx;
  r.t_ns = MonotonicNs();
  char payload[kMaxKernelEntries * sizeof(format::ContextKernel) + kMaxNvtxEntries * sizeof(uint32_t)];
  size_t bytes = 0;
  for (uint32_t i = 0; i < c.kernel_entries; ++i) {
    const format::ContextKernel k{c.kernel_ids[i], c.kernel_counts[i]};
    memcpy(payload + bytes, &k, sizeof k);
    bytes += sizeof k;
  }
  memcpy(payload + bytes, c.nvtx_ids, nvtx * sizeof(uint32_t));
  bytes += nvtx * sizeof(uint32_t);
  PublishRecord(Reserve(false), format::RecordType::kContext, &r, sizeof r, payload, bytes);
}

}  // namespace ttrace::shim
