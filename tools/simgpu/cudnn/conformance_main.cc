// Conformance transcript driver (conformance.h): prints the transcript to stdout.
#include <cstdarg>
#include <cstdio>
#include <string>

#include "tools/simgpu/cudnn/conformance.h"

namespace simgpu::cudnn::conformance {

void Section(const char* name) { std::printf("== %s\n", name); }

void Line(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
}

std::string Ints(const int* values, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out;
}

std::string Int64s(const int64_t* values, int64_t n) {
  std::string out;
  for (int64_t i = 0; i < n; ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out;
}

void Status(const char* call, int status) { std::printf("%s -> %d\n", call, status); }

}  // namespace simgpu::cudnn::conformance

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  simgpu::cudnn::conformance::RunLegacy();
  simgpu::cudnn::conformance::RunBackend();
  return 0;
}
