// Rounding is done by scaling to an integer significand and nearbyint() (ties to even in the default rounding
// mode), which is exact for every format narrower than FP64.
#include "analyzer/test_util.h"

#include "store/float_codec.h"
#include "ttrace/byte_shuffle.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"
#include "kernels/dtype.h"

namespace ttrace::analyzer::testing {

using format::DType;

namespace {

}  // namespace

std::string TempDir(const std::string& name) {
  static std::atomic<int> counter{0};
  return test_support::TestScratchPath(name + "_" + std::to_string(counter++));
}

double RoundToFormat(double x, int p, int emin, double max) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const int q = std::max(e - 1, emin) - (p - 1);
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, -q)), q);
  if (std::fabs(r) > max) return std::copysign(HUGE_VAL, x);
  return r;
}

double RoundTo(DType dtype, double x) {
  switch (dtype) {
    case DType::kF32: return RoundToFormat(x, 24, -126, FLT_MAX);
    case DType::kF16: return RoundToFormat(x, 11, -14, 65504.0);
    case DType::kBF16: return RoundToFormat(x, 8, -126, 3.3895313892515355e38);
    case DType::kF64: return x;
    case DType::kE4M3: {
      const double r = RoundToFormat(x, 4, -6, 480.0);  // E4M3 saturates nothing here: beyond 448 is NaN
      return std::fabs(r) > 448.0 ? std::nan("") : r;
    }
    case DType::kE5M2: return RoundToFormat(x, 3, -14, 57344.0);
    default: return std::nearbyint(x);
  }
}

double RoundToTf32(double x) { return RoundToFormat(x, 11, -126, FLT_MAX); }

double TruncateToTf32(double x) {
  const float f = static_cast<float>(x);
  return kernels::BitsFloat(kernels::FloatBits(f) & 0xffffe000u);
}

std::string Encode(DType dtype, const std::vector<double>& values) {
  const uint32_t size = format::DTypeSize(static_cast<uint8_t>(dtype));
  std::string out(values.size() * size, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    char* p = &out[i * size];
    const double v = values[i];
    switch (dtype) {
      case DType::kF32: { float f = static_cast<float>(v); memcpy(p, &f, 4); break; }
      case DType::kF64: memcpy(p, &v, 8); break;
      case DType::kF16: { uint16_t h = kernels::FloatToHalf(static_cast<float>(v)); memcpy(p, &h, 2); break; }
      case DType::kBF16: { uint16_t h = kernels::FloatToBf16(static_cast<float>(v)); memcpy(p, &h, 2); break; }
      case DType::kI8: { int8_t x = static_cast<int8_t>(v); memcpy(p, &x, 1); break; }
      case DType::kU8: { uint8_t x = static_cast<uint8_t>(v); memcpy(p, &x, 1); break; }
      case DType::kI32: { int32_t x = static_cast<int32_t>(v); memcpy(p, &x, 4); break; }
      case DType::kU32: { uint32_t x = static_cast<uint32_t>(v); memcpy(p, &x, 4); break; }
      case DType::kI64: { int64_t x = static_cast<int64_t>(v); memcpy(p, &x, 8); break; }
      case DType::kU64: { uint64_t x = static_cast<uint64_t>(v); memcpy(p, &x, 8); break; }
      default: ADD_FAILURE() << "Encode: unsupported dtype " << static_cast<int>(dtype); break;
    }
  }
  return out;
}

void FlipBit(std::string* bytes, DType dtype, uint64_t index, int bit) {
  const uint32_t size = format::DTypeSize(static_cast<uint8_t>(dtype));
  (*bytes)[index * size + static_cast<uint64_t>(bit / 8)] ^= static_cast<char>(1u << (bit % 8));
}

int32_t CudaType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 0;
    case DType::kF64: return 1;
    case DType::kF16: return 2;
    case DType::kI8: return 3;
    case DType::kI32: return 10;
    case DType::kBF16: return 14;
    default: return -1;
  }
}

int32_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kI8: return 0;
    case DType::kU8: return 1;
    case DType::kI32: return 2;
    case DType::kU32: return 3;
    case DType::kI64: return 4;
    case DType::kU64: return 5;
    case DType::kF16: return 6;
    case DType::kF32: return 7;
    case DType::kF64: return 8;
    case DType::kBF16: return 9;
    default: return -1;
  }
}

StreamBuilder::StreamBuilder(const std::string& path, int rank, int world_size, const std::string& job,
                             size_t frame_bytes) {
  store::StreamIdentity id;
  id.rank = rank;
  id.world_size = world_size;
  id.local_rank = rank;
  id.pid = static_cast<uint32_t>(getpid());
  id.job = job;
  id.host = "testhost";
  store::WriterOptions options;
  options.frame_bytes = frame_bytes;
  std::string error;
  writer_ = store::TraceWriter::Open(path, id, options, &error);
  EXPECT_NE(writer_, nullptr) << error;
}

StreamBuilder::~StreamBuilder() { Close(); }

void StreamBuilder::Close() {
  if (writer_ == nullptr) return;
  if (end_) {
    format::EndRecord e{};
    e.reason = static_cast<uint32_t>(format::EndReason::kExit);
    e.mode = static_cast<uint32_t>(format::CaptureModeId::kFull);
    e.ops = ops_;
    e.records = pending_records_;
    e.tensors = tensors_;
    writer_->Append(format::RecordType::kEnd, e);
  }
  std::string error;
  EXPECT_TRUE(writer_->Close(&error)) << error;
  writer_.reset();
}

void StreamBuilder::Gemm(const format::GemmRecord& g) {
  ops_ = std::max(ops_, g.seq + 1);
  ++pending_records_;
  writer_->Append(format::RecordType::kGemm, g);
}

void StreamBuilder::Collective(const format::CollectiveRecord& c) {
  ops_ = std::max(ops_, c.seq + 1);
  ++pending_records_;
  writer_->Append(format::RecordType::kCollective, c);
}

void StreamBuilder::CommInit(uint64_t comm_hash, int comm_rank, int comm_size) {
  format::CommInitRecord c{};
  c.api = static_cast<uint16_t>(format::ApiId::kNcclCommInitRank);
  c.comm_hash = comm_hash;
  c.comm_rank = comm_rank;
  c.comm_size = comm_size;
  ++pending_records_;
  writer_->Append(format::RecordType::kCommInit, c);
}

void StreamBuilder::Tensor(uint64_t seq, format::TensorSlot slot, DType dtype, int64_t rows, int64_t cols,
                           int64_t batch, const std::string& full, bool shuffled) {
  Tensor(seq, slot, dtype, rows, cols, batch, full, shuffled ? format::PayloadKind::kShuffled : format::PayloadKind::kFull);
}

void StreamBuilder::Tensor(uint64_t seq, format::TensorSlot slot, DType dtype, int64_t rows, int64_t cols,
                           int64_t batch, const std::string& full, format::PayloadKind kind) {
  std::string bytes = full;
  const uint32_t e = format::DTypeSize(static_cast<uint8_t>(dtype));
  if (kind == format::PayloadKind::kShuffled && e > 0)
    format::ShuffleBytes(full.data(), full.size() / e, e, bytes.data());
  if (kind == format::PayloadKind::kFloatCoded) {
    bytes.resize(store::FloatCodecMaxBytes(full.size() / e, e));
    bytes.resize(store::FloatEncode(full.data(), full.size() / e, e, bytes.data()));
  }
  format::TensorRecord t{};
  t.seq = seq;
  t.slot = static_cast<uint8_t>(slot);
  t.payload_kind = static_cast<uint8_t>(kind);
  t.dtype = static_cast<uint8_t>(dtype);
  t.rows = rows;
  t.cols = cols;
  t.batch = batch;
  t.payload_bytes = bytes.size();
  ++pending_records_;
  ++tensors_;
  writer_->Append(format::RecordType::kTensor, t, bytes.data(), bytes.size());
}

void StreamBuilder::Raw(uint16_t type, const std::string& body, const std::string& payload) {
  std::string all = body + payload;
  ++pending_records_;
  writer_->Append(static_cast<format::RecordType>(type), all.data(), all.size());
}

void StreamBuilder::Graph(const Op& op) {
  format::BackendGraphRecord g{};
  g.seq = op.seq;
  g.api = static_cast<uint16_t>(format::ApiId::kCudnnBackendExecute);
  g.tensor_entry_bytes = sizeof(format::GraphTensor);
  g.op_entry_bytes = sizeof(format::GraphOp);
  g.tensor_count = static_cast<uint32_t>(op.graph_tensors.size());
  g.op_count = static_cast<uint32_t>(op.graph_ops.size());
  g.stream = 1;
  std::string entries(reinterpret_cast<const char*>(op.graph_tensors.data()),
                      op.graph_tensors.size() * sizeof(format::GraphTensor));
  entries.append(reinterpret_cast<const char*>(op.graph_ops.data()), op.graph_ops.size() * sizeof(format::GraphOp));
  g.payload_bytes = entries.size();
  Raw(static_cast<uint16_t>(format::RecordType::kBackendGraph), std::string(reinterpret_cast<const char*>(&g), sizeof g),
      entries);
  ops_ = std::max(ops_, op.seq + 1);
  for (const auto* side : {&op.graph_in, &op.graph_out})
    for (const auto& [index, tensor] : *side) {
      format::TensorRecord t{};
      t.seq = op.seq;
      t.slot = static_cast<uint8_t>(side == &op.graph_in ? format::TensorSlot::kGraphIn : format::TensorSlot::kGraphOut);
      t.payload_kind = static_cast<uint8_t>(format::PayloadKind::kFull);
      t.dtype = tensor->meta.dtype;
      t.index = index;
      t.rows = tensor->meta.rows, t.cols = tensor->meta.cols, t.batch = tensor->meta.batch;
      t.payload_bytes = tensor->data.size();
      ++pending_records_;
      ++tensors_;
      writer_->Append(format::RecordType::kTensor, t, tensor->data.data(), tensor->data.size());
    }
}

GraphBuilder::GraphBuilder() { op_.kind = OpKind::kGraph; }

int32_t GraphBuilder::Tensor(int32_t type, std::vector<int64_t> dims, bool is_virtual, std::vector<int64_t> strides) {
  format::GraphTensor t{};
  t.uid = static_cast<int64_t>(op_.graph_tensors.size()) + 1;
  t.data_type = type;
  t.nb_dims = static_cast<uint8_t>(dims.size());
  t.is_virtual = is_virtual;
  if (strides.empty()) {
    strides.assign(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  }
  std::copy(dims.begin(), dims.end(), t.dims);
  std::copy(strides.begin(), strides.end(), t.strides);
  op_.graph_tensors.push_back(t);
  return static_cast<int32_t>(op_.graph_tensors.size()) - 1;
}

int32_t GraphBuilder::Scalar(double value) {
  const int32_t i = Tensor(kCudnnFloat, {1, 1, 1, 1}, false);
  op_.graph_tensors[static_cast<size_t>(i)].by_value = 1;
  op_.graph_tensors[static_cast<size_t>(i)].value = value;
  return i;
}

void GraphBuilder::Capture(int32_t i, bool after, const std::vector<double>& memory) {
  const format::GraphTensor& t = op_.graph_tensors[static_cast<size_t>(i)];
  const DType dt = t.data_type == kCudnnFloat  ? DType::kF32
                   : t.data_type == kCudnnBf16 ? DType::kBF16
                   : t.data_type == kCudnnHalf ? DType::kF16
                                               : DType::kI32;
  auto c = std::make_unique<analyzer::Tensor>();
  c->meta.dtype = static_cast<uint8_t>(dt);
  c->meta.rows = static_cast<int64_t>(memory.size());
  c->meta.cols = c->meta.batch = 1;
  c->data = Encode(dt, memory);
  (after ? op_.graph_out : op_.graph_in)[static_cast<uint32_t>(i)] = std::move(c);
}

void GraphBuilder::Add(int32_t type, int32_t mode, std::vector<int32_t> operands, int64_t axis) {
  format::GraphOp g{};
  g.type = type, g.mode = mode, g.compute_type = kCudnnFloat, g.axis = axis;
  for (int r = 0; r < format::kGraphOpMaxOperands; ++r)
    format::GraphOperand(g, r) = r < static_cast<int>(operands.size()) ? operands[static_cast<size_t>(r)] : -1;
  op_.graph_ops.push_back(g);
}

Op CausalAttentionOp(uint64_t seq, int64_t b, int64_t h, int64_t s, int64_t d, uint64_t seed, int64_t fault) {
  enum : int32_t { kAdd = 0, kMul = 1, kDiv = 6, kSub = 9, kExp = 13, kLog = 15, kCmpGe = 303, kGenIndex = 501,
                   kSelect = 601, kRedAdd = 0, kRedMax = 3 };
  const double scale = static_cast<float>(1 / std::sqrt(static_cast<double>(d)));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0, 1);
  std::vector<double> q(static_cast<size_t>(b * h * s * d)), k(q.size()), v(q.size()), o(q.size());
  std::vector<double> stats(static_cast<size_t>(b * h * s));
  for (auto* t : {&q, &k, &v})
    for (double& x : *t) x = RoundTo(DType::kBF16, nd(rng));
  // The FP64 reference, row by row (causal: key j visible from query i when j <= i).
  std::vector<double> e(static_cast<size_t>(s));
  for (int64_t bh = 0; bh < b * h; ++bh)
    for (int64_t i = 0; i < s; ++i) {
      double m = -HUGE_VAL, l = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (int64_t t = 0; t < d; ++t)
          dot += q[static_cast<size_t>((bh * s + i) * d + t)] * k[static_cast<size_t>((bh * s + j) * d + t)];
        e[static_cast<size_t>(j)] = scale * dot;
        m = std::max(m, scale * dot);
      }
      for (int64_t j = 0; j <= i; ++j) l += (e[static_cast<size_t>(j)] = std::exp(e[static_cast<size_t>(j)] - m));
      for (int64_t c = 0; c < d; ++c) {
        double acc = 0;
        for (int64_t j = 0; j <= i; ++j) acc += e[static_cast<size_t>(j)] / l * v[static_cast<size_t>((bh * s + j) * d + c)];
        o[static_cast<size_t>((bh * s + i) * d + c)] = RoundTo(DType::kBF16, acc);
      }
      stats[static_cast<size_t>(bh * s + i)] = RoundTo(DType::kF32, m + std::log(l));
    }
  if (fault >= 0) {
    double& x = o[static_cast<size_t>(fault)];
    x = RoundTo(DType::kBF16, x + 0.5 + 0.1 * std::fabs(x));
  }
  GraphBuilder g;
  const std::vector<int64_t> sc = {b, h, s, s}, row = {b, h, s, 1};
  const int32_t qi = g.Tensor(kCudnnBf16, {b, h, s, d}, false);
  const int32_t kt = g.Tensor(kCudnnBf16, {b, h, d, s}, false, {h * s * d, s * d, 1, d});  // Kᵀ: K's strides swapped
  const int32_t vi = g.Tensor(kCudnnBf16, {b, h, s, d}, false), oi = g.Tensor(kCudnnBf16, {b, h, s, d}, false);
  const int32_t st = g.Tensor(kCudnnFloat, row, false);
  const int32_t sci = g.Scalar(scale), ninf = g.Scalar(-HUGE_VAL);
  const int32_t s1 = g.Tensor(kCudnnFloat, sc), s2 = g.Tensor(kCudnnFloat, sc);
  g.Matmul(qi, kt, s1);
  g.Pointwise(kMul, s1, sci, s2);
  const int32_t ri = g.Tensor(kCudnnInt32, sc), ci = g.Tensor(kCudnnInt32, sc), keep = g.Tensor(kCudnnBool, sc);
  const int32_t s3 = g.Tensor(kCudnnFloat, sc);
  g.Pointwise(kGenIndex, s2, -1, ri, -1, 2);
  g.Pointwise(kGenIndex, s2, -1, ci, -1, 3);
  g.Pointwise(kCmpGe, ri, ci, keep);
  g.Pointwise(kSelect, s2, ninf, s3, keep);
  const int32_t mx = g.Tensor(kCudnnFloat, row), sub = g.Tensor(kCudnnFloat, sc), ex = g.Tensor(kCudnnFloat, sc);
  const int32_t sum = g.Tensor(kCudnnFloat, row), lg = g.Tensor(kCudnnFloat, row), p = g.Tensor(kCudnnBf16, sc);
  g.Reduction(kRedMax, s3, mx);
  g.Pointwise(kSub, s3, mx, sub);
  g.Pointwise(kExp, sub, -1, ex);
  g.Reduction(kRedAdd, ex, sum);
  g.Pointwise(kLog, sum, -1, lg);
  g.Pointwise(kAdd, mx, lg, st);
  g.Pointwise(kDiv, ex, sum, p);
  g.Matmul(p, vi, oi);
  g.Capture(qi, false, q);
  g.Capture(kt, false, k);
  g.Capture(vi, false, v);
  g.Capture(oi, true, o);
  g.Capture(st, true, stats);
  g.op().seq = seq;
  g.op().api = static_cast<uint16_t>(format::ApiId::kCudnnBackendExecute);
  return std::move(g.op());
}

Op CsbrOp(uint64_t seq, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd(0, 1);
  std::vector<double> x(static_cast<size_t>(n * c * h * w)), wt(static_cast<size_t>(k * c * 9));
  std::vector<double> scale(static_cast<size_t>(k)), bias(static_cast<size_t>(k));
  for (double& e : x) e = RoundTo(DType::kF16, nd(rng));
  for (double& e : wt) e = RoundTo(DType::kF16, nd(rng) / 8);
  for (double& e : scale) e = RoundTo(DType::kF32, 1 + nd(rng) / 4);
  for (double& e : bias) e = RoundTo(DType::kF32, nd(rng) / 4);
  std::vector<double> y(static_cast<size_t>(n * k * h * w));
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t ki = 0; ki < k; ++ki)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) {
          double acc = 0;
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t b = 0; b < 3; ++b) {
                const int64_t ii = i - 1 + a, jj = j - 1 + b;
                if (ii < 0 || ii >= h || jj < 0 || jj >= w) continue;
                acc += x[static_cast<size_t>(((ni * c + ci) * h + ii) * w + jj)] *
                       wt[static_cast<size_t>(((ki * c + ci) * 3 + a) * 3 + b)];
              }
          y[static_cast<size_t>(((ni * k + ki) * h + i) * w + j)] =
              RoundTo(DType::kF16, std::max(0.0, acc * scale[static_cast<size_t>(ki)] + bias[static_cast<size_t>(ki)]));
        }
  GraphBuilder g;
  const int32_t xi = g.Tensor(kCudnnHalf, {n, c, h, w}, false);
  const int32_t wi = g.Tensor(kCudnnHalf, {k, c, 3, 3}, false);
  const int32_t conv = g.Tensor(kCudnnFloat, {n, k, h, w});
  const int32_t sc = g.Tensor(kCudnnFloat, {1, k, 1, 1}, false), bi = g.Tensor(kCudnnFloat, {1, k, 1, 1}, false);
  const int32_t t1 = g.Tensor(kCudnnFloat, {n, k, h, w}), t2 = g.Tensor(kCudnnFloat, {n, k, h, w});
  const int32_t yi = g.Tensor(kCudnnHalf, {n, k, h, w}, false);
  g.Add(10, 1, {xi, wi, conv});  // CONVOLUTION_FORWARD, cross-correlation
  format::GraphOp& cg = g.op().graph_ops.back();
  cg.compute_type = kCudnnFloat, cg.spatial = 2, cg.alpha = 1;
  for (int d = 0; d < 2; ++d) cg.pre_pad[d] = cg.post_pad[d] = 1, cg.stride[d] = cg.dilation[d] = 1;
  g.Pointwise(1, conv, sc, t1);    // MUL
  g.Pointwise(0, t1, bi, t2);      // ADD
  g.Pointwise(100, t2, -1, yi);    // RELU_FWD
  g.Capture(xi, false, x);
  g.Capture(wi, false, wt);
  g.Capture(sc, false, scale);
  g.Capture(bi, false, bias);
  g.Capture(yi, true, y);
  g.op().seq = seq;
  g.op().api = static_cast<uint16_t>(format::ApiId::kCudnnBackendExecute);
  return std::move(g.op());
}

format::GemmRecord GemmRec(uint64_t seq, int64_t m, int64_t n, int64_t k, DType ab, DType c, int32_t compute_type,
                           double alpha, double beta) {
  format::GemmRecord g{};
  g.seq = seq;
  g.api = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = m;
  g.ldb = k;
  g.ldc = m;
  g.batch_count = 1;
  g.a_type = g.b_type = CudaType(ab);
  g.c_type = CudaType(c);
  g.compute_type = compute_type;
  g.math_mode = 0;
  g.alpha = alpha;
  g.beta = beta;
  return g;
}

format::CollectiveRecord AllReduceRec(uint64_t seq, uint64_t comm_hash, uint64_t index, int comm_rank, int comm_size,
                                      DType dtype, uint64_t count, int red_op) {
  format::CollectiveRecord c{};
  c.seq = seq;
  c.api = static_cast<uint16_t>(format::ApiId::kNcclAllReduce);
  c.red_op = static_cast<uint8_t>(red_op);
  c.comm_hash = comm_hash;
  c.comm_rank = comm_rank;
  c.comm_size = comm_size;
  c.nccl_dtype = NcclType(dtype);
  c.root_or_peer = -1;
  c.count = count;
  c.comm_op_index = index;
  return c;
}

}  // namespace ttrace::analyzer::testing
