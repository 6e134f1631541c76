// The previous result of each communicator is copied after every collective only when this process has a stale
// fault, so that runs without one pay nothing.
#include "tools/simgpu/nccl/coll_faults.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/reduce_kernels.h"

namespace simgpu::nccl {
namespace {

[[noreturn]] void Unapplicable(const Fault& f, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Unapplicable(const Fault& f, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "simgpu: SIMGPU_FAULT %s cannot be applied: %s\n", DescribeFault(f).c_str(), msg);
  std::fflush(stderr);
  _exit(2);
}

cudaDataType CudaType(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return CUDA_R_8I;
    case ncclUint8: return CUDA_R_8U;
    case ncclInt32: return CUDA_R_32I;
    case ncclUint32: return CUDA_R_32U;
    case ncclInt64: return CUDA_R_64I;
    case ncclUint64: return CUDA_R_64U;
    case ncclFloat16: return CUDA_R_16F;
    case ncclFloat32: return CUDA_R_32F;
    case ncclFloat64: return CUDA_R_64F;
    case ncclBfloat16: return CUDA_R_16BF;
    case ncclFloat8e4m3: return CUDA_R_8F_E4M3;
    default: return CUDA_R_8F_E5M2;
  }
}

bool StaleFaultsExist() {
  static const bool value = [] {
    for (const Fault& f : Faults()) {
      if (f.site == FaultSite::kCollective && f.action == FaultAction::kStale && f.rank == ProcessRank()) {
        return true;
      }
    }
    return false;
  }();
  return value;
}

std::mutex g_mu;
std::map<const Comm*, std::vector<char>>* g_last = new std::map<const Comm*, std::vector<char>>;  // leaked

void RememberResult(const Comm* comm, const void* out, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& v = (*g_last)[comm];
  v.resize(bytes);
  if (bytes > 0) std::memcpy(v.data(), out, bytes);
}

}  // namespace

void NumberCollective(const Comm& comm, Op* op) {
  op->fault_call = NextCallIndex(FaultSite::kCollective);
  op->faults = MatchingFaults(FaultSite::kCollective, op->fault_call);
  const int n = comm.nranks();
  const size_t elems = ResultElements(comm, *op);
  for (const Fault& f : op->faults) {
    const char* name = OpName(op->kind);
    switch (f.action) {
      case FaultAction::kBitFlip:
      case FaultAction::kValue:
        if (elems == 0) Unapplicable(f, "%s has no result on rank %d", name, comm.rank());
        CheckFaultElement(f, elems);
        break;
      case FaultAction::kStale:
        if (elems == 0) Unapplicable(f, "%s has no result on rank %d", name, comm.rank());
        break;
      case FaultAction::kSwap:
        if (op->kind != OpKind::kAllGather) Unapplicable(f, "swap applies to ncclAllGather, not %s", name);
        if (f.swap_i >= n || f.swap_j >= n) Unapplicable(f, "the communicator has %d ranks", n);
        break;
      case FaultAction::kDrop:
        if (!IsReduction(op->kind)) Unapplicable(f, "drop applies to reductions, not %s", name);
        if (f.drop_rank >= n) Unapplicable(f, "the communicator has %d ranks", n);
        if (n < 2) Unapplicable(f, "a communicator of one rank has nothing left to reduce");
        if (elems == 0) Unapplicable(f, "%s has no result on rank %d", name, comm.rank());
        break;
      default:
        Unapplicable(f, "not a collective action");
    }
  }
}

ncclResult_t RunFaultedCollective(Comm& c, const Op& op, std::string* error) {
  int drop = -1;
  for (const Fault& f : op.faults) {
    if (f.action == FaultAction::kDrop) drop = f.drop_rank;
  }
  ncclResult_t r = RunCollective(c, op, drop, error);
  if (r != ncclSuccess) return r;
  const size_t es = DataTypeSize(op.dtype);
  const size_t elems = ResultElements(c, op);
  char* out = static_cast<char*>(op.recv);
  for (const Fault& f : op.faults) {
    if (f.action != FaultAction::kStale) continue;
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_last->find(&c);
    if (it == g_last->end()) Unapplicable(f, "it is the first collective on its communicator");
    if (it->second.empty()) {
      Unapplicable(f, "the previous collective on its communicator has no result on rank %d", c.rank());
    }
    std::memcpy(out, it->second.data(), std::min(it->second.size(), elems * es));
  }
  for (const Fault& f : op.faults) {
    if (f.action != FaultAction::kSwap) continue;
    const size_t block = op.count * es;
    std::swap_ranges(out + f.swap_i * block, out + (f.swap_i + 1) * block, out + f.swap_j * block);
  }
  for (const Fault& f : op.faults) {
    if (f.action == FaultAction::kBitFlip || f.action == FaultAction::kValue) {
      ApplyElementFault(f, out + f.elem * es, CudaType(op.dtype));
    }
  }
  if (StaleFaultsExist()) RememberResult(&c, out, elems * es);
  return ncclSuccess;
}

void ForgetCommResults(const Comm* comm) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_last->erase(comm);
}

}  // namespace simgpu::nccl
