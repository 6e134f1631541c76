// cuDNN graph check cost: writes a trace of one graph whose outputs a correct device could produce, for `ttrace
// check` to be timed and its peak memory measured on (/usr/bin/time -v; --memory-limit). Usage:
//   graph_check_bench attention DIR B H S D   cudnn-frontend's composite causal attention (Q·Kᵀ, scale, causal
//                                             mask, softmax with Stats, P·V; BF16 Q, K, V, O [b, h, s, d], FP32
//                                             Stats; test_util.h: CausalAttentionOp)
//   graph_check_bench conv DIR N C H W K      cudnn-frontend's CSBR (conv.fused): y = relu(conv3x3(x, w)·scale +
//                                             bias), pad 1, FP16 x [N, C, H, W], w [K, C, 3, 3] and y, virtual FP32
//                                             intermediates; y the FP64 reference rounded to FP16 (test_util.h:
//                                             CsbrOp)
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "analyzer/test_util.h"

namespace {

namespace testing = ttrace::analyzer::testing;

int Usage() {
  fprintf(stderr, "usage: graph_check_bench attention DIR B H S D | conv DIR N C H W K\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string mode = argv[1], dir = argv[2];
  std::vector<int64_t> a;
  for (int i = 3; i < argc; ++i) a.push_back(atoll(argv[i]));
  if (std::any_of(a.begin(), a.end(), [](int64_t x) { return x < 1; })) return Usage();
  mkdir(dir.c_str(), 0755);
  testing::StreamBuilder w(dir + "/rank-0.ttr", 0, 1, "graph-bench", 4 << 20);
  if (mode == "attention" && a.size() == 4) {
    w.Graph(testing::CausalAttentionOp(0, a[0], a[1], a[2], a[3], 7));
    printf("wrote %s: one causal attention b=%lld h=%lld s=%lld d=%lld (%lld scores)\n", dir.c_str(),
           static_cast<long long>(a[0]), static_cast<long long>(a[1]), static_cast<long long>(a[2]),
           static_cast<long long>(a[3]), static_cast<long long>(a[0] * a[1] * a[2] * a[2]));
  } else if (mode == "conv" && a.size() == 5) {
    w.Graph(testing::CsbrOp(0, a[0], a[1], a[2], a[3], a[4]));
    printf("wrote %s: one CSBR n=%lld c=%lld h=%lld w=%lld k=%lld\n", dir.c_str(), static_cast<long long>(a[0]),
           static_cast<long long>(a[1]), static_cast<long long>(a[2]), static_cast<long long>(a[3]),
           static_cast<long long>(a[4]));
  } else {
    return Usage();
  }
  return 0;
}
