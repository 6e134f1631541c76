// Joining is barrier epoch 1; the name of the segment is removed as soon as every rank has joined, so that
// nothing is left in /dev/shm whichever way the ranks end later. A split's child finds its segment by a name
// derived from the parent's identity, the split's sequence number and the color, so the members need no
// exchange beyond the (color, key) all-gather on the parent.
#include "tools/simgpu/nccl/comm.h"

#include <unistd.h>

#include <algorithm>

#include "tools/simgpu/nccl/log.h"

namespace simgpu::nccl {

ncclResult_t Comm::InitRank(int nranks, const ncclUniqueId& id, int rank, int device) {
  rank_ = rank;
  nranks_ = nranks;
  device_ = device;
  hash_ = HashBytes(id.internal, sizeof id.internal);
  ncclResult_t r = Segment::Open(id, nranks, &seg_);
  if (r == ncclSuccess) r = Join(device);
  if (r != ncclSuccess) {
    int expected = ncclSuccess;
    error_.compare_exchange_strong(expected, r);
  }
  init_pending_.store(false);
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
  ncclUniqueId id;
  ncclResult_t r = MakeUniqueId(&id);
  if (r != ncclSuccess) return r;
  for (int i = 0; i < n; ++i) {
    Comm* c = comms[i];
    c->rank_ = i;
    c->nranks_ = n;
    c->device_ = devices[i];
    c->hash_ = HashBytes(id.internal, sizeof id.internal);
    c->seg_ = seg;
    RankSlot* slot = seg->slot(i);
    slot->pid.store(static_cast<int32_t>(getpid()));
    slot->device = devices[i];
    slot->epoch.store(1);
    c->epoch_ = 1;
  }
  return ncclSuccess;
}

ncclResult_t Comm::Split(int color, int key, Comm* child) {
  const int split = ++splits_;
  const int parity = static_cast<int>(++host_epoch_ & 1);
  RankSlot* mine = seg_->slot(rank_);
  mine->split_color[parity] = color;
  mine->split_key[parity] = key;
  std::string error;
  ncclResult_t r = nccl::Barrier(wait_context(), host_epoch_, "ncclCommSplit", &error, BarrierKind::kHost);
  if (r != ncclSuccess) {
    Fail(r, error);
    return r;
  }
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  // Members in key order, ties by parent rank: a stable insertion as in NCCL's commGetSplitInfo.
  std::vector<int> members;
  for (int p = 0; p < nranks_; ++p) {
    if (seg_->slot(p)->split_color[parity] != color) continue;
    const int k = seg_->slot(p)->split_key[parity];
    auto at = std::find_if(members.begin(), members.end(),
                           [&](int q) { return seg_->slot(q)->split_key[parity] > k; });
    members.insert(at, p);
  }
  const int child_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  uint64_t h = HashBytes(&hash_, sizeof hash_);
  h = HashBytes(&split, sizeof split, h);
  h = HashBytes(&color, sizeof color, h);
  ncclUniqueId id = DerivedUniqueId(h);
  r = child->InitRank(static_cast<int>(members.size()), id, child_rank, device_);
  child->hash_ = h;
  return r;
}

ncclResult_t Comm::status() const {
  ncclResult_t e = error();
  if (e != ncclSuccess) return e;
  if (init_pending_.load()) return ncclInProgress;
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_ > 0 ? ncclInProgress : ncclSuccess;
}

void Comm::BeginAsync() {
  std::lock_guard<std::mutex> lock(mu_);
  ++jobs_;
}

void Comm::EndAsync() {
  std::lock_guard<std::mutex> lock(mu_);
  --jobs_;
  cv_.notify_all();
}

void Comm::WaitAsync() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return jobs_ == 0; });
}

uint64_t Comm::BeginIssue() {
  std::lock_guard<std::mutex> lock(mu_);
  return issued_++;
}

void Comm::WaitTurn(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ran_ == ticket && !busy_; });
  busy_ = true;
}

void Comm::EndTurn(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  ran_ = ticket + 1;
  busy_ = false;
  cv_.notify_all();
}

void Comm::BeginCapturedTurn() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !busy_; });
  busy_ = true;
}

void Comm::EndCapturedTurn() {
  std::lock_guard<std::mutex> lock(mu_);
  busy_ = false;
  cv_.notify_all();
}

void Comm::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ran_ == issued_ && !busy_; });
}

ncclResult_t Comm::Barrier(const char* what, std::string* error) {
  ++epoch_;
  return nccl::Barrier(wait_context(), epoch_, what, error);
}

void Comm::Fail(ncclResult_t code, const std::string& message) {
  int expected = ncclSuccess;
  if (error_.compare_exchange_strong(expected, code)) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = message;
  }
  Error("rank %d/%d: %s; the communicator can no longer be used", rank_, nranks_, message.c_str());
  PublishFailure(seg_.get(), rank_, message);
}

void Comm::Abort() {
  local_abort_.store(true);
  int expected = ncclSuccess;
  if (error_.compare_exchange_strong(expected, ncclSystemError)) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = "ncclCommAbort was called";
  }
  if (seg_ != nullptr) PublishFailure(seg_.get(), rank_, "ncclCommAbort was called");
}

std::string Comm::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

namespace {

// ncclUserRedOpMangle: XOR with a hash of the communicator's address, keeping built-in values (and their
// preimages) fixed; it is its own inverse.
int Mangle(const void* comm, int op) {
  if (op < static_cast<int>(ncclNumOps)) return op;
  uint64_t h = reinterpret_cast<uint64_t>(comm);
  h ^= h >> 32;
  h *= 0x9e3779b97f4a7c13u;
  h >>= 32;
  h &= static_cast<uint64_t>(ncclMaxRedOp);
  int op1 = static_cast<int>(h) ^ op;
  return op1 < static_cast<int>(ncclNumOps) ? op : op1;
}

}  // namespace

int Comm::RedOpSlot(ncclRedOp_t handle) const {
  if (static_cast<int>(handle) < static_cast<int>(ncclNumOps)) return -1;
  return Mangle(this, static_cast<int>(handle)) - static_cast<int>(ncclNumOps);
}

ncclRedOp_t Comm::AddRedOp(const UserRedOp& op) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t slot = 0;
  while (slot < red_ops_.size() && red_ops_[slot].first) ++slot;
  if (slot == red_ops_.size()) red_ops_.emplace_back();
  red_ops_[slot] = {true, op};
  return static_cast<ncclRedOp_t>(Mangle(this, static_cast<int>(ncclNumOps) + static_cast<int>(slot)));
}

bool Comm::FindRedOp(ncclRedOp_t handle, UserRedOp* out) const {
  int slot = RedOpSlot(handle);
  std::lock_guard<std::mutex> lock(mu_);
  if (slot < 0 || static_cast<size_t>(slot) >= red_ops_.size() || !red_ops_[slot].first) return false;
  *out = red_ops_[slot].second;
  return true;
}

bool Comm::RemoveRedOp(ncclRedOp_t handle) {
  int slot = RedOpSlot(handle);
  std::lock_guard<std::mutex> lock(mu_);
  if (slot < 0 || static_cast<size_t>(slot) >= red_ops_.size() || !red_ops_[slot].first) return false;
  red_ops_[slot].first = false;
  return true;
}

}  // namespace simgpu::nccl
