// GEMM check cost: writes a trace of GEMMs whose outputs a correct device could produce, for `ttrace check` (and
// `ttrace dump`, the cost of reading the trace) to be timed on. Usage:
//   gemm_check_bench write DIR M N K [f32|bf16|f16] [count]
// One rank stream DIR/rank-0.ttr with `count` (default 1) GEMMs C = A·B, A and B uniform in [-1, 1) of the input
// type, C the FP64 product rounded to C's type (within every bound), all of the same type.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "analyzer/blas.h"
#include "analyzer/test_util.h"
#include "ttrace/format.h"

namespace {

using ttrace::format::DType;
using ttrace::format::TensorSlot;
namespace testing = ttrace::analyzer::testing;

int Usage() {
  fprintf(stderr, "usage: gemm_check_bench write DIR M N K [f32|bf16|f16] [count]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6 || std::string(argv[1]) != "write") return Usage();
  const std::string dir = argv[2];
  const int64_t m = atoll(argv[3]), n = atoll(argv[4]), k = atoll(argv[5]);
  const std::string type = argc > 6 ? argv[6] : "f32";
  const int count = argc > 7 ? atoi(argv[7]) : 1;
  const DType dt = type == "bf16" ? DType::kBF16 : type == "f16" ? DType::kF16 : DType::kF32;
  if (m <= 0 || n <= 0 || k <= 0 || count <= 0 || (type != "f32" && type != "bf16" && type != "f16")) return Usage();
  mkdir(dir.c_str(), 0777);
  const auto t0 = std::chrono::steady_clock::now();
  testing::StreamBuilder w(dir + "/rank-0.ttr", 0, 1, "gemm-bench", 4 << 20);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n));
  for (int g = 0; g < count; ++g) {
    for (auto& v : a) v = testing::RoundTo(dt, u(rng));
    for (auto& v : b) v = testing::RoundTo(dt, u(rng));
    ttrace::analyzer::MatMul(false, false, m, n, k, a.data(), m, b.data(), k, c.data(), m);
    for (auto& v : c) v = testing::RoundTo(dt, v);
    const auto rec = testing::GemmRec(static_cast<uint64_t>(g), m, n, k, dt, dt);
    w.Gemm(rec);
    w.Tensor(rec.seq, TensorSlot::kA, dt, m, k, 1, testing::Encode(dt, a), true);
    w.Tensor(rec.seq, TensorSlot::kB, dt, k, n, 1, testing::Encode(dt, b), true);
    w.Tensor(rec.seq, TensorSlot::kCOut, dt, m, n, 1, testing::Encode(dt, c), true);
  }
  w.Close();
  struct stat st {};
  stat((dir + "/rank-0.ttr").c_str(), &st);
  printf("wrote %s/rank-0.ttr: %d GEMM(s) %lldx%lldx%lld %s, %.1f MB, %.1f s\n", dir.c_str(), count,
         static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), type.c_str(),
         st.st_size / 1e6, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
