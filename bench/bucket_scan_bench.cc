// The cost of reading a data-parallel gradient bucket (analyzer/shard.h FindDividedSegments, docs/diff.md
// "Data-parallel runs that average gradients"): a bucket of N FP32 elements holding G gradients divided by 2, with a
// bias gradient (no GEMM) before each, searched for G + G/2 candidate GEMM outputs (the gradients and as many input
// gradients that are not in it). Usage: bucket_scan_bench [N] [G] [REPS] [fp32|bf16]. Prints, median CPU seconds
// over REPS:
//   decode    DecodeAll of the bucket (what any check of it costs at least)
//   divided   FindDividedSegments with p = 2 (every gradient found)
//   copies    FindDividedSegments with p = 1 (nothing found: every position probed, the worst case)
// and the elements the segments cover. Exit 1 when a gradient is not found where it was packed.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "analyzer/shard.h"
#include "analyzer/tensor_data.h"

namespace {

double Cpu() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// Storage bytes of v, FP32 or BF16 (round to nearest even; the values are normal).
std::string Bytes(const std::vector<float>& v, bool bf16) {
  if (!bf16) return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  std::string out(v.size() * 2, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    const uint16_t h = static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ttrace::analyzer;
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (25u << 20) / 4;  // DDP's 25 MB, FP32
  const size_t g = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 32;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
  const bool bf16 = argc > 4 && std::string(argv[4]) == "bf16";
  const ttrace::format::DType dt = bf16 ? ttrace::format::DType::kBF16 : ttrace::format::DType::kF32;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1e-3f);
  const size_t bias = 64, per = n / g - bias;
  std::vector<std::vector<float>> outputs;
  std::vector<float> bucket;
  std::vector<size_t> at;
  for (size_t i = 0; i < g + g / 2; ++i) {
    std::vector<float> y(i < g ? per : per / 4);
    for (float& v : y) v = normal(rng);
    if (i < g) {
      for (size_t b = 0; b < bias; ++b) bucket.push_back(normal(rng));
      at.push_back(bucket.size());
      for (float v : y) bucket.push_back(v / 2);
    }
    outputs.push_back(std::move(y));
  }
  std::vector<std::string> stored;
  for (const auto& y : outputs) stored.push_back(Bytes(y, bf16));
  std::vector<StoredValues> sv;
  for (const std::string& s : stored) sv.push_back(StoredValues{dt, s});
  const std::string bucket_bytes = Bytes(bucket, bf16);  // v / 2 of a BF16 value is one exactly
  const FloatFormat f = FormatOf(dt);
  std::vector<double> t_decode, t_div, t_copy;
  size_t covered = 0;
  bool ok = true;
  for (int r = 0; r < reps; ++r) {
    double t0 = Cpu();
    const std::vector<double> x = DecodeAll(dt, bucket_bytes);
    double t1 = Cpu();
    const std::vector<DividedSegment> d = FindDividedSegments(x, sv, 2, f);
    double t2 = Cpu();
    const std::vector<DividedSegment> c = FindDividedSegments(x, sv, 1, f);
    double t3 = Cpu();
    t_decode.push_back(t1 - t0);
    t_div.push_back(t2 - t1);
    t_copy.push_back(t3 - t2);
    covered = 0;
    for (const DividedSegment& s : d) covered += s.length;
    ok = ok && d.size() == g && c.empty();
    for (size_t i = 0; ok && i < g; ++i) ok = d[i].offset == at[i] && d[i].source == i;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  printf("bucket %zu %s elements, %zu gradients of %zu (+%zu bias), %zu outputs searched, %d reps\n", bucket.size(),
         bf16 ? "BF16" : "FP32", g, per, bias, outputs.size(), reps);
  printf("decode  %.4f s\ndivided %.4f s (%zu elements covered)\ncopies  %.4f s (none found)\n", median(t_decode),
         median(t_div), covered, median(t_copy));
  if (!ok) printf("FAILED: a gradient not found where it was packed\n");
  return ok ? 0 : 1;
}
