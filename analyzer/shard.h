// Shards of a distributed run, as `ttrace diff` sees them: each captured GEMM decoded into its logical operands,
// the communicators each rank belongs to, how a candidate GEMM is split across them relative to the reference
// GEMM, and the merge of shards into full tensors.
//
// A split is a factor per GEMM dimension (m, n: the output's rows and columns; k: the inner dimension) and the
// communicator whose ranks hold the slices, in comm_rank order (slice i of a dimension is on the member with
// comm_rank i). Column- and row-parallel linears and data-parallel batch splits are all of this form: in cuBLAS's
// column-major view of a row-major Y = X·W, m is the output features, n the batch rows and k the input features,
// so a column-parallel linear splits m, a row-parallel one k (its partial outputs are summed by the all-reduce
// that follows) and a data-parallel batch split n (or k, for weight gradients, summed by the gradient
// reduction). Ranks that hold the same slices are replicas; the lowest one is used.
//
// Mapping files (docs/diff.md) override inference per reference op. Pure functions over a loaded TraceSet;
// single-threaded.
#ifndef TTRACE_ANALYZER_SHARD_H_
#define TTRACE_ANALYZER_SHARD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analyzer/error_model.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// A GEMM's logical operands, dense column-major FP64: op(A) m x k, op(B) k x n, C m x n. A strided-batched GEMM
// whose A is shared by every batch (stride 0) is the one GEMM C = op(A)·[op(B_0) ... op(B_b-1)] with n·batch
// columns.
struct LogicalGemm {
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  format::DType ab_type = format::DType::kInvalid, c_type = format::DType::kInvalid;
  GemmPrecision precision;
  std::vector<double> a, b, c_in, c;  // c_in empty when beta == 0
};

// The logical shape without decoding (n folded as above); batch > 1 left when A is not shared.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
};
GemmShape LogicalShape(const format::GemmRecord& g);

// Decodes a GEMM op. FailedPrecondition (the reason) when it cannot be compared: tensors missing or unusable,
// per-batch A, unknown scalars, no error model.
absl::StatusOr<LogicalGemm> DecodeLogicalGemm(const Op& op);

// Whether x is y divided by p, each element within one rounding of format f (u·|y/p| + eta), and y is not all zero:
// an input divided by the group size before a sum reduction (an average taken as divide-then-sum, as PyTorch DDP's
// reducer takes it).
bool IsDividedCopy(const std::vector<double>& x, const std::vector<double>& y, int p, const FloatFormat& f);

// op(X) of every batch of a column-major operand stored rows x cols per batch: the batches' transposes when `trans`
// (columns appended batch after batch), else x. With batch 1 and trans, also the stored order of a logical rows x
// cols operand that op() transposes.
std::vector<double> OpFolded(const std::vector<double>& x, int64_t rows, int64_t cols, int64_t batch, bool trans);

// Values as stored: an element type and the bytes (kFull layout), e.g. a GEMM's captured output.
struct StoredValues {
  format::DType dtype = format::DType::kInvalid;
  absl::string_view bytes;
};
// A run of a reduction's input that is one of `outputs` divided by p, each element within one rounding
// (IsDividedCopy): one gradient of a data-parallel bucket (PyTorch DDP packs many gradients side by side into one
// buffer, divides it by the group size and sum-all-reduces it).
struct DividedSegment {
  size_t offset = 0, length = 0;
  size_t source = 0;  // index into `outputs`
  int divisor = 0;    // RecentGemmSegments: the p it was found with
  size_t op = 0;      // RecentGemmSegments: the index in `ops` of the GEMM whose output it is
};
// The segments of `x` that are divided copies of `outputs` (p = 1: copies within one rounding), found left to right,
// none overlapping; elements no output explains (a bias gradient no GEMM computed, padding) are skipped. A position
// is probed only when its value, as a float, has the sign, exponent and top 8 significand bits of a value within one
// rounding of some output's first element divided by p (a 16 KB bitmap), then against those outputs (a binary search
// over the sorted first elements); a probed output is decoded block by block while it matches, never whole.
// Measured (bench/bucket_scan_bench: 6.5 M elements, 48 outputs): about the cost of decoding x, match or not.
std::vector<DividedSegment> FindDividedSegments(const std::vector<double>& x, const std::vector<StoredValues>& outputs,
                                                int p, const FloatFormat& f);
// The segments of the input of reduction `j` (an all-reduce or reduce-scatter in `ops`, one rank's) that are outputs
// of the rank's last 64 GEMMs divided by each of `divisors` (1: copies), in that order; empty when its input is not
// captured or not floating point. The input is decoded only when some GEMM output of its type fits in it. Each
// segment's `op` names its GEMM.
std::vector<DividedSegment> RecentGemmSegments(const std::vector<Op>& ops, size_t j, const std::vector<int>& divisors);

// Communicators of a trace set, from its collective records, then from the communicator records of those on
// which a rank issued none (CommsOf lists them last).
class CommLayout {
 public:
  explicit CommLayout(const TraceSet& set);
  int CoordOf(int rank, uint64_t comm) const;     // comm_rank of `rank`, -1 when not a member
  int SizeOf(uint64_t comm) const;                // 0 when unknown
  std::vector<uint64_t> CommsOf(int rank) const;  // in order of first use

 private:
  std::map<int, std::vector<std::pair<uint64_t, int>>> by_rank_;
  std::map<uint64_t, int> size_;
};

// A communicator is named by its hash on one rank; other ranks use the communicator in the same role: the one they
// first used in the same position (rank 0's first, second, ... communicator), e.g. the TP group of their own DP
// replica.
// A split dimension may be grouped: the reference dimension is `groups` equal blocks, each split `factor` ways, and
// slice i holds part i of every block, in block order (a fused QKV weight cut by heads: 3 groups; tokens ordered
// position-major, t = s·batch + b, under a batch split: one group per position).
struct DimSplit {
  int factor = 1;
  uint64_t comm = 0;  // 0 when factor == 1
  int role = -1;      // index of `comm` among the naming rank's communicators in order of first use
  int64_t groups = 1;
};
// The full index of local index x (of `len`) on the slice at `coord`, and the slice holding full index f.
int64_t FullIndex(const DimSplit& d, int64_t len, int coord, int64_t x);
int CoordOfFull(const DimSplit& d, int64_t len, int64_t f);
struct GemmSplit {
  DimSplit m, n, k;
  std::string source = "inferred";  // or "mapping"
};
std::string SplitText(const GemmSplit& s);  // "m/2 by comm 0x1a2b, k/2 by comm 0x3c4d"

// Every assignment of `rank`'s communicators to the factors by which `cand` divides `ref` (distinct comms,
// sizes equal to the factors), each split dimension with every group count dividing its local length (at most
// kMaxSplits in all, fewest groups first). Empty when a dimension does not divide or no communicator fits.
inline constexpr size_t kMaxSplits = 4096;
std::vector<GemmSplit> CandidateSplits(const GemmShape& ref, const GemmShape& cand, const CommLayout& comms,
                                       int rank);

// A shard's coordinate along each dimension of `split` (0 where not split), or false when `rank` is not a member.
bool ShardCoords(const GemmSplit& split, const CommLayout& comms, int rank, int* cm, int* cn, int* ck);

// Places block (bi, bj) of `rows` x `cols` into the full (rows·rs.factor) x (cols·cs.factor) column-major matrix
// whose rows are split by `rs` and columns by `cs`.
void PlaceBlock(const std::vector<double>& block, int64_t rows, int64_t cols, int bi, int bj, const DimSplit& rs,
                const DimSplit& cs, std::vector<double>* full);

// Sets each split dimension's role from its comm as `rank` sees it; false when `rank` does not use that comm.
bool ResolveRoles(const CommLayout& comms, int rank, GemmSplit* split);

// A mapping file (docs/diff.md "Mapping file"): per reference op seq, the split to use (`op` lines); per
// candidate rank, the reference ops it owns (`owns` lines: its pipeline stage's ops, when inference from the sends
// and receives cannot tell, e.g. a program whose stages talk through something the shim does not capture).
struct SplitMapping {
  std::map<uint64_t, GemmSplit> ops;
  std::map<int, std::vector<std::pair<uint64_t, uint64_t>>> owns;  // rank -> inclusive reference seq ranges
};
absl::StatusOr<SplitMapping> ParseSplitMapping(const std::string& text);
absl::StatusOr<SplitMapping> ReadSplitMapping(const std::string& path);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_SHARD_H_
