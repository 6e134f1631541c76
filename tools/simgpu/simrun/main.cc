// simrun: see simrun.h.
#include <cstdio>

#include "tools/simgpu/simrun/simrun.h"

int main(int argc, char** argv) {
  simgpu::simrun::Options options;
  bool help = false;
  std::string error;
  if (!simgpu::simrun::ParseArgs(argc, argv, &options, &help, &error)) {
    std::fprintf(stderr, "simrun: %s\n%s", error.c_str(), simgpu::simrun::Usage().c_str());
    return 2;
  }
  if (help) {
    std::fputs(simgpu::simrun::Usage().c_str(), stdout);
    return 0;
  }
  return simgpu::simrun::Run(options, stderr).exit_code;
}
