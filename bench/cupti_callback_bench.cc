// cupti_callback_bench: what the shim's CUPTI callback (shim/cupti_context.h) costs the application's launch path.
// It feeds ContextCallback the records CUPTI passes for a kernel launch (API enter and exit), cycling through
// `names` distinct kernel names of PyTorch-like length (~110 bytes), and takes the thread's context every
// `per_op` launches as an op's publication would. Prints ns per launch (enter + exit callbacks; thread CPU time,
// best of 5), and the same for an NVTX push + pop pair.
//
//   cupti_callback_bench [--launches N] [--names K] [--per-op P]
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <generated_nvtx_meta.h>

#include "shim/cupti_context.h"

namespace {

double ThreadNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  long launches = 2000000, names = 12, per_op = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--launches")) launches = atol(argv[i + 1]);
    if (!strcmp(argv[i], "--names")) names = atol(argv[i + 1]);
    if (!strcmp(argv[i], "--per-op")) per_op = atol(argv[i + 1]);
  }
  std::vector<std::string> symbols;
  for (long k = 0; k < names; ++k)
    symbols.push_back("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEE" +
                      std::to_string(k) + "EEviT0_T1_");
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.functionName = "cuLaunchKernel";
  ttrace::shim::ThreadContext taken;
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = ThreadNs();
    for (long i = 0; i < launches; ++i) {
      d.symbolName = symbols[i % names].c_str();
      d.callbackSite = CUPTI_API_ENTER;
      ttrace::shim::ContextCallback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
      d.callbackSite = CUPTI_API_EXIT;
      ttrace::shim::ContextCallback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
      if ((i + 1) % per_op == 0) ttrace::shim::TakeThreadContext(&taken);
    }
    best = std::min(best, (ThreadNs() - t0) / launches);
  }
  double best_nvtx = 1e300;
  CUpti_NvtxData n;
  memset(&n, 0, sizeof n);
  nvtxRangePushA_params push{"forward/layer3/mlp"};
  nvtxRangePop_params pop{nullptr};
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = ThreadNs();
    for (long i = 0; i < launches; ++i) {
      n.functionParams = &push;
      ttrace::shim::ContextCallback(nullptr, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA, &n);
      n.functionParams = &pop;
      ttrace::shim::ContextCallback(nullptr, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop, &n);
    }
    best_nvtx = std::min(best_nvtx, (ThreadNs() - t0) / launches);
  }
  printf("launch_ns=%.1f (names=%ld, name bytes=%zu, context taken every %ld launches) nvtx_push_pop_ns=%.1f\n", best,
         names, symbols[0].size(), per_op, best_nvtx);
  return 0;
}
