// Creation race: every rank tries shm_open(O_CREAT | O_EXCL); the one that succeeds sizes the segment, lays out
// the header and publishes `ready`. The others open the existing name, wait until it has been sized and is
// ready, then map it whole. A creator that dies half way leaves the others to time out with a message.
#include "tools/simgpu/nccl/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include "tools/simgpu/nccl/log.h"
#include "tools/simgpu/nccl/params.h"

namespace simgpu::nccl {
namespace {

constexpr char kIdMagic[8] = {'S', 'I', 'M', 'G', 'P', 'U', 'I', 'D'};
constexpr uint64_t kSegmentMagic = 0x4c43434e55504753ull;  // "SGPUNCCL"

size_t Align64(size_t n) { return (n + 63) & ~size_t{63}; }

struct Layout {
  size_t slots, staging, ring_headers, ring_data, total;
};

Layout ComputeLayout(size_t nranks, size_t chunk, size_t ring) {
  Layout l;
  l.slots = Align64(sizeof(SegmentHeader));
  l.staging = l.slots + nranks * sizeof(RankSlot);
  l.ring_headers = l.staging + nranks * 2 * chunk;
  l.ring_data = l.ring_headers + nranks * nranks * sizeof(RingHeader);
  l.total = l.ring_data + nranks * nranks * ring;
  return l;
}

// Chunks must hold at least a few elements of every rank for ReduceScatter's per-rank split.
size_t ChunkFor(int nranks) {
  size_t chunk = ChunkBytes();
  size_t min = Align64(static_cast<size_t>(nranks) * 64);
  return chunk < min ? min : chunk;
}

void InitHeader(char* base, int nranks, size_t chunk, size_t total) {
  auto* h = reinterpret_cast<SegmentHeader*>(base);
  h->nranks = static_cast<uint32_t>(nranks);
  h->magic = kSegmentMagic;
  h->chunk_bytes = chunk;
  h->ring_bytes = chunk;
  h->total_bytes = total;
  h->ready.store(1, std::memory_order_release);
}

bool WaitFor(double timeout_s, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

ncclResult_t MakeUniqueId(ncclUniqueId* id) {
  unsigned char rnd[8];
  if (getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd)) {
    Error("ncclGetUniqueId: getrandom failed: %s", std::strerror(errno));
    return ncclSystemError;
  }
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  char* name = id->internal + sizeof kIdMagic;
  int n = std::snprintf(name, sizeof id->internal - sizeof kIdMagic, "/simgpu-nccl-%d-", static_cast<int>(getpid()));
  for (unsigned char b : rnd) n += std::snprintf(name + n, 3, "%02x", b);
  return ncclSuccess;
}

ncclUniqueId DerivedUniqueId(uint64_t hash) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  std::memcpy(id.internal, kIdMagic, sizeof kIdMagic);
  std::snprintf(id.internal + sizeof kIdMagic, sizeof id.internal - sizeof kIdMagic, "/simgpu-nccl-split-%016llx",
                static_cast<unsigned long long>(hash));
  return id;
}

uint64_t HashBytes(const void* data, size_t bytes, uint64_t seed) {
  uint64_t h = seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

bool ParseUniqueId(const ncclUniqueId& id, std::string* name) {
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) return false;
  const char* p = id.internal + sizeof kIdMagic;
  size_t max = sizeof id.internal - sizeof kIdMagic;
  size_t len = strnlen(p, max);
  if (len == 0 || len == max || p[0] != '/') return false;
  name->assign(p, len);
  return true;
}

ncclResult_t Segment::Open(const ncclUniqueId& id, int nranks, std::shared_ptr<Segment>* out) {
  std::string name;
  if (!ParseUniqueId(id, &name)) {
    Warn("ncclCommInitRank: the ncclUniqueId was not produced by ncclGetUniqueId");
    return ncclInvalidArgument;
  }
  const double timeout = TimeoutSeconds();
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    size_t chunk = ChunkFor(nranks);
    Layout l = ComputeLayout(nranks, chunk, chunk);
    void* p = MAP_FAILED;
    if (ftruncate(fd, static_cast<off_t>(l.total)) == 0) {
      p = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) {
      shm_unlink(name.c_str());
      Error("ncclCommInitRank: cannot create shared memory %s of %zu bytes: %s", name.c_str(), l.total,
            std::strerror(err));
      return ncclSystemError;
    }
    InitHeader(static_cast<char*>(p), nranks, chunk, l.total);
    out->reset(new Segment(static_cast<char*>(p), l.total, name));
    return ncclSuccess;
  }
  if (errno != EEXIST) {
    Error("ncclCommInitRank: shm_open(%s): %s", name.c_str(), std::strerror(errno));
    return ncclSystemError;
  }
  fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    Warn("ncclCommInitRank: every rank of the communicator for this ncclUniqueId has joined already");
    return ncclInvalidUsage;
  }
  struct stat st;
  bool sized = WaitFor(timeout, [&] {
    return fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(SegmentHeader);
  });
  void* p = sized ? mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  int err = errno;
  close(fd);
  if (!sized) {
    Error("ncclCommInitRank: timed out after %g s waiting for the rank that created %s (SIMGPU_NCCL_TIMEOUT_S)",
          timeout, name.c_str());
    return ncclSystemError;
  }
  if (p == MAP_FAILED) {
    Error("ncclCommInitRank: cannot map %s: %s", name.c_str(), std::strerror(err));
    return ncclSystemError;
  }
  auto* h = static_cast<SegmentHeader*>(p);
  if (!WaitFor(timeout, [&] { return h->ready.load(std::memory_order_acquire) != 0; })) {
    munmap(p, st.st_size);
    Error("ncclCommInitRank: timed out after %g s waiting for the rank that created %s (SIMGPU_NCCL_TIMEOUT_S)",
          timeout, name.c_str());
    return ncclSystemError;
  }
  if (h->magic != kSegmentMagic || h->total_bytes != static_cast<uint64_t>(st.st_size)) {
    munmap(p, st.st_size);
    Error("ncclCommInitRank: %s is not a simgpu NCCL segment", name.c_str());
    return ncclSystemError;
  }
  if (h->nranks != static_cast<uint32_t>(nranks)) {
    int theirs = static_cast<int>(h->nranks);
    munmap(p, st.st_size);
    Warn("ncclCommInitRank: nranks %d differs from nranks %d given by another rank for the same ncclUniqueId",
         nranks, theirs);
    return ncclInvalidUsage;
  }
  out->reset(new Segment(static_cast<char*>(p), st.st_size, name));
  return ncclSuccess;
}

std::shared_ptr<Segment> Segment::Anonymous(int nranks) {
  size_t chunk = ChunkFor(nranks);
  Layout l = ComputeLayout(nranks, chunk, chunk);
  void* p = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    Error("ncclCommInitAll: cannot map %zu bytes: %s", l.total, std::strerror(errno));
    return nullptr;
  }
  InitHeader(static_cast<char*>(p), nranks, chunk, l.total);
  return std::shared_ptr<Segment>(new Segment(static_cast<char*>(p), l.total, ""));
}

Segment::~Segment() {
  Unlink();
  munmap(base_, bytes_);
}

void Segment::Unlink() {
  if (name_.empty()) return;
  shm_unlink(name_.c_str());
  name_.clear();
}

RankSlot* Segment::slot(int rank) const {
  Layout l = ComputeLayout(nranks(), chunk_bytes(), ring_bytes());
  return reinterpret_cast<RankSlot*>(base_ + l.slots) + rank;
}

char* Segment::staging(int rank, int parity) const {
  Layout l = ComputeLayout(nranks(), chunk_bytes(), ring_bytes());
  return base_ + l.staging + (static_cast<size_t>(rank) * 2 + parity) * chunk_bytes();
}

RingHeader* Segment::ring(int src, int dst) const {
  Layout l = ComputeLayout(nranks(), chunk_bytes(), ring_bytes());
  return reinterpret_cast<RingHeader*>(base_ + l.ring_headers) + static_cast<size_t>(src) * nranks() + dst;
}

char* Segment::ring_data(int src, int dst) const {
  Layout l = ComputeLayout(nranks(), chunk_bytes(), ring_bytes());
  return base_ + l.ring_data + (static_cast<size_t>(src) * nranks() + dst) * ring_bytes();
}

}  // namespace simgpu::nccl
