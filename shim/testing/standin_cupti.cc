// A stand-in libcupti.so.13 (build/tests/cupti/) for tests of the context between ops without a GPU: it keeps the
// one subscriber CUPTI allows and the callbacks enabled for it, and lets the program that loaded it fire driver-API
// and NVTX callback records (standin_cupti_* below) as CUPTI would on a kernel launch, a graph launch or an NVTX
// range: API enter and exit, with the callback data CUPTI documents.
//
// STANDIN_CUPTI=busy: cuptiSubscribe(_v2) answers CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, naming the holder
// "nsight" (another tool holds CUPTI). STANDIN_CUPTI=broken: it answers CUPTI_ERROR_UNKNOWN (as the real libcupti
// does without a GPU).
#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <cstdlib>
#include <cstring>

namespace {

CUpti_CallbackFunc g_callback = nullptr;
void* g_userdata = nullptr;
bool g_driver_enabled[1024] = {};
bool g_nvtx_enabled[64] = {};
int g_subscribes = 0;

const char* Mode() {
  const char* m = getenv("STANDIN_CUPTI");
  return m != nullptr ? m : "ok";
}

CUptiResult DoSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                        CUpti_SubscriberParams* params) {
  ++g_subscribes;
  if (strcmp(Mode(), "broken") == 0) return CUPTI_ERROR_UNKNOWN;
  if (strcmp(Mode(), "busy") == 0 || g_callback != nullptr) {
    if (params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize > 6)
      strcpy(params->oldSubscriberName, "nsight");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  g_callback = callback;
  g_userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_callback);
  return CUPTI_SUCCESS;
}

void FireDriver(CUpti_CallbackId cbid, const char* function, const char* symbol) {
  if (g_callback == nullptr || cbid >= 1024 || !g_driver_enabled[cbid]) return;
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.functionName = function;
  d.symbolName = symbol;
  d.callbackSite = CUPTI_API_ENTER;
  g_callback(g_userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
  d.callbackSite = CUPTI_API_EXIT;
  g_callback(g_userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

void FireNvtx(CUpti_CallbackId cbid, const char* function, const void* params) {
  if (g_callback == nullptr || cbid >= 64 || !g_nvtx_enabled[cbid]) return;
  CUpti_NvtxData d;
  memset(&d, 0, sizeof d);
  d.functionName = function;
  d.functionParams = params;
  g_callback(g_userdata, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  return DoSubscribe(subscriber, callback, userdata, nullptr);
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                       void* userdata, CUpti_SubscriberParams* params) {
  return DoSubscribe(subscriber, callback, userdata, params);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) {
  g_callback = nullptr;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < 1024) {
    g_driver_enabled[cbid] = enable != 0;
  } else if (domain == CUPTI_CB_DOMAIN_NVTX && cbid < 64) {
    g_nvtx_enabled[cbid] = enable != 0;
  } else {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    for (bool& e : g_driver_enabled) e = enable != 0;
  } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
    for (bool& e : g_nvtx_enabled) e = enable != 0;
  } else {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
    default: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
  }
  return CUPTI_SUCCESS;
}

// ---- for the test program: CUPTI's records of its "launches" -----------------------------------------------------
int standin_cupti_subscribes() { return g_subscribes; }
void standin_cupti_launch(const char* kernel) {
  FireDriver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", kernel);
}
void standin_cupti_graph_launch() { FireDriver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", nullptr); }
void standin_cupti_range_push(const char* message) {
  nvtxRangePushA_params p{message};
  FireNvtx(CUPTI_CBID_NVTX_nvtxRangePushA, "nvtxRangePushA", &p);
}
void standin_cupti_domain_range_push(const char* message) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  nvtxDomainRangePushEx_params p;
  p.domain = nullptr;
  p.core.eventAttrib = &a;
  FireNvtx(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &p);
}
void standin_cupti_range_pop() {
  nvtxRangePop_params p{nullptr};
  FireNvtx(CUPTI_CBID_NVTX_nvtxRangePop, "nvtxRangePop", &p);
}

}  // extern "C"
