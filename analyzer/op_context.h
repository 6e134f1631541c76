// What the application ran between an op and the previous captured op on its thread (format.h ContextRecord),
// with the names resolved: the reader (trace_model.h) fills it, reports (report.h, json.h) show it for findings.
#ifndef TTRACE_ANALYZER_OP_CONTEXT_H_
#define TTRACE_ANALYZER_OP_CONTEXT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ttrace::analyzer {

struct OpContext {
  bool valid = false;             // the stream holds a ContextRecord for the op
  uint64_t kernels = 0;           // kernel launches, all of them
  uint64_t unnamed_kernels = 0;   // of those, launches not in kernel_names
  uint64_t graph_launches = 0;
  uint32_t nvtx_depth = 0;        // ranges open at the op (nvtx holds the outermost of them)
  std::vector<std::pair<std::string, uint64_t>> kernel_names;  // name as recorded (mangled), launches; first-launch order
  std::vector<std::string> nvtx;  // range messages, outermost first
};

// One line for reports: "after 12 kernels since the previous captured op on its thread: gemm_kernel x3,
// at::native::vectorized_elementwise_kernel x9; 1 graph launch; in NVTX range forward/layer3/mlp". Kernel names
// are shortened (ShortKernelName); "no kernel" when none ran.
std::string ContextText(const OpContext& context);

// A kernel's symbol name demangled, without template arguments and parameter list:
// "_ZN2at6native29vectorized_elementwise_kernelILi4E...EEviT0_T1_" -> "at::native::vectorized_elementwise_kernel".
// A name that does not demangle is returned as it is.
std::string ShortKernelName(const std::string& name);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_OP_CONTEXT_H_
