// Store writer throughput: MiB/s of tensor payload through TraceWriter (frame building, CRC-32C, zstd) and back
// through TraceReader. Payloads are FP32 values of a smooth random walk (compressible like real activations) or
// uniform random bits (incompressible), in 1 MiB tensors. Usage: store_bench [MiB] (default 256).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "analyzer/trace_reader.h"
#include "collector/crc32c.h"
#include "collector/trace_writer.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `pool` holds 64 distinct 1 MiB tensors, cycled: a repeat is 64 MiB away, far outside any 4 MiB frame.
void Run(const char* name, const std::vector<float>& pool, size_t total_mib, int level) {
  const size_t elems = (1u << 20) / sizeof(float);
  const std::string path = "/tmp/ttrace_store_bench.ttr";
  ttrace::store::WriterOptions opt;
  opt.zstd_level = level;
  std::string err;
  auto w = ttrace::store::TraceWriter::Open(path, {}, opt, &err);
  if (!w) {
    fprintf(stderr, "%s\n", err.c_str());
    exit(1);
  }
  const size_t bytes = elems * sizeof(float);
  const size_t n = total_mib * (1u << 20) / bytes;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    ttrace::format::TensorRecord t{};
    t.seq = i;
    t.dtype = static_cast<uint8_t>(ttrace::format::DType::kF32);
    t.rows = static_cast<int64_t>(elems);
    t.cols = t.batch = 1;
    t.payload_bytes = bytes;
    w->Append(ttrace::format::RecordType::kTensor, t, pool.data() + (i % 64) * elems, bytes);
  }
  w->Close(&err);
  const double wt = Seconds(t0);
  const double mib = static_cast<double>(n * bytes) / (1 << 20);
  const double file_mib = static_cast<double>(w->bytes_written()) / (1 << 20);
  t0 = std::chrono::steady_clock::now();
  auto r = ttrace::analyzer::TraceReader::Open(path);
  ttrace::analyzer::RecordView v;
  size_t records = 0;
  while (r.ok() && *(*r)->Next(&v)) ++records;
  const double rt = Seconds(t0);
  printf("%-14s zstd %d: write %7.1f MiB/s, read %7.1f MiB/s, ratio %.2f (%zu records)\n", name, level,
         mib / wt, mib / rt, mib / file_mib, records);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? static_cast<size_t>(atoi(argv[1])) : 256;
  std::mt19937 rng(1);
  std::normal_distribution<float> step(0.0f, 0.01f);
  std::vector<float> smooth(64u << 18), noise(64u << 18);
  float x = 0;
  for (auto& v : smooth) v = x += step(rng);
  for (auto& v : noise) {
    uint32_t u = rng();
    memcpy(&v, &u, 4);
  }
  std::vector<char> buf(64 << 20, 1);
  auto t0 = std::chrono::steady_clock::now();
  uint32_t c = ttrace::store::Crc32c(buf.data(), buf.size());
  printf("crc32c: %.0f MiB/s (%08x)\n", 64 / Seconds(t0), c);
  for (int level : {1, 3}) {
    Run("smooth fp32", smooth, mib, level);
    Run("random bits", noise, mib, level);
  }
  return 0;
}
