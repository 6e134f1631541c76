// Replica consistency (`replica.identical`): operands that ranks held bitwise identical must stay identical.
//
// Data-parallel replicas run the same program on different data: at the same step, the same GEMM reads the same
// weights on every replica, bitwise, because every replica applies the same reduced gradient. A replica whose
// weights drift (an optimizer step on its local gradient, a missed update, a bad GPU) still computes every op
// correctly for its inputs, so no other check sees it. This check finds the first op where replicas part.
//
// What is compared, with no knowledge of the layout:
// - Ranks whose op sequences have the same signatures (kind, API, shapes, types, transposes, leading dimensions,
//   epilogues, scalars: everything but seq, times, handles, pointers and the status) form a candidate group; op i
//   of one is op i of the others. GEMMs, cuBLASLt matmuls and cuDNN convolutions take part; their input operands
//   (A, B; x, w, dy) are fingerprinted (kernels/fingerprint.h, the digest a GPU-side fingerprint capture gives).
// - An operand is identified across steps by (op signature, slot, the rank's device pointer): a weight updated in
//   place is read from the same buffer at every step. When the same operand of op i is bitwise identical on two or
//   more ranks of a group, and not constant (all elements equal: zeros match by chance), those ranks are
//   established as its replicas. At every later op reading the same operand (same signature and slot, each
//   replica at the pointer it had then), the replicas must again agree bitwise; where they do not, that is a
//   finding at the op, naming the ranks that differ from the majority of the replicas (or, without a majority,
//   the classes). Tensor-parallel ranks are covered the same way (their replicated inputs), and activations, which
//   differ between data-parallel ranks, are never established.
// - One finding per parting: later operands that part between the same replicas in the same way are counted in
//   it ("N more operands parted the same way, the last at seq S"), not repeated.
//
// Blind spots (README.md says them too): a replica different from its first GEMM on (never identical, so
// never established); weights not updated in place (a new buffer every step); groups whose op sequences differ
// (a replica that also changed control flow). A tensor not captured is not compared.
//
// Digests are small (ReplicaOp: a signature and up to three fingerprints per op): the streaming check (check.cc)
// digests each op while its payloads are loaded and compares at the end. Single-threaded.
#ifndef TTRACE_ANALYZER_REPLICA_CHECK_H_
#define TTRACE_ANALYZER_REPLICA_CHECK_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

struct ReplicaOperand {
  uint8_t slot = 0xff;             // format::TensorSlot; 0xff: unused entry
  bool present = false;            // the tensor was captured
  bool constant = false;           // every element has the same bits
  uint64_t ptr = 0;                // device address on its rank
  uint64_t fingerprint = 0;        // kernels::FingerprintHost of the payload
  const Tensor* tensor = nullptr;  // for the evidence (elements that differ); may be null
};

struct ReplicaOp {
  uint64_t seq = 0;
  uint16_t api = 0;
  uint64_t signature = 0;
  std::array<ReplicaOperand, 3> operands;
};

struct RankReplicaDigest {
  int rank = -1;
  std::string path;            // the rank's stream, to read a parting's payloads again (TensorLoader)
  std::vector<ReplicaOp> ops;  // the rank's GEMM, cuBLASLt and convolution ops in seq order
};

// The digest of one op, or false when it takes no part (other kinds). `op` must outlive uses of its tensors.
bool DigestReplicaOp(const Op& op, ReplicaOp* out);
RankReplicaDigest DigestRank(const RankTrace& trace);

// Reads the payloads of deferred tensors of the stream at `path` (trace_model.h DeferredTensorReader::Load).
using TensorLoader = std::function<absl::Status(const std::string& path, std::vector<Tensor*> tensors)>;

// Compares the ranks' digests; adds findings (check "replica.identical", model "exact") and the summary's
// `replicas` to `report`. The evidence of a parting (the elements that differ) is read from the two operands'
// tensors: when their payloads were released after digesting (a streaming check), `load` reads them again and
// they are released after; without `load`, or when it fails, the finding says the evidence could not be read.
void CheckReplicaDigests(const std::vector<RankReplicaDigest>& ranks, CheckReport* report,
                         const TensorLoader& load = {});

// DigestRank on every rank, then CheckReplicaDigests.
void CheckReplicas(const TraceSet& set, CheckReport* report);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_REPLICA_CHECK_H_
