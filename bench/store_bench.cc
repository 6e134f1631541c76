// Store writer throughput: MiB/s of tensor payload through TraceWriter (frame building, CRC-32C, zstd) and back
// through TraceReader. Payloads are FP32 values of a smooth random walk (compressible like real activations) or
// uniform random bits (incompressible), in 1 MiB tensors, stored as they are (payload kind full) or byte-shuffled
// first (full shuffled; the shuffle is timed with the write, the unshuffle with the read) or float-coded as the shim stores them (full coded,
// store/float_codec.h; coded, and decoded on read, in the timed loops). Also Gaussian FP32 and BF16 values
// (weights-like). Usage: store_bench [MiB] (default 256).
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "store/trace_reader.h"
#include "store/crc32c.h"
#include "store/float_codec.h"
#include "store/trace_writer.h"
#include "ttrace/byte_shuffle.h"

namespace {

// The benchmark thread's CPU time (user + system): equal to wall time on an idle machine, and what a loaded one
// still measures per core.
double Now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
double Seconds(double t0) { return Now() - t0; }

// `pool` holds 64 distinct 1 MiB tensors, cycled: a repeat is 64 MiB away, far outside any 4 MiB frame.
enum class Kind { kFull, kShuffled, kCoded };

void Run(const char* name, const std::vector<float>& pool, size_t total_mib, int level, Kind kind,
         ttrace::format::DType dtype = ttrace::format::DType::kF32) {
  const bool shuffle = kind == Kind::kShuffled;
  const size_t elem_bytes = ttrace::format::DTypeSize(static_cast<uint8_t>(dtype));
  const size_t elems = (1u << 20) / elem_bytes;
  const char* base = reinterpret_cast<const char*>(pool.data());
  std::vector<char> shuffled(ttrace::store::FloatCodecMaxBytes(elems, elem_bytes));
  const std::string path = "/tmp/ttrace_store_bench.ttr";
  ttrace::store::WriterOptions opt;
  opt.zstd_level = level;
  std::string err;
  auto w = ttrace::store::TraceWriter::Open(path, {}, opt, &err);
  if (!w) {
    fprintf(stderr, "%s\n", err.c_str());
    exit(1);
  }
  const size_t bytes = elems * elem_bytes;
  const size_t n = total_mib * (1u << 20) / bytes;
  auto t0 = Now();
  for (size_t i = 0; i < n; ++i) {
    ttrace::format::TensorRecord t{};
    t.seq = i;
    t.dtype = static_cast<uint8_t>(dtype);
    t.rows = static_cast<int64_t>(elems);
    t.cols = t.batch = 1;
    t.payload_bytes = bytes;
    const char* payload = base + (i % 64) * bytes;
    if (kind == Kind::kCoded) {
      t.payload_kind = static_cast<uint8_t>(ttrace::format::PayloadKind::kFloatCoded);
      t.payload_bytes = ttrace::store::FloatEncode(payload, elems, elem_bytes, shuffled.data());
      payload = shuffled.data();
    }
    if (shuffle) {
      t.payload_kind = static_cast<uint8_t>(ttrace::format::PayloadKind::kShuffled);
      ttrace::format::ShuffleBytes(payload, elems, elem_bytes, shuffled.data());
      payload = shuffled.data();
    }
    w->Append(ttrace::format::RecordType::kTensor, t, payload, t.payload_bytes);
  }
  w->Close(&err);
  const double wt = Seconds(t0);
  const double mib = static_cast<double>(n * bytes) / (1 << 20);
  const double file_mib = static_cast<double>(w->bytes_written()) / (1 << 20);
  t0 = Now();
  auto r = ttrace::store::TraceReader::Open(path);
  ttrace::store::RecordView v;
  size_t records = 0;
  std::vector<char> decoded(bytes);
  while (r.ok() && *(*r)->Next(&v)) {
    ++records;
    const auto t = v.Body<ttrace::format::TensorRecord>();
    if (v.type == ttrace::format::RecordType::kTensor &&
        t.payload_kind == static_cast<uint8_t>(ttrace::format::PayloadKind::kShuffled))
      ttrace::format::UnshuffleBytes(v.payload.data(), elems, elem_bytes, decoded.data());
    if (v.type == ttrace::format::RecordType::kTensor &&
        t.payload_kind == static_cast<uint8_t>(ttrace::format::PayloadKind::kFloatCoded) &&
        ttrace::store::FloatDecode(v.payload.data(), v.payload.size(), elem_bytes, decoded.data(), bytes)) {
      fprintf(stderr, "a coded payload does not decode\n");
      exit(1);
    }
  }
  const double rt = Seconds(t0);
  printf("%-14s %-13s zstd %d: write %7.1f MiB/s, read %7.1f MiB/s, ratio %.2f (%zu records)\n", name,
         kind == Kind::kCoded ? "full coded" : shuffle ? "full shuffled" : "full", level, mib / wt, mib / rt,
         mib / file_mib, records);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? static_cast<size_t>(atoi(argv[1])) : 256;
  std::mt19937 rng(1);
  std::normal_distribution<float> step(0.0f, 0.01f);
  std::normal_distribution<float> weight(0.0f, 0.02f);
  std::vector<float> smooth(64u << 18), noise(64u << 18), gauss(64u << 18), bf16(64u << 18);
  float x = 0;
  for (auto& v : smooth) v = x += step(rng);
  for (auto& v : gauss) v = weight(rng);
  // BF16 Gaussian values, two per float slot (the pool is read as bytes).
  auto* halves = reinterpret_cast<uint16_t*>(bf16.data());
  for (size_t i = 0; i < bf16.size() * 2; ++i) {
    const float f = weight(rng);
    uint32_t u;
    memcpy(&u, &f, 4);
    halves[i] = static_cast<uint16_t>(u >> 16);
  }
  for (auto& v : noise) {
    uint32_t u = rng();
    memcpy(&v, &u, 4);
  }
  std::vector<char> buf(64 << 20, 1);
  auto t0 = Now();
  uint32_t c = ttrace::store::Crc32c(buf.data(), buf.size());
  printf("crc32c: %.0f MiB/s (%08x)\n", 64 / Seconds(t0), c);
  for (int level : {1, 3}) {
    for (Kind kind : {Kind::kFull, Kind::kShuffled, Kind::kCoded}) {
      Run("smooth fp32", smooth, mib, level, kind);
      Run("gaussian fp32", gauss, mib, level, kind);
      Run("gaussian bf16", bf16, mib, level, kind, ttrace::format::DType::kBF16);
      Run("random bits", noise, mib, level, kind);
    }
  }
  return 0;
}
