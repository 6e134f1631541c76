// Float codec (store/float_codec.h) against plain zstd (levels 1, 3), today's byte shuffle + zstd, and Blosc
// (when built with it): compression ratio and MB/s (10^6 bytes of tensor data per second of the benchmark
// thread's CPU time, i.e. per core, so a loaded machine slows the numbers less than wall time would) for encode
// and decode, per dtype, on synthetic data and on the tensors of traces given with --trace.
//
// Synthetic data: 16 tensors of 1 MiB per (distribution, dtype): gaussian N(0, 0.02) (weights), uniform [-1, 1),
// heavy-tailed (Student t, 2 degrees of freedom, scale 0.02: gradients), smooth (a random walk, steps N(0, 0.01):
// activations); FP8 values are scaled so the largest magnitude is 0.9 of the format's largest, as FP8 training
// scales by amax. Traces (`--trace DIR`, e.g. a gpt run on simgpu with TTRACE_DIR=DIR): every tensor of every
// rank-*.ttr, decoded to its elements, grouped by dtype and by slot: GEMM inputs (A, B), GEMM outputs (C), and
// collective buffers (send, recv).
//
// "float codec, written" is what the shim pays per tensor: the codec, then the store's writer (one tensor a frame:
// the record copied in, the frame's gated zstd trial or raw blocks, its CRC) into memory; decoded as a reader does.
//
// Usage: codec_bench [--min-seconds S] [--best] [--data SUBSTR] [--method SUBSTR [--exact-method]] [--trace DIR]...
//                    [--cast] [--no-synthetic] [--planes]
// --planes prints, instead of measuring, how the float codec stores each row's planes (raw, constant, Huffman).
// --cast adds FP16 and FP8 rows made from the traces' FP32 tensors (Casts()).
// --best reports the fastest single pass over a row's tensors instead of the mean over --min-seconds (for a shared,
// loaded machine: other processes' interference only ever slows a pass). --data and --method keep the rows and
// methods whose name (data: "name dtype") contains SUBSTR; with --exact-method only the method named SUBSTR.
#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <zstd.h>

#include "kernels/dtype.h"
#include "kernels/fp8.h"
#include "store/float_codec.h"
#include "store/trace_reader.h"
#include "store/trace_writer.h"
#include "ttrace/byte_shuffle.h"
#ifdef TTRACE_HAVE_BLOSC
#include <blosc.h>
#endif

namespace {

using ttrace::format::DType;

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Tensor {
  std::string bytes;  // kFull layout
  size_t elem = 0;
};

struct DataSet {
  std::string name;
  std::string dtype;
  std::vector<Tensor> tensors;
  size_t bytes() const {
    size_t b = 0;
    for (const Tensor& t : tensors) b += t.bytes.size();
    return b;
  }
};

// One method: encode a tensor into `out` (returns the size), decode `size` bytes back into `back`.
struct Method {
  std::string name;
  std::function<size_t(const Tensor&, std::string* out)> encode;
  std::function<void(const Tensor&, const std::string& enc, std::string* back)> decode;
};

ZSTD_CCtx* cctx = ZSTD_createCCtx();
ZSTD_DCtx* dctx = ZSTD_createDCtx();
std::string scratch;

// The writer of the "written" method: its frames land in `*frame_out` (the method's output), `frame_bytes` long.
std::string* frame_out = nullptr;
size_t frame_bytes = 0;
class FrameCopy : public ttrace::store::StreamOutput {
 public:
  bool Begin(const ttrace::format::FileHeader&, std::string*) override { return true; }
  bool WriteFrame(const char* frame, size_t bytes, const ttrace::format::IndexEntry&, std::string*) override {
    if (frame_out->size() < bytes) frame_out->resize(bytes);
    memcpy(frame_out->data(), frame, bytes);
    frame_bytes = bytes;
    return true;
  }
  bool Finish(const ttrace::store::StreamSummary&, std::string*) override { return true; }
};
std::unique_ptr<ttrace::store::TraceWriter> writer =
    ttrace::store::TraceWriter::Create(std::make_unique<FrameCopy>(), {}, {}, nullptr);

size_t Zstd(const char* in, size_t n, int level, std::string* out) {
  out->resize(ZSTD_compressBound(n));
  return ZSTD_compressCCtx(cctx, out->data(), out->size(), in, n, level);
}
void Unzstd(const std::string& enc, size_t n, char* out) {
  const size_t r = ZSTD_decompressDCtx(dctx, out, n, enc.data(), enc.size());
  if (r != n) abort();
}

std::vector<Method> Methods() {
  std::vector<Method> m;
  // "float codec" is the current encoder (codec version 3); "float codec v2" codec version 2's (main before
  // codec26's delta planes), decoded by the same decoder: both in one binary, so they can be alternated under load.
  using EncodeFn = size_t (*)(const void*, size_t, size_t, void*);
  struct Encoder {
    const char* name;
    EncodeFn fn;
  };
  for (const Encoder& coder : {Encoder{"float codec", ttrace::store::FloatEncode},
                               Encoder{"float codec v2", ttrace::store::FloatEncodeVersion2}}) {
    const EncodeFn encode = coder.fn;
    const std::string name = coder.name;
  m.push_back({name,
               [encode](const Tensor& t, std::string* out) {
                 const size_t n = t.bytes.size() / t.elem;
                 out->resize(ttrace::store::FloatCodecMaxBytes(n, t.elem));
                 return encode(t.bytes.data(), n, t.elem, out->data());
               },
               [](const Tensor& t, const std::string& enc, std::string* back) {
                 if (ttrace::store::FloatDecode(enc.data(), enc.size(), t.elem, back->data(), back->size())) abort();
               }});
  m.push_back({name + " + zstd 1",
               [encode](const Tensor& t, std::string* out) {
                 const size_t n = t.bytes.size() / t.elem;
                 scratch.resize(ttrace::store::FloatCodecMaxBytes(n, t.elem));
                 const size_t c = encode(t.bytes.data(), n, t.elem, scratch.data());
                 return Zstd(scratch.data(), c, 1, out);
               },
               [](const Tensor& t, const std::string& enc, std::string* back) {
                 const size_t c = ZSTD_getFrameContentSize(enc.data(), enc.size());
                 if (scratch.size() < c) scratch.resize(c);
                 Unzstd(enc, c, scratch.data());
                 if (ttrace::store::FloatDecode(scratch.data(), c, t.elem, back->data(), back->size())) abort();
               }});
  // What the shim pays to store a coded tensor: the codec, then the writer (store/trace_writer.h: the record
  // copied into its frame, the frame's gated zstd trial or raw blocks, its CRC, handed to the output), one tensor a
  // frame; decoded as a reader does (the zstd frame, then the payload).
  m.push_back({name + ", written",
               [encode](const Tensor& t, std::string* out) {
                 const size_t n = t.bytes.size() / t.elem;
                 scratch.resize(ttrace::store::FloatCodecMaxBytes(n, t.elem));
                 const size_t c = encode(t.bytes.data(), n, t.elem, scratch.data());
                 ttrace::format::TensorRecord r{};
                 r.payload_kind = static_cast<uint8_t>(ttrace::format::PayloadKind::kFloatCoded);
                 r.rows = static_cast<int64_t>(n);
                 r.cols = r.batch = 1;
                 r.payload_bytes = c;
                 frame_out = out;
                 if (!writer->Append(ttrace::format::RecordType::kTensor, r, scratch.data(), c) || !writer->Flush())
                   abort();
                 return frame_bytes;
               },
               [](const Tensor& t, const std::string& enc, std::string* back) {
                 ttrace::format::FrameHeader fh;
                 memcpy(&fh, enc.data(), sizeof fh);
                 if (scratch.size() < fh.uncompressed_size) scratch.resize(fh.uncompressed_size);
                 const size_t r = ZSTD_decompressDCtx(dctx, scratch.data(), fh.uncompressed_size,
                                                      enc.data() + sizeof fh, fh.compressed_size);
                 if (r != fh.uncompressed_size) abort();
                 constexpr size_t kAt = sizeof(ttrace::format::RecordHeader) + sizeof(ttrace::format::TensorRecord);
                 if (ttrace::store::FloatDecode(scratch.data() + kAt, r - kAt, t.elem, back->data(), back->size()))
                   abort();
               }});
  }
  for (int level : {1, 3}) {
    m.push_back({"zstd " + std::to_string(level),
                 [level](const Tensor& t, std::string* out) { return Zstd(t.bytes.data(), t.bytes.size(), level, out); },
                 [](const Tensor& t, const std::string& enc, std::string* back) {
                   Unzstd(enc, back->size(), back->data());
                 }});
    m.push_back({"shuffle + zstd " + std::to_string(level),
                 [level](const Tensor& t, std::string* out) {
                   scratch.resize(t.bytes.size());
                   ttrace::format::ShuffleBytes(t.bytes.data(), t.bytes.size() / t.elem, t.elem, scratch.data());
                   return Zstd(scratch.data(), scratch.size(), level, out);
                 },
                 [](const Tensor& t, const std::string& enc, std::string* back) {
                   scratch.resize(back->size());
                   Unzstd(enc, back->size(), scratch.data());
                   ttrace::format::UnshuffleBytes(scratch.data(), back->size() / t.elem, t.elem, back->data());
                 }});
  }
#ifdef TTRACE_HAVE_BLOSC
  struct BloscConfig {
    const char* name;
    const char* compressor;
    int level, shuffle;
  };
  for (BloscConfig c : {BloscConfig{"blosc lz4 shuffle 5", "lz4", 5, BLOSC_SHUFFLE},
                        BloscConfig{"blosc zstd bitshuffle 1", "zstd", 1, BLOSC_BITSHUFFLE}}) {
    m.push_back({c.name,
                 [c](const Tensor& t, std::string* out) {
                   out->resize(t.bytes.size() + BLOSC_MAX_OVERHEAD);
                   const int r = blosc_compress_ctx(c.level, c.shuffle, t.elem, t.bytes.size(), t.bytes.data(),
                                                    out->data(), out->size(), c.compressor, 0, 1);
                   if (r <= 0) abort();
                   return static_cast<size_t>(r);
                 },
                 [](const Tensor& t, const std::string& enc, std::string* back) {
                   if (blosc_decompress_ctx(enc.data(), back->data(), back->size(), 1) != static_cast<int>(back->size()))
                     abort();
                 }});
  }
#endif
  return m;
}

struct Result {
  double ratio, encode_mbs, decode_mbs;
};

bool best_pass = false;

Result Measure(const DataSet& d, const Method& m, double min_seconds) {
  std::vector<std::string> enc(d.tensors.size());
  size_t coded = 0;
  std::string out;
  double t0 = CpuSeconds(), encode_s = 0, best_encode = 1e30;
  size_t reps = 0;
  do {
    const double pass0 = CpuSeconds();
    coded = 0;
    for (size_t i = 0; i < d.tensors.size(); ++i) {
      const size_t c = m.encode(d.tensors[i], &out);  // out keeps its size: no zero-filling inside the timing
      if (reps == 0) enc[i] = out.substr(0, c);
      coded += c;
    }
    ++reps;
    const double now = CpuSeconds();
    best_encode = std::min(best_encode, now - pass0);
    encode_s = now - t0;
  } while (encode_s < min_seconds);
  const double encode_mbs = static_cast<double>(d.bytes()) / (best_pass ? best_encode : encode_s / reps) / 1e6;
  std::vector<std::string> back(d.tensors.size());
  for (size_t i = 0; i < d.tensors.size(); ++i) back[i].resize(d.tensors[i].bytes.size());
  t0 = CpuSeconds();
  double decode_s = 0, best_decode = 1e30;
  reps = 0;
  do {
    const double pass0 = CpuSeconds();
    for (size_t i = 0; i < d.tensors.size(); ++i) m.decode(d.tensors[i], enc[i], &back[i]);
    ++reps;
    const double now = CpuSeconds();
    best_decode = std::min(best_decode, now - pass0);
    decode_s = now - t0;
  } while (decode_s < min_seconds);
  for (size_t i = 0; i < d.tensors.size(); ++i)
    if (back[i] != d.tensors[i].bytes) {
      fprintf(stderr, "%s: %s does not round-trip tensor %zu\n", d.name.c_str(), m.name.c_str(), i);
      exit(1);
    }
  return {static_cast<double>(d.bytes()) / static_cast<double>(coded), encode_mbs,
          static_cast<double>(d.bytes()) / (best_pass ? best_decode : decode_s / reps) / 1e6};
}

// ---- data ----------------------------------------------------------------------------------------------------

template <typename T>
void Put(std::string* s, size_t i, T v) {
  memcpy(s->data() + i * sizeof(T), &v, sizeof(T));
}

// The rows whose "name dtype" contains `filter` (the others are not generated: under callgrind that is most of the time).
std::vector<DataSet> Synthetic(const std::string& filter) {
  const char* dists[] = {"gaussian", "uniform", "heavy-tailed", "smooth"};
  const char* dtypes[] = {"fp32", "bf16", "fp16", "fp8 e4m3", "fp8 e5m2"};
  const size_t elem[] = {4, 2, 2, 1, 1};
  std::vector<DataSet> out;
  for (int di = 0; di < 4; ++di) {
    std::mt19937 rng(100 + di);
    std::normal_distribution<float> gauss(0.0f, 0.02f);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::student_t_distribution<float> heavy(2.0f);
    std::normal_distribution<float> step(0.0f, 0.01f);
    float walk = 0;
    for (int ti = 0; ti < 5; ++ti) {
      DataSet d{dists[di], dtypes[ti], {}};
      if ((d.name + " " + d.dtype).find(filter) == std::string::npos) continue;
      for (int k = 0; k < 16; ++k) {
        const size_t n = (size_t{1} << 20) / elem[ti];
        std::vector<float> v(n);
        for (float& x : v) {
          switch (di) {
            case 0: x = gauss(rng); break;
            case 1: x = uni(rng); break;
            case 2: x = 0.02f * heavy(rng); break;
            default: x = walk += step(rng);
          }
        }
        float amax = 0;
        for (float x : v) amax = std::max(amax, std::fabs(x));
        Tensor t;
        t.elem = elem[ti];
        t.bytes.resize(n * t.elem);
        for (size_t i = 0; i < n; ++i) {
          switch (ti) {
            case 0: Put(&t.bytes, i, v[i]); break;
            case 1: Put(&t.bytes, i, ttrace::kernels::FloatToBf16(v[i])); break;
            case 2: Put(&t.bytes, i, ttrace::kernels::FloatToHalf(v[i])); break;
            case 3: Put(&t.bytes, i, ttrace::kernels::FloatToE4M3(v[i] * 0.9f * 448 / amax)); break;
            default: Put(&t.bytes, i, ttrace::kernels::FloatToE5M2(v[i] * 0.9f * 57344 / amax));
          }
        }
        d.tensors.push_back(std::move(t));
      }
      out.push_back(std::move(d));
    }
  }
  return out;
}

const char* DTypeLabel(uint8_t dtype) {
  switch (static_cast<DType>(dtype)) {
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "fp64";
    case DType::kE4M3: return "fp8 e4m3";
    case DType::kE5M2: return "fp8 e5m2";
    default: return nullptr;  // integers: not float data
  }
}

// Every float tensor of the traces in `dir`, grouped; at most 64 MiB per group.
std::vector<DataSet> FromTraces(const std::string& dir) {
  std::map<std::string, DataSet> groups;
  DIR* dp = opendir(dir.c_str());
  if (!dp) {
    fprintf(stderr, "cannot open %s\n", dir.c_str());
    exit(2);
  }
  std::vector<std::string> files;
  while (dirent* e = readdir(dp)) {
    const std::string name = e->d_name;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".ttr") files.push_back(dir + "/" + name);
  }
  closedir(dp);
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    auto r = ttrace::store::TraceReader::Open(f);
    if (!r.ok()) continue;
    ttrace::store::RecordView v;
    while (true) {
      auto more = (*r)->Next(&v);
      if (!more.ok() || !*more) break;
      if (v.type != ttrace::format::RecordType::kTensor) continue;
      const auto t = v.Body<ttrace::format::TensorRecord>();
      const char* label = DTypeLabel(t.dtype);
      const size_t e = ttrace::format::DTypeSize(t.dtype);
      if (!label || v.payload.size() < 4096) continue;
      const char* slot = t.slot <= 1 ? "GEMM inputs" : t.slot <= 3 ? "GEMM outputs" : t.slot <= 5 ? "collectives" : nullptr;
      if (!slot) continue;
      Tensor tensor;
      tensor.elem = e;
      const uint64_t full = static_cast<uint64_t>(t.rows) * t.cols * t.batch * e;
      tensor.bytes.resize(full);
      if (t.payload_kind == static_cast<uint8_t>(ttrace::format::PayloadKind::kShuffled)) {
        ttrace::format::UnshuffleBytes(v.payload.data(), full / e, e, tensor.bytes.data());
      } else if (t.payload_kind == static_cast<uint8_t>(ttrace::format::PayloadKind::kFloatCoded)) {
        if (ttrace::store::FloatDecode(v.payload.data(), v.payload.size(), e, tensor.bytes.data(), full)) continue;
      } else if (v.payload.size() == full) {
        memcpy(tensor.bytes.data(), v.payload.data(), full);
      } else {
        continue;
      }
      DataSet& d = groups[std::string(slot) + "|" + label];
      d.name = slot;
      d.dtype = label;
      if (d.bytes() < (64u << 20)) d.tensors.push_back(std::move(tensor));
    }
  }
  std::vector<DataSet> out;
  for (auto& [k, d] : groups) out.push_back(std::move(d));
  return out;
}

// The workloads run in FP32 and BF16 only; for FP16 and FP8 rows their FP32 tensors are cast, FP16 by rounding
// (values beyond its range saturate to +-65504 rather than becoming infinities), FP8 scaled per tensor so its
// largest magnitude is 0.9 of the format's largest, as FP8 training scales by amax (as Synthetic() does).
std::vector<DataSet> Casts(const std::vector<DataSet>& sets) {
  std::vector<DataSet> out;
  for (const DataSet& d : sets) {
    if (d.dtype != "fp32") continue;
    for (int ti = 0; ti < 3; ++ti) {
      DataSet c{d.name, ti == 0 ? "fp16 (cast)" : ti == 1 ? "fp8 e4m3 (cast)" : "fp8 e5m2 (cast)", {}};
      for (const Tensor& t : d.tensors) {
        const size_t n = t.bytes.size() / 4;
        std::vector<float> v(n);
        memcpy(v.data(), t.bytes.data(), n * 4);
        float amax = 0;
        for (float x : v)
          if (std::isfinite(x)) amax = std::max(amax, std::fabs(x));
        const float scale = amax > 0 ? 0.9f / amax : 1.0f;
        Tensor e;
        e.elem = ti == 0 ? 2 : 1;
        e.bytes.resize(n * e.elem);
        for (size_t i = 0; i < n; ++i) {
          if (ti == 0) Put(&e.bytes, i, ttrace::kernels::FloatToHalf(std::clamp(v[i], -65504.0f, 65504.0f)));
          else if (ti == 1) Put(&e.bytes, i, ttrace::kernels::FloatToE4M3(v[i] * scale * 448));
          else Put(&e.bytes, i, ttrace::kernels::FloatToE5M2(v[i] * scale * 57344));
        }
        c.tensors.push_back(std::move(e));
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

// How the float codec stored a row's planes (docs/format.md, "Payload kind 2"): for each plane (0 lowest), the
// blocks stored raw / constant / Huffman in four streams / in eight / of the differences (delta), and the plane's
// coded share of its raw bytes.
// Says which path a row takes.
void PrintPlanes(const DataSet& d) {
  constexpr int kMaxPlanes = 8;
  size_t mode_blocks[kMaxPlanes][5] = {}, coded[kMaxPlanes] = {}, raw[kMaxPlanes] = {};
  std::string out;
  size_t elem = 0;
  for (const Tensor& t : d.tensors) {
    elem = t.elem;
    const size_t n = t.bytes.size() / t.elem;
    out.resize(ttrace::store::FloatCodecMaxBytes(n, t.elem));
    const size_t size = ttrace::store::FloatEncode(t.bytes.data(), n, t.elem, out.data());
    const auto* p = reinterpret_cast<const uint8_t*>(out.data());
    const size_t block = size_t{1} << p[2];
    size_t pos = ttrace::store::kFloatCodecHeaderBytes;
    for (size_t b = 0; b < n; b += block) {
      const size_t m = std::min(block, n - b);
      for (size_t plane = 0; plane < t.elem; ++plane) {
        const size_t start = pos;
        const uint8_t mode = p[pos++];
        if (mode == 0) {
          pos += m;
        } else if (mode == 1) {
          ++pos;
        } else {
          if (mode == 4) ++pos;  // the delta plane's first byte
          const int lo = p[pos], hi = p[pos + 1];
          pos += 2 + (hi - lo + 2) / 2;
          const int count = mode == 3 ? 8 : 4;
          size_t streams = 0;
          for (int s = 0; s < count; ++s) {
            uint32_t bytes;
            memcpy(&bytes, p + pos + 4 * s, 4);
            streams += bytes;
          }
          pos += 4 * count + streams;
        }
        ++mode_blocks[plane][std::min<uint8_t>(mode, 4)];
        coded[plane] += pos - start;
        raw[plane] += m;
      }
    }
    if (pos != size) abort();
  }
  printf("planes of %s %s (blocks raw/constant/Huffman/Huffman8/delta, coded/raw bytes):", d.name.c_str(),
         d.dtype.c_str());
  for (size_t plane = 0; plane < elem; ++plane)
    printf(" [%zu] %zu/%zu/%zu/%zu/%zu %.3f", plane, mode_blocks[plane][0], mode_blocks[plane][1],
           mode_blocks[plane][2], mode_blocks[plane][3], mode_blocks[plane][4],
           static_cast<double>(coded[plane]) / static_cast<double>(raw[plane]));
  printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  double min_seconds = 0.3;
  bool synthetic = true;
  std::vector<std::string> traces;
  std::string data_filter, method_filter;
  bool cast = false, exact_method = false, planes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--min-seconds" && i + 1 < argc) {
      min_seconds = atof(argv[++i]);
    } else if (a == "--trace" && i + 1 < argc) {
      traces.push_back(argv[++i]);
    } else if (a == "--cast") {
      cast = true;
    } else if (a == "--best") {
      best_pass = true;
    } else if (a == "--data" && i + 1 < argc) {
      data_filter = argv[++i];
    } else if (a == "--method" && i + 1 < argc) {
      method_filter = argv[++i];
    } else if (a == "--planes") {
      planes = true;
    } else if (a == "--exact-method") {
      exact_method = true;
    } else if (a == "--no-synthetic") {
      synthetic = false;
    } else {
      fprintf(stderr,
              "usage: codec_bench [--min-seconds S] [--best] [--data SUBSTR] [--method SUBSTR [--exact-method]] "
              "[--trace DIR]... [--cast] [--no-synthetic] [--planes]\n");
      return 2;
    }
  }
  std::vector<DataSet> sets;
  if (synthetic) sets = Synthetic(data_filter);
  for (const std::string& t : traces) {
    std::vector<DataSet> s = FromTraces(t);
    if (cast) {
      std::vector<DataSet> c = Casts(s);
      for (DataSet& d : c) s.push_back(std::move(d));
    }
    for (DataSet& d : s) {
      d.name = t.substr(t.find_last_of('/') + 1) + ": " + d.name;
      sets.push_back(std::move(d));
    }
  }
  double load[3] = {0, 0, 0};
  if (FILE* f = fopen("/proc/loadavg", "r")) {
    if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    fclose(f);
  }
  printf("load average at start: %.2f %.2f %.2f; MB/s = 10^6 bytes of tensor data per CPU second of this thread (%s)\n\n",
         load[0], load[1], load[2], best_pass ? "fastest pass" : "mean");
  printf("| data | dtype | MiB | method | ratio | encode MB/s | decode MB/s |\n|---|---|---|---|---|---|---|\n");
  const std::vector<Method> methods = Methods();
  for (const DataSet& d : sets) {
    if ((d.name + " " + d.dtype).find(data_filter) == std::string::npos) continue;
    if (planes) {
      PrintPlanes(d);
      continue;
    }
    for (const Method& m : methods) {
      if (m.name.find(method_filter) == std::string::npos) continue;
      if (exact_method && m.name != method_filter) continue;
      const Result r = Measure(d, m, min_seconds);
      printf("| %s | %s | %.0f | %s | %.3f | %.0f | %.0f |\n", d.name.c_str(), d.dtype.c_str(),
             static_cast<double>(d.bytes()) / (1 << 20), m.name.c_str(), r.ratio, r.encode_mbs, r.decode_mbs);
      fflush(stdout);
    }
  }
  return 0;
}
