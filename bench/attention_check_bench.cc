// Attention check cost: writes a trace of one cuDNN composite causal attention graph (cudnn-frontend's lowering:
// Q·Kᵀ, scale, causal mask, softmax with Stats, P·V; BF16 Q, K, V, O [b, h, s, d], FP32 Stats) whose outputs a
// correct device could produce (test_util.h: CausalAttentionOp), for `ttrace check` to be timed and its peak
// memory measured on (/usr/bin/time -v; --memory-limit). Usage:
//   attention_check_bench write DIR B H S D
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "analyzer/test_util.h"

namespace {

namespace testing = ttrace::analyzer::testing;

int Usage() {
  fprintf(stderr, "usage: attention_check_bench write DIR B H S D\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 || std::string(argv[1]) != "write") return Usage();
  const std::string dir = argv[2];
  const int64_t b = atoll(argv[3]), h = atoll(argv[4]), s = atoll(argv[5]), d = atoll(argv[6]);
  if (b < 1 || h < 1 || s < 1 || d < 1) return Usage();
  mkdir(dir.c_str(), 0755);
  {
    testing::StreamBuilder w(dir + "/rank-0.ttr", 0, 1, "attention-bench", 4 << 20);
    w.Graph(testing::CausalAttentionOp(0, b, h, s, d, 7));
  }
  printf("wrote %s: one causal attention b=%lld h=%lld s=%lld d=%lld (%lld scores)\n", dir.c_str(),
         static_cast<long long>(b), static_cast<long long>(h), static_cast<long long>(s), static_cast<long long>(d),
         static_cast<long long>(b * h * s * s));
  return 0;
}
