// Context between ops: which kernels, CUDA graph launches and NVTX ranges the application ran between two captured
// ops, from CUPTI callbacks (format.h ContextRecord; docs/format.md "Context").
//
// Why CUPTI: every CUDA library carries its own static cudart, so interposing cudaLaunchKernel sees none of their
// kernels (DESIGN.md §5); CUPTI's driver-API callbacks see every launch in the process, on the launching thread.
//
// Start. StartContext() runs once, when the engine starts (the first recorded call, never in a constructor), and
// only with TTRACE_CONTEXT on: dlopen libcupti (libcupti.so.13, .12, libcupti.so), subscribe (cuptiSubscribe_v2
// with the subscriber name "ttrace" where CUPTI has it, so another tool's error names us), enable the kernel and
// graph launch callbacks of the driver-API domain and the NVTX domain. No libcupti: nothing, silently (verbose 1
// says so). Any CUPTI error, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another tool, Nsight or Kineto, holds
// CUPTI) included: the subscription is dropped, capture goes on without context, and one line on stderr says so
// once per job (log.h LogOncePerJob with the trace directory `job_dir`, or per host when there is none: the first
// rank to meet a problem says it, ranks that meet the same one stay silent; without a GPU every rank meets it). The shim never unsubscribes (a
// process-lifetime guest, like the engine).
// NVTX callbacks need NVTX_INJECTION64_PATH to name libcupti before the application's first NVTX call (NVTX's
// own rule, README "Context between ops"); without it ops carry kernels and graph launches only. The shim does not
// set it: changing the environment of a running multi-threaded process is not a guest's business.
//
// The callback (ContextCallback) runs on the application's launch path: no lock, no allocation, no system call.
// Kernel names are interned into a bounded process-wide table (kNameSlots, kNameArenaBytes of static storage: name
// -> id, lock-free lookup, a spin lock only to add a name); per-thread counters hold the launches since the
// thread's previous captured op (kMaxKernelEntries distinct names, the rest counted as unnamed) and the thread's
// NVTX range stack (kMaxNvtxEntries deep recorded, deeper counted). Launches made inside an intercepted call (a
// library's own kernels, the shim's own work) are not counted: they belong to that op, not between ops.
//
// Taking. The engine calls TakeThreadContext() as it publishes an op's record, on the op's thread: the counts are
// handed over and reset, the NVTX stack stays; the engine writes each name's NameRecord before its first use.
//
// Tests feed ContextCallback synthetic CUpti_CallbackData / CUpti_NvtxData records directly (the seam); a stand-in
// libcupti (shim/testing) drives StartContext's path end to end.
#ifndef TTRACE_SHIM_CUPTI_CONTEXT_H_
#define TTRACE_SHIM_CUPTI_CONTEXT_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ttrace/format.h"

namespace ttrace::shim {

inline constexpr uint32_t kMaxKernelEntries = 16;
inline constexpr uint32_t kMaxNvtxEntries = 16;
inline constexpr uint32_t kNameSlots = 4096;        // hash slots
inline constexpr uint32_t kMaxNames = kNameSlots / 2;  // ids 1 .. kMaxNames
inline constexpr size_t kNameArenaBytes = 1 << 20;  // name bytes in all

// What a thread ran since its previous captured op.
struct ThreadContext {
  uint64_t kernels;
  uint64_t unnamed_kernels;
  uint64_t graph_launches;
  uint32_t kernel_entries;
  uint32_t nvtx_depth;
  uint32_t kernel_ids[kMaxKernelEntries];
  uint32_t kernel_counts[kMaxKernelEntries];
  uint32_t nvtx_ids[kMaxNvtxEntries];  // the outermost min(nvtx_depth, kMaxNvtxEntries) ranges
};

// The CUPTI callback (CUpti_CallbackFunc). Any thread; only API-enter records of the enabled callback ids count.
void CUPTIAPI ContextCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* cbdata);

// Dlopens libcupti and subscribes (see the header comment). Idempotent; the engine's starting thread. `verbose`:
// TTRACE_VERBOSE. True when callbacks are enabled.
bool StartContext(bool verbose, const std::string& job_dir);
// True once StartContext subscribed: ops carry context records.
bool ContextActive();

// Copies the calling thread's context into *out and resets its counts (the NVTX stack stays). False, and nothing
// copied, when there is nothing to say: no launch since the last take and no NVTX range open. Any thread.
bool TakeThreadContext(ThreadContext* out);

// The interned name `id` (kind and text, len bytes, not NUL-terminated); false for an unknown id. Any thread.
bool ContextName(uint32_t id, format::NameKind* kind, const char** text, uint32_t* len);

// Interns `name` (up to format::kMaxNameBytes bytes of it); 0 when the table is full. Exposed for tests.
uint32_t InternName(format::NameKind kind, const char* name);

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_CUPTI_CONTEXT_H_
