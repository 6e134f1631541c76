// Joining is barrier epoch 1; the name of the segment is removed as soon as every rank has joined, so that
// nothing is left in /dev/shm whichever way the ranks end later.
#include "tools/simgpu/nccl/comm.h"

#include <unistd.h>

#include "tools/simgpu/nccl/log.h"

namespace simgpu::nccl {

ncclResult_t Comm::InitRank(int nranks, const ncclUniqueId& id, int rank, int device) {
  rank_ = rank;
  nranks_ = nranks;
  device_ = device;
  ncclResult_t r = Segment::Open(id, nranks, &seg_);
  if (r == ncclSuccess) r = Join(device);
  status_.store(r);
  return r;
}

ncclResult_t Comm::Join(int device) {
  RankSlot* slot = seg_->slot(rank_);
  int32_t expected = 0;
  if (!slot->pid.compare_exchange_strong(expected, static_cast<int32_t>(getpid()))) {
    Warn("ncclCommInitRank: rank %d of %d joined the communicator twice", rank_, nranks_);
    return ncclInvalidUsage;
  }
  slot->device = device;
  std::string error;
  ncclResult_t r = Barrier("ncclCommInitRank", &error);
  seg_->Unlink();
  if (r != ncclSuccess) {
    Error("rank %d/%d: %s", rank_, nranks_, error.c_str());
    PublishFailure(seg_.get(), rank_, error);
    return r;
  }
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer != rank_ && seg_->slot(peer)->device == device) {
      Warn("ncclCommInitRank: Duplicate GPU detected: rank %d and rank %d both on CUDA device %d (call "
           "cudaSetDevice, e.g. with LOCAL_RANK, before ncclCommInitRank)",
           rank_, peer, device);
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

ncclResult_t Comm::InitAll(const std::vector<Comm*>& comms, const std::vector<int>& devices) {
  const int n = static_cast<int>(comms.size());
  std::shared_ptr<Segment> seg = Segment::Anonymous(n);
  if (seg == nullptr) return ncclSystemError;
  for (int i = 0; i < n; ++i) {
    Comm* c = comms[i];
    c->rank_ = i;
    c->nranks_ = n;
    c->device_ = devices[i];
    c->seg_ = seg;
    RankSlot* slot = seg->slot(i);
    slot->pid.store(static_cast<int32_t>(getpid()));
    slot->device = devices[i];
    slot->epoch.store(1);
    c->epoch_ = 1;
  }
  return ncclSuccess;
}

uint64_t Comm::BeginIssue() {
  std::lock_guard<std::mutex> lock(mu_);
  return issued_++;
}

void Comm::WaitTurn(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ran_ == ticket; });
}

void Comm::EndTurn(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  ran_ = ticket + 1;
  cv_.notify_all();
}

void Comm::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ran_ == issued_; });
}

ncclResult_t Comm::Barrier(const char* what, std::string* error) {
  ++epoch_;
  return nccl::Barrier(wait_context(), epoch_, what, error);
}

void Comm::Fail(ncclResult_t code, const std::string& message) {
  int expected = ncclSuccess;
  if (status_.compare_exchange_strong(expected, code)) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = message;
  }
  Error("rank %d/%d: %s; the communicator can no longer be used", rank_, nranks_, message.c_str());
  PublishFailure(seg_.get(), rank_, message);
}

void Comm::Abort() {
  local_abort_.store(true);
  int expected = ncclSuccess;
  if (status_.compare_exchange_strong(expected, ncclSystemError)) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = "ncclCommAbort was called";
  }
  if (seg_ != nullptr) PublishFailure(seg_.get(), rank_, "ncclCommAbort was called");
}

std::string Comm::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

}  // namespace simgpu::nccl
