#include "analyzer/op_context.h"

#include <cxxabi.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ttrace::analyzer {

std::string ShortKernelName(const std::string& name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) {
    free(demangled);
    return name;
  }
  const std::string full = demangled;
  free(demangled);
  // Drop what is nested in <...> and (...): template arguments and the parameter list (a return type before the
  // name, "void foo<...>(...)", goes with the first space outside brackets).
  std::string out;
  int depth = 0;
  for (char c : full) {
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      if (depth > 0) --depth;
    } else if (depth == 0) {
      if (c == ' ') {
        out.clear();
      } else {
        out.push_back(c);
      }
    }
  }
  return out.empty() ? full : out;
}

std::string ContextText(const OpContext& c) {
  std::string text;
  if (c.kernels == 0) {
    text = "after no kernel since the previous captured op on its thread";
  } else {
    std::vector<std::string> names;
    for (const auto& [name, count] : c.kernel_names) names.push_back(absl::StrCat(ShortKernelName(name), " x", count));
    if (c.unnamed_kernels > 0) names.push_back(absl::StrCat(c.unnamed_kernels, " more"));
    text = absl::StrCat("after ", c.kernels, c.kernels == 1 ? " kernel" : " kernels",
                        " since the previous captured op on its thread: ", absl::StrJoin(names, ", "));
  }
  if (c.graph_launches > 0)
    absl::StrAppend(&text, "; ", c.graph_launches, c.graph_launches == 1 ? " graph launch" : " graph launches");
  if (c.nvtx_depth > 0) {
    absl::StrAppend(&text, "; in NVTX range ", absl::StrJoin(c.nvtx, "/"));
    if (c.nvtx_depth > c.nvtx.size()) absl::StrAppend(&text, "/... (", c.nvtx_depth, " deep)");
  }
  return text;
}

}  // namespace ttrace::analyzer
