// Static storage only (the name table, its arena, the per-thread counters are zero-initialized): the callback
// allocates nothing and takes no lock to count a launch; adding a name takes a spin lock held for a copy of at most
// kMaxNameBytes. libcupti is reached through dlopen/dlsym only: libttrace.so keeps no DT_NEEDED on CUDA libraries.
#include "shim/cupti_context.h"

#include <dlfcn.h>
#include <generated_nvtx_meta.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "shim/interception.h"
#include "shim/log.h"
#include "shim/options.h"

namespace ttrace::shim {
namespace {

struct NameEntry {
  uint32_t offset;
  uint16_t len;
  uint16_t kind;
};

char g_arena[kNameArenaBytes];
// "= {}": constant-initialized, so no loop runs at load even unoptimized (ShimExportTest.NoConstructorsOfOurs).
std::atomic<uint32_t> g_slot_id[kNameSlots] = {};  // 0: empty; published last (release)
uint32_t g_slot_hash[kNameSlots];
NameEntry g_names[kMaxNames + 1];              // by id, 1-based
std::atomic<uint32_t> g_name_count{0};         // ids handed out (acquire: entries up to it are written)
size_t g_arena_used = 0;                       // under g_insert
std::atomic_flag g_insert = ATOMIC_FLAG_INIT;
std::atomic<bool> g_active{false};
// Set by the first callback that counts: until then every op's TakeThreadContext is one relaxed load (no TLS).
std::atomic<bool> g_fired{false};

void Fired() {
  if (!g_fired.load(std::memory_order_relaxed)) g_fired.store(true, std::memory_order_relaxed);
}

thread_local ThreadContext t_context;

// Per thread, the ids of the kernel names last seen at each symbol address (direct-mapped): a launch of a known
// kernel costs a compare of its name with the interned one instead of a hash of it. The compare keeps it exact
// whatever the driver does with the address (a module unloaded and another loaded there).
struct SymbolCacheEntry {
  const char* symbol;
  uint32_t id;
};
constexpr uint32_t kSymbolCache = 64;
thread_local SymbolCacheEntry t_symbols[kSymbolCache];

uint32_t Hash(format::NameKind kind, const char* s, size_t n) {
  uint32_t h = 2166136261u ^ static_cast<uint32_t>(kind);
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 16777619u;
  return h;
}

bool Matches(uint32_t id, format::NameKind kind, const char* s, size_t n) {
  const NameEntry& e = g_names[id];
  return e.kind == static_cast<uint16_t>(kind) && e.len == n && memcmp(g_arena + e.offset, s, n) == 0;
}

// The slot holding (kind, s) or the first empty slot of its probe sequence (*id 0).
uint32_t Probe(format::NameKind kind, const char* s, size_t n, uint32_t hash, uint32_t* id) {
  uint32_t i = hash & (kNameSlots - 1);
  for (uint32_t step = 0; step < kNameSlots; ++step, i = (i + 1) & (kNameSlots - 1)) {
    *id = g_slot_id[i].load(std::memory_order_acquire);
    if (*id == 0 || (g_slot_hash[i] == hash && Matches(*id, kind, s, n))) return i;
  }
  *id = 0;
  return kNameSlots;
}

uint32_t KernelId(const char* name) {
  SymbolCacheEntry& e = t_symbols[(reinterpret_cast<uintptr_t>(name) >> 4) % kSymbolCache];
  if (e.symbol == name && e.id != 0) {
    const NameEntry& n = g_names[e.id];
    if (memcmp(g_arena + n.offset, name, n.len) == 0 && (n.len == format::kMaxNameBytes || name[n.len] == '\0'))
      return e.id;
  }
  const uint32_t id = InternName(format::NameKind::kKernel, name);
  e.symbol = name;
  e.id = id;
  return id;
}

void CountKernel(const char* name) {
  Fired();
  ThreadContext& c = t_context;
  ++c.kernels;
  const uint32_t id = name != nullptr ? KernelId(name) : 0;
  if (id != 0) {
    for (uint32_t i = 0; i < c.kernel_entries; ++i) {
      if (c.kernel_ids[i] == id) {
        ++c.kernel_counts[i];
        return;
      }
    }
    if (c.kernel_entries < kMaxKernelEntries) {
      c.kernel_ids[c.kernel_entries] = id;
      c.kernel_counts[c.kernel_entries++] = 1;
      return;
    }
  }
  ++c.unnamed_kernels;
}

void PushRange(const char* name) {
  Fired();
  ThreadContext& c = t_context;
  if (c.nvtx_depth < kMaxNvtxEntries) c.nvtx_ids[c.nvtx_depth] = InternName(format::NameKind::kNvtxRange, name);
  ++c.nvtx_depth;
}

void PopRange() {
  ThreadContext& c = t_context;
  if (c.nvtx_depth > 0) --c.nvtx_depth;
}

const char* MessageOf(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "(no message)";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii != nullptr ? a->message.ascii : "(no message)";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return "(wide-character message)";
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return "(registered string)";
    default:
      return "(no message)";
  }
}

bool IsKernelLaunch(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}
bool IsGraphLaunch(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

constexpr CUpti_CallbackId kDriverCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,            CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};
constexpr CUpti_CallbackId kNvtxCallbacks[] = {
    CUPTI_CBID_NVTX_nvtxRangePushA,         CUPTI_CBID_NVTX_nvtxRangePushW,  CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxRangePop,           CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    CUPTI_CBID_NVTX_nvtxDomainRangePop,
};

using SubscribeFn = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
using SubscribeV2Fn = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*);
using UnsubscribeFn = CUptiResult (*)(CUpti_SubscriberHandle);
using EnableCallbackFn = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
using ResultStringFn = CUptiResult (*)(CUptiResult, const char**);

bool Subscribe(bool verbose, const std::string& job_dir) {
  const char* soname = nullptr;
  void* lib = nullptr;
  for (const char* name : kCuptiSonames) {
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
      soname = name;
      break;
    }
  }
  if (lib == nullptr) {
    if (verbose) Log("no libcupti found: recording without the context between ops (kernels, NVTX ranges)");
    return false;
  }
  auto subscribe = reinterpret_cast<SubscribeFn>(RealDlsym(lib, "cuptiSubscribe"));
  auto subscribe_v2 = reinterpret_cast<SubscribeV2Fn>(RealDlsym(lib, "cuptiSubscribe_v2"));
  auto unsubscribe = reinterpret_cast<UnsubscribeFn>(RealDlsym(lib, "cuptiUnsubscribe"));
  auto enable = reinterpret_cast<EnableCallbackFn>(RealDlsym(lib, "cuptiEnableCallback"));
  auto result_string = reinterpret_cast<ResultStringFn>(RealDlsym(lib, "cuptiGetResultString"));
  auto text = [&](CUptiResult r) {
    const char* s = nullptr;
    if (result_string == nullptr || result_string(r, &s) != CUPTI_SUCCESS || s == nullptr) s = "unknown CUPTI error";
    return s;
  };
  if ((subscribe == nullptr && subscribe_v2 == nullptr) || enable == nullptr) {
    LogOncePerJob(job_dir, "%s lacks cuptiSubscribe or cuptiEnableCallback: recording without the context between ops", soname);
    return false;
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUptiResult r;
  if (subscribe_v2 != nullptr) {
    CUpti_SubscriberParams params = {};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "ttrace";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof holder;
    r = subscribe_v2(&subscriber, ContextCallback, nullptr, &params);
    holder[sizeof holder - 1] = '\0';
  } else {
    r = subscribe(&subscriber, ContextCallback, nullptr);
  }
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    LogOncePerJob(job_dir, "another tool%s%s holds CUPTI (%s): recording without the context between ops (kernels, NVTX ranges); "
        "TTRACE_CONTEXT=0 leaves CUPTI alone",
        holder[0] != '\0' ? " " : "", holder, text(r));
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    LogOncePerJob(job_dir, "CUPTI (%s) cannot be used (cuptiSubscribe: %s): recording without the context between ops (kernels, "
        "NVTX ranges); TTRACE_CONTEXT=0 leaves CUPTI alone",
        soname, text(r));
    return false;
  }
  for (CUpti_CallbackId cbid : kDriverCallbacks) r = r != CUPTI_SUCCESS ? r : enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  for (CUpti_CallbackId cbid : kNvtxCallbacks) r = r != CUPTI_SUCCESS ? r : enable(1, subscriber, CUPTI_CB_DOMAIN_NVTX, cbid);
  if (r != CUPTI_SUCCESS) {
    if (unsubscribe != nullptr) unsubscribe(subscriber);
    LogOncePerJob(job_dir, "CUPTI (%s) cannot be used (cuptiEnableCallback: %s): recording without the context between ops",
        soname, text(r));
    return false;
  }
  if (verbose) Log("recording the context between ops through %s", soname);
  return true;
}

}  // namespace

uint32_t InternName(format::NameKind kind, const char* name) {
  const size_t n = strnlen(name, format::kMaxNameBytes);
  const uint32_t hash = Hash(kind, name, n);
  uint32_t id;
  Probe(kind, name, n, hash, &id);
  if (id != 0) return id;
  while (g_insert.test_and_set(std::memory_order_acquire)) {
  }
  const uint32_t slot = Probe(kind, name, n, hash, &id);
  const uint32_t count = g_name_count.load(std::memory_order_relaxed);
  if (id == 0 && slot < kNameSlots && count < kMaxNames && g_arena_used + n <= kNameArenaBytes) {
    id = count + 1;
    NameEntry& e = g_names[id];
    memcpy(g_arena + g_arena_used, name, n);
    e.offset = static_cast<uint32_t>(g_arena_used);
    e.len = static_cast<uint16_t>(n);
    e.kind = static_cast<uint16_t>(kind);
    g_arena_used += n;
    g_slot_hash[slot] = hash;
    g_name_count.store(id, std::memory_order_release);
    g_slot_id[slot].store(id, std::memory_order_release);
  }
  g_insert.clear(std::memory_order_release);
  return id;
}

void CUPTIAPI ContextCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* cbdata) {
  if (cbdata == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* d = static_cast<const CUpti_CallbackData*>(cbdata);
    if (d->callbackSite != CUPTI_API_ENTER || InsideInterceptor()) return;
    if (IsKernelLaunch(cbid)) {
      CountKernel(d->symbolName);
    } else if (IsGraphLaunch(cbid)) {
      Fired();
      ++t_context.graph_launches;
    }
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_NVTX) return;
  const void* params = static_cast<const CUpti_NvtxData*>(cbdata)->functionParams;
  if (params == nullptr) return;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const char* m = static_cast<const nvtxRangePushA_params*>(params)->message;
      PushRange(m != nullptr ? m : "(no message)");
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      PushRange("(wide-character message)");
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      PushRange(MessageOf(static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib));
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      PushRange(MessageOf(static_cast<const nvtxDomainRangePushEx_params*>(params)->core.eventAttrib));
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      PopRange();
      break;
    default:
      break;
  }
}

bool StartContext(bool verbose, const std::string& job_dir) {
  static std::once_flag once;
  std::call_once(once, [&] { g_active.store(Subscribe(verbose, job_dir), std::memory_order_release); });
  return g_active.load(std::memory_order_acquire);
}

bool ContextActive() { return g_active.load(std::memory_order_acquire); }

bool TakeThreadContext(ThreadContext* out) {
  // Relaxed: a launch counted on this thread happened before this call on this thread.
  if (!g_fired.load(std::memory_order_relaxed)) return false;
  ThreadContext& c = t_context;
  if (c.kernels == 0 && c.graph_launches == 0 && c.nvtx_depth == 0) return false;
  *out = c;
  c.kernels = c.unnamed_kernels = c.graph_launches = 0;
  c.kernel_entries = 0;
  return true;
}

bool ContextName(uint32_t id, format::NameKind* kind, const char** text, uint32_t* len) {
  if (id == 0 || id > g_name_count.load(std::memory_order_acquire)) return false;
  const NameEntry& e = g_names[id];
  *kind = static_cast<format::NameKind>(e.kind);
  *text = g_arena + e.offset;
  *len = e.len;
  return true;
}

}  // namespace ttrace::shim
