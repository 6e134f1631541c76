// Test helpers for the analyzer (linked only into tests): number-format rounding, and synthetic trace streams
// written with the real TraceWriter, so tests exercise the same bytes the shim would produce.
#ifndef TTRACE_ANALYZER_TEST_UTIL_H_
#define TTRACE_ANALYZER_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/trace_model.h"
#include "store/trace_writer.h"
#include "ttrace/format.h"

namespace ttrace::analyzer::testing {

// A fresh empty directory under $TEST_TMPDIR (or /tmp), unique per process and call.
std::string TempDir(const std::string& name);

// Round-to-nearest-even of x to a binary format with p significand bits (implicit bit included), minimum normal
// exponent emin and largest finite value max (gradual underflow; overflow to ±Inf). Exact: no double rounding.
double RoundToFormat(double x, int p, int emin, double max);
double RoundTo(format::DType dtype, double x);  // the storage formats (f32, f16, bf16, f64, e4m3, e5m2)
double RoundToTf32(double x);                   // TF32: p = 11 with FP32's range
double TruncateToTf32(double x);                // TF32 by dropping the low 13 bits (what a tensor core may do)

// Storage bytes of values (each must be representable in dtype: use RoundTo first) and back.
std::string Encode(format::DType dtype, const std::vector<double>& values);
// Flips bit `bit` (0 = least significant of the element's storage) of element `index` of an encoded buffer.
void FlipBit(std::string* bytes, format::DType dtype, uint64_t index, int bit);

// A CUDA_R_* value for a DType (inverse of DTypeFromCuda for the real types).
int32_t CudaType(format::DType dtype);
int32_t NcclType(format::DType dtype);

// Writes one rank's stream.
class StreamBuilder {
 public:
  StreamBuilder(const std::string& path, int rank, int world_size, const std::string& job = "test-job",
                size_t frame_bytes = 1 << 20);
  ~StreamBuilder();

  void Gemm(const format::GemmRecord& g);
  void Collective(const format::CollectiveRecord& c);
  void CommInit(uint64_t comm_hash, int comm_rank, int comm_size);
  // `bytes` in the kFull layout; with `shuffled` they are written byte-shuffled (PayloadKind::kShuffled).
  void Tensor(uint64_t seq, format::TensorSlot slot, format::DType dtype, int64_t rows, int64_t cols,
              int64_t batch, const std::string& bytes, bool shuffled = false);
  // `bytes` in the kFull layout, written as `kind` (kFull, kShuffled or kFloatCoded).
  void Tensor(uint64_t seq, format::TensorSlot slot, format::DType dtype, int64_t rows, int64_t cols,
              int64_t batch, const std::string& bytes, format::PayloadKind kind);
  void Raw(uint16_t type, const std::string& body, const std::string& payload = "");
  // A cudnnBackendExecute as the shim writes it: `op`'s graph (record, tensor and operation entries) and its
  // captured graph tensors (graph_in, graph_out; dense payloads, rows = elements).
  void Graph(const Op& op);
  // Writes the EndRecord the shim writes at a clean close (counts of what was appended), then closes. The
  // destructor closes too.
  void Close();
  // Close() without the EndRecord: the stream of a killed writer.
  void CloseWithoutEnd() {
    end_ = false;
    Close();
  }
  void Flush() { writer_->Flush(); }

 private:
  std::unique_ptr<store::TraceWriter> writer_;
  bool end_ = true;
  uint64_t ops_ = 0, tensors_ = 0;
  uint64_t pending_records_ = 0;  // records appended, for EndRecord.records
};

// Records with sensible defaults for tests.
format::GemmRecord GemmRec(uint64_t seq, int64_t m, int64_t n, int64_t k, format::DType ab, format::DType c,
                           int32_t compute_type = 68, double alpha = 1, double beta = 0);
format::CollectiveRecord AllReduceRec(uint64_t seq, uint64_t comm_hash, uint64_t index, int comm_rank,
                                      int comm_size, format::DType dtype, uint64_t count, int red_op = 0);

// cudnnDataType_t, cudnnPointwiseMode_t and cudnnReduceTensorOp_t values test graphs use.
enum : int32_t { kCudnnFloat = 0, kCudnnHalf = 2, kCudnnInt32 = 4, kCudnnBf16 = 9, kCudnnBool = 11 };

// One recorded cudnnBackendExecute built tensor by tensor and operation by operation, its captures dense.
class GraphBuilder {
 public:
  GraphBuilder();
  // A tensor (packed row-major unless strides are given); returns its number.
  int32_t Tensor(int32_t type, std::vector<int64_t> dims, bool is_virtual = true, std::vector<int64_t> strides = {});
  int32_t Scalar(double value);  // FP32 [1, 1, 1, 1] by value
  // Captured data of tensor i, in memory order (its span), before (`after` false) or after the execution.
  void Capture(int32_t i, bool after, const std::vector<double>& memory);
  void Add(int32_t type, int32_t mode, std::vector<int32_t> operands, int64_t axis = -1);
  void Pointwise(int32_t mode, int32_t x, int32_t b, int32_t y, int32_t t = -1, int64_t axis = -1) {
    Add(13, mode, {x, b, y, t}, axis);
  }
  void Reduction(int32_t mode, int32_t x, int32_t y) { Add(22, mode, {x, y}); }
  void Matmul(int32_t a, int32_t b, int32_t c, int32_t m = -1, int32_t n = -1, int32_t k = -1) {
    Add(19, -1, {a, b, c, m, n, k});
  }
  Op& op() { return op_; }

 private:
  Op op_;
};

// cudnn-frontend's composite causal attention (Q·Kᵀ, scale, top-left causal mask, softmax with Stats, P·V), BF16
// Q, K, V, O [b, h, s, d] and FP32 Stats, random inputs from `seed` (entries of Q and K scaled so that scores
// spread over a few units); O and Stats the FP64 reference rounded to their types (what a correct device may give).
// `fault` >= 0: O's element of that index off by 0.5 + 10%.
Op CausalAttentionOp(uint64_t seq, int64_t b, int64_t h, int64_t s, int64_t d, uint64_t seed, int64_t fault = -1);

// cudnn-frontend's CSBR (conv.fused): y = relu(conv3x3(x, w)·scale + bias), pad 1, FP16 x [n, c, h, w], w
// [k, c, 3, 3] and y, FP32 scale and bias [1, k, 1, 1], virtual FP32 intermediates; random inputs, y the FP64
// reference rounded to FP16.
Op CsbrOp(uint64_t seq, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k);

}  // namespace ttrace::analyzer::testing

#endif  // TTRACE_ANALYZER_TEST_UTIL_H_
