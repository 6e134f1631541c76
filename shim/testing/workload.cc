// shim_workload: GEMMs and all-reduces through every intercepted entry point, on every rank, and a dump (dump.h)
// of what the program asked for and what data it saw: inputs as uploaded, outputs as downloaded. The shim's
// trace must say the same; and the dump's data must be bitwise the same with and without the shim.
//
//   shim_workload --rdzv DIR [--dump FILE] [--scale S] [--iters N] [--fork]   one rank (RANK, WORLD_SIZE, ...)
//   shim_workload --init-all N [--dump FILE]                                   N communicators in one process
//
// Per iteration (seq = 8 * iteration + i): 0 Sgemm NN (padded lda/ldc), 1 GemmEx BF16xBF16->FP32 TN with
// beta 0.5, 2 GemmStridedBatchedEx FP16 NT batch 3 (padded batch stride), 3 Sgemm_v2_64 with beta 1 (A a thin
// slice, ld 64),
// 4 all-reduce sum (out of place) of GEMM 0's C, then in one group 5 in-place BF16 all-reduce sum and
// 6 all-reduce max, 7 GemmEx in device pointer mode with the legacy CUDA_R_32F compute type (its alpha and beta
// are captured from the device).
// --fork: afterwards a forked child calls cuBLAS (the shim must pass it through and write nothing).
// --kill-after-destroy: SIGKILL itself right after ncclCommDestroy (no exit handlers run).
// --time: print the wall time of the iterations ("loop_seconds=S") on stdout, for overhead measurements.
// --nonblocking: the communicator is non-blocking (ncclCommInitRankConfig, blocking = 0): calls that answer
// ncclInProgress are followed by ncclCommGetAsyncError polls until NCCL has enqueued the work, while a watchdog
// thread polls it too; it is finalized (ncclCommFinalize) before its destroy.
// --abort-pending (implies --nonblocking): instead, one more all-reduce and ncclCommAbort without waiting for it.
// --typed-gemms: afterwards one GEMM through each of cublas{D,H}gemm, cublas{S,D,H}gemmStridedBatched, their _64
// forms, cublasGemmEx_64 and cublasGemmStridedBatchedEx_64.
// --hang-at-exit: afterwards blocks its stream for 10 minutes (a host function, as a collective waiting for a dead
// peer would), queues one more Sgemm behind it and returns from main without synchronizing.
// --collectives: instead, every NCCL collective and point-to-point call (RunCollectives says which, in order).
// Built against the real headers and linked to the toolkit's shared libraries, like any application.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shim/testing/workload_util.h"
#include "tools/simgpu/common/nv_dtype.h"
#include "shim/testing/dump.h"
#include "shim/testing/rendezvous.h"
#include "ttrace/format.h"

namespace {

using ttrace::shim::testing::Die;
using ttrace::shim::testing::EnvInt;
using ttrace::format::DType;
using ttrace::format::RecordType;
using ttrace::format::TensorSlot;
namespace fmt = ttrace::format;

FILE* g_dump = nullptr;

template <typename T>
void Expect(RecordType type, const T& body) {
  if (g_dump) ttrace::shim::testing::WriteEntry(g_dump, type, &body, sizeof body);
}

// A device tensor and its host copy: `batch` column-major rows x cols matrices, leading dimension ld, batches
// `stride` elements apart.
struct Tensor {
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0, ld = 0, batch = 1, stride = 0;
  std::vector<char> host;
  void* dev = nullptr;

  size_t Elem() const { return ttrace::format::DTypeSize(static_cast<uint8_t>(dtype)); }
  size_t Elems() const { return static_cast<size_t>(stride * (batch - 1) + ld * (cols - 1) + rows); }
  size_t Bytes() const { return Elems() * Elem(); }
  std::string Packed() const {
    std::string out;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < cols; ++j)
        out.append(host.data() + (b * stride + j * ld) * Elem(), static_cast<size_t>(rows) * Elem());
    return out;
  }
  void Upload(cudaStream_t s) {
    CHECK_CUDA(cudaMemcpyAsync(dev, host.data(), Bytes(), cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  void Download(cudaStream_t s) {
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(host.data(), dev, Bytes(), cudaMemcpyDeviceToHost));
  }
};

// Deterministic values, exactly representable in the tensor's type.
Tensor Make(DType dtype, int64_t rows, int64_t cols, int64_t ld, uint32_t salt, int64_t batch = 1,
            int64_t stride = 0) {
  Tensor t;
  t.dtype = dtype;
  t.rows = rows;
  t.cols = cols;
  t.ld = ld;
  t.batch = batch;
  t.stride = batch > 1 ? stride : 0;
  t.host.resize(t.Bytes());
  for (size_t i = 0; i < t.Elems(); ++i) {
    const uint32_t h = (static_cast<uint32_t>(i) * 2654435761u) ^ (salt * 40503u);
    const float v = static_cast<float>(static_cast<int>(h % 255u) - 127) / 64.0f;
    if (dtype == DType::kF32) {
      memcpy(t.host.data() + 4 * i, &v, 4);
    } else if (dtype == DType::kF64) {
      const double d = v;
      memcpy(t.host.data() + 8 * i, &d, 8);
    } else {
      const uint16_t bits = dtype == DType::kBF16 ? simgpu::nv::FloatToBf16(v) : simgpu::nv::FloatToHalf(v);
      memcpy(t.host.data() + 2 * i, &bits, 2);
    }
  }
  CHECK_CUDA(cudaMalloc(&t.dev, t.Bytes()));
  CHECK_CUDA(cudaMemset(t.dev, 0, t.Bytes()));
  // The memset is ordered on the legacy stream only: finish it before uploads on a non-blocking stream.
  CHECK_CUDA(cudaDeviceSynchronize());
  return t;
}

void ExpectTensor(uint64_t seq, TensorSlot slot, const Tensor& t) {
  if (!g_dump) return;
  fmt::TensorRecord r;
  memset(&r, 0, sizeof r);
  r.seq = seq;
  r.slot = static_cast<uint8_t>(slot);
  r.dtype = static_cast<uint8_t>(t.dtype);
  r.rows = t.rows;
  r.cols = t.cols;
  r.batch = t.batch;
  const std::string packed = t.Packed();
  r.payload_bytes = packed.size();
  ttrace::shim::testing::WriteEntry(g_dump, RecordType::kTensor, &r, sizeof r, packed.data(), packed.size());
}

// A vector tensor (count x 1) over a whole allocation, for collectives.
Tensor Vector(const Tensor& t) {
  Tensor v = t;
  v.rows = v.ld = static_cast<int64_t>(t.Elems());
  v.cols = 1;
  v.batch = 1;
  v.stride = 0;
  return v;
}

fmt::GemmRecord GemmExpect(uint64_t seq, fmt::ApiId api, cublasHandle_t h, cudaStream_t s, cublasOperation_t ta,
                           cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const Tensor& a, const Tensor& b,
                           const Tensor& c, int a_type, int c_type, int compute, double alpha, double beta) {
  fmt::GemmRecord r;
  memset(&r, 0, sizeof r);
  r.seq = seq;
  r.api = static_cast<uint16_t>(api);
  r.transa = ta;
  r.transb = tb;
  r.m = m;
  r.n = n;
  r.k = k;
  r.lda = a.ld;
  r.ldb = b.ld;
  r.ldc = c.ld;
  r.batch_count = a.batch;
  r.stride_a = a.stride;
  r.stride_b = b.stride;
  r.stride_c = c.stride;
  r.a_type = r.b_type = a_type;
  r.c_type = c_type;
  r.compute_type = compute;
  r.math_mode = CUBLAS_DEFAULT_MATH;
  r.alpha = alpha;
  r.beta = beta;
  r.handle = reinterpret_cast<uint64_t>(h);
  r.stream = reinterpret_cast<uint64_t>(s);
  r.a_ptr = reinterpret_cast<uint64_t>(a.dev);
  r.b_ptr = reinterpret_cast<uint64_t>(b.dev);
  r.c_ptr = reinterpret_cast<uint64_t>(c.dev);
  return r;
}

fmt::CollectiveRecord AllReduceExpect(uint64_t seq, ncclComm_t comm, int rank, int size, uint64_t op_index,
                                      ncclRedOp_t op, ncclDataType_t dtype, const Tensor& send, const Tensor& recv,
                                      cudaStream_t s, bool in_group) {
  fmt::CollectiveRecord r;
  memset(&r, 0, sizeof r);
  r.seq = seq;
  r.api = static_cast<uint16_t>(fmt::ApiId::kNcclAllReduce);
  r.red_op = static_cast<uint8_t>(op);
  r.in_group = in_group;
  r.comm_handle = reinterpret_cast<uint64_t>(comm);
  r.comm_rank = rank;
  r.comm_size = size;
  r.nccl_dtype = dtype;
  r.root_or_peer = -1;
  r.count = send.Elems();
  r.comm_op_index = op_index;
  r.sendbuff = reinterpret_cast<uint64_t>(send.dev);
  r.recvbuff = reinterpret_cast<uint64_t>(recv.dev);
  r.stream = reinterpret_cast<uint64_t>(s);
  return r;
}

void ExpectGroup(fmt::ApiId api, int depth, ncclResult_t status = ncclSuccess) {
  fmt::GroupRecord g;
  memset(&g, 0, sizeof g);
  g.api = static_cast<uint16_t>(api);
  g.status = status;
  g.depth = depth;
  Expect(RecordType::kGroup, g);
}

void ExpectCommInit(fmt::ApiId api, ncclComm_t comm, int rank, int size, int device,
                    ncclResult_t status = ncclSuccess) {
  fmt::CommInitRecord c;
  memset(&c, 0, sizeof c);
  c.api = static_cast<uint16_t>(api);
  c.status = status;
  c.comm_handle = reinterpret_cast<uint64_t>(comm);
  c.comm_rank = rank;
  c.comm_size = size;
  c.cuda_device = device;
  Expect(RecordType::kCommInit, c);
}

void ExpectCommDestroy(ncclComm_t comm, fmt::ApiId api = fmt::ApiId::kNcclCommDestroy,
                       ncclResult_t status = ncclSuccess) {
  fmt::CommDestroyRecord d;
  memset(&d, 0, sizeof d);
  d.api = static_cast<uint16_t>(api);
  d.status = status;
  d.comm_handle = reinterpret_cast<uint64_t>(comm);
  Expect(RecordType::kCommDestroy, d);
}

// An NCCL call's status: on a non-blocking communicator, ncclInProgress is followed by ncclCommGetAsyncError
// polls until the work is enqueued (or an error ends the program).
ncclResult_t Nccl(ncclResult_t r, ncclComm_t comm, const char* what) {
  if (r == ncclInProgress) {
    ncclResult_t async = ncclInProgress;
    while (async == ncclInProgress) CHECK_NCCL(ncclCommGetAsyncError(comm, &async));
    if (async != ncclSuccess) Die(what, async);
    return r;
  }
  if (r != ncclSuccess) Die(what, r);
  return r;
}

ncclUniqueId Rendezvous(const std::string& dir, int rank) {
  ncclUniqueId id;
  if (!ttrace::shim::testing::ExchangeUniqueId(dir, rank, &id)) Die("the NCCL unique id exchange", 0);
  return id;
}

int RunRanks(const std::string& rdzv, int scale, int iters, bool fork_child, bool kill_after_destroy, bool timed,
             bool hang_at_exit, bool nonblocking, bool abort_pending, bool typed_gemms) {
  const int rank = EnvInt("RANK", 0), world = EnvInt("WORLD_SIZE", 1), device = EnvInt("LOCAL_RANK", 0);
  CHECK_CUDA(cudaSetDevice(device));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  CHECK_CUBLAS(cublasSetStream(h, s));
  const ncclUniqueId id = Rendezvous(rdzv, rank);
  ncclComm_t comm;
  std::atomic<bool> watching{false};
  std::thread watchdog;
  if (nonblocking) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t st = ncclCommInitRankConfig(&comm, world, id, rank, &config);
    if (st != ncclSuccess && st != ncclInProgress) Die("ncclCommInitRankConfig", st);
    Nccl(st, comm, "ncclCommInitRankConfig");
    ExpectCommInit(fmt::ApiId::kNcclCommInitRankConfig, comm, rank, world, device, st);
    // A watchdog polls the communicator from another thread all along, as PyTorch's does.
    watching = true;
    watchdog = std::thread([&watching, comm] {
      while (watching) {
        ncclResult_t async;
        ncclCommGetAsyncError(comm, &async);
        usleep(100);
      }
    });
  } else {
    CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
    ExpectCommInit(fmt::ApiId::kNcclCommInitRank, comm, rank, world, device);
  }

  const int64_t m = 24 * scale, n = 16 * scale, k = 20 * scale;
  const uint32_t salt = 1000u * static_cast<uint32_t>(rank);
  // 0: Sgemm NN, padded A and C.
  Tensor a0 = Make(DType::kF32, m, k, m + 3, salt + 1), b0 = Make(DType::kF32, k, n, k, salt + 2);
  Tensor c0 = Make(DType::kF32, m, n, m + 1, salt + 3);
  // 1: GemmEx BF16 x BF16 -> FP32, A transposed (stored k x m), C accumulated with beta 0.5.
  Tensor a1 = Make(DType::kBF16, k, m, k + 2, salt + 4), b1 = Make(DType::kBF16, k, n, k, salt + 5);
  Tensor c1 = Make(DType::kF32, m, n, m, salt + 6);
  // 2: GemmStridedBatchedEx FP16, B transposed (stored n x k), batch 3 with a padded A stride.
  Tensor a2 = Make(DType::kF16, m, k, m, salt + 7, 3, m * k + 5);
  Tensor b2 = Make(DType::kF16, n, k, n + 1, salt + 8, 3, (n + 1) * k);
  Tensor c2 = Make(DType::kF16, m, n, m, salt + 9, 3, m * n);
  // 3: Sgemm_v2_64, beta 1; A is a thin slice of a wide matrix (ld 64: its region is 7 times its elements, so
  // the shim copies it pitched).
  Tensor a3 = Make(DType::kF32, 8, 8, 64, salt + 10), b3 = Make(DType::kF32, 8, 8, 8, salt + 11);
  Tensor c3 = Make(DType::kF32, 8, 8, 8, salt + 12);
  // 4: all-reduce of C0 (whole allocation, padding included); 5, 6: a group.
  Tensor r4 = Make(DType::kF32, static_cast<int64_t>(c0.Elems()), 1, static_cast<int64_t>(c0.Elems()), salt + 13);
  Tensor x5 = Make(DType::kBF16, 1000 * scale + 7, 1, 1000 * scale + 7, salt + 14);
  Tensor y6 = Make(DType::kF32, 333, 1, 333, salt + 15), z6 = Make(DType::kF32, 333, 1, 333, salt + 16);
  // 7: device pointer mode, legacy compute type.
  Tensor a7 = Make(DType::kF32, m, k, m, salt + 17), b7 = Make(DType::kF32, k, n, k, salt + 18);
  Tensor c7 = Make(DType::kF32, m, n, m, salt + 19);
  float* scalars;
  const float scalar_host[2] = {0.75f, 1.0f};
  CHECK_CUDA(cudaMalloc(&scalars, sizeof scalar_host));
  CHECK_CUDA(cudaMemcpy(scalars, scalar_host, sizeof scalar_host, cudaMemcpyHostToDevice));
  for (Tensor* t : {&a0, &b0, &a1, &b1, &a2, &b2, &a3, &b3, &y6, &a7, &b7}) t->Upload(s);

  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  const auto loop_start = std::chrono::steady_clock::now();
  for (int it = 0; it < iters; ++it) {
    const uint64_t base = 8u * static_cast<uint64_t>(it);
    const float alpha0 = 1.5f, beta0 = 0.0f;
    CHECK_CUBLAS(cublasSgemm(h, N, N, m, n, k, &alpha0, static_cast<float*>(a0.dev), a0.ld,
                             static_cast<float*>(b0.dev), b0.ld, &beta0, static_cast<float*>(c0.dev), c0.ld));
    c0.Download(s);
    Expect(RecordType::kGemm, GemmExpect(base, fmt::ApiId::kCublasSgemm, h, s, N, N, m, n, k, a0, b0, c0,
                                         CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1.5, 0.0));
    ExpectTensor(base, TensorSlot::kA, a0);
    ExpectTensor(base, TensorSlot::kB, b0);
    ExpectTensor(base, TensorSlot::kCOut, c0);

    c1.Upload(s);
    ExpectTensor(base + 1, TensorSlot::kCIn, c1);
    const float alpha1 = 1.25f, beta1 = 0.5f;
    CHECK_CUBLAS(cublasGemmEx(h, T, N, m, n, k, &alpha1, a1.dev, CUDA_R_16BF, a1.ld, b1.dev, CUDA_R_16BF, b1.ld,
                              &beta1, c1.dev, CUDA_R_32F, c1.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    c1.Download(s);
    Expect(RecordType::kGemm, GemmExpect(base + 1, fmt::ApiId::kCublasGemmEx, h, s, T, N, m, n, k, a1, b1, c1,
                                         CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1.25, 0.5));
    ExpectTensor(base + 1, TensorSlot::kA, a1);
    ExpectTensor(base + 1, TensorSlot::kB, b1);
    ExpectTensor(base + 1, TensorSlot::kCOut, c1);

    const float alpha2 = 1.0f, beta2 = 0.0f;
    CHECK_CUBLAS(cublasGemmStridedBatchedEx(h, N, T, m, n, k, &alpha2, a2.dev, CUDA_R_16F, a2.ld, a2.stride, b2.dev,
                                            CUDA_R_16F, b2.ld, b2.stride, &beta2, c2.dev, CUDA_R_16F, c2.ld,
                                            c2.stride, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    c2.Download(s);
    Expect(RecordType::kGemm, GemmExpect(base + 2, fmt::ApiId::kCublasGemmStridedBatchedEx, h, s, N, T, m, n, k,
                                         a2, b2, c2, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 1.0, 0.0));
    ExpectTensor(base + 2, TensorSlot::kA, a2);
    ExpectTensor(base + 2, TensorSlot::kB, b2);
    ExpectTensor(base + 2, TensorSlot::kCOut, c2);

    c3.Upload(s);
    ExpectTensor(base + 3, TensorSlot::kCIn, c3);
    const float alpha3 = -0.5f, beta3 = 1.0f;
    CHECK_CUBLAS(cublasSgemm_64(h, N, N, 8, 8, 8, &alpha3, static_cast<float*>(a3.dev), a3.ld,
                                static_cast<float*>(b3.dev), 8, &beta3, static_cast<float*>(c3.dev), 8));
    c3.Download(s);
    Expect(RecordType::kGemm, GemmExpect(base + 3, fmt::ApiId::kCublasSgemm64, h, s, N, N, 8, 8, 8, a3, b3, c3,
                                         CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, -0.5, 1.0));
    ExpectTensor(base + 3, TensorSlot::kA, a3);
    ExpectTensor(base + 3, TensorSlot::kB, b3);
    ExpectTensor(base + 3, TensorSlot::kCOut, c3);

    const Tensor send4 = Vector(c0);
    const ncclResult_t st4 =
        Nccl(ncclAllReduce(c0.dev, r4.dev, send4.Elems(), ncclFloat32, ncclSum, comm, s), comm, "ncclAllReduce");
    r4.Download(s);
    fmt::CollectiveRecord e4 =
        AllReduceExpect(base + 4, comm, rank, world, 3u * it, ncclSum, ncclFloat32, send4, r4, s, false);
    e4.status = st4;
    Expect(RecordType::kCollective, e4);
    ExpectTensor(base + 4, TensorSlot::kSend, send4);
    ExpectTensor(base + 4, TensorSlot::kRecv, Vector(r4));

    x5.Upload(s);
    ExpectTensor(base + 5, TensorSlot::kSend, x5);
    CHECK_NCCL(ncclGroupStart());
    ExpectGroup(fmt::ApiId::kNcclGroupStart, 1);
    CHECK_NCCL(ncclAllReduce(x5.dev, x5.dev, x5.Elems(), ncclBfloat16, ncclSum, comm, s));
    Expect(RecordType::kCollective,
           AllReduceExpect(base + 5, comm, rank, world, 3u * it + 1, ncclSum, ncclBfloat16, x5, x5, s, true));
    CHECK_NCCL(ncclAllReduce(y6.dev, z6.dev, y6.Elems(), ncclFloat32, ncclMax, comm, s));
    Expect(RecordType::kCollective,
           AllReduceExpect(base + 6, comm, rank, world, 3u * it + 2, ncclMax, ncclFloat32, y6, z6, s, true));
    const ncclResult_t end = Nccl(ncclGroupEnd(), comm, "ncclGroupEnd");
    ExpectGroup(fmt::ApiId::kNcclGroupEnd, 0, end);
    x5.Download(s);
    z6.Download(s);
    ExpectTensor(base + 5, TensorSlot::kRecv, x5);
    ExpectTensor(base + 6, TensorSlot::kSend, y6);
    ExpectTensor(base + 6, TensorSlot::kRecv, z6);

    c7.Upload(s);
    ExpectTensor(base + 7, TensorSlot::kCIn, c7);
    CHECK_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_CUBLAS(cublasGemmEx(h, N, N, m, n, k, scalars, a7.dev, CUDA_R_32F, a7.ld, b7.dev, CUDA_R_32F, b7.ld,
                              scalars + 1, c7.dev, CUDA_R_32F, c7.ld, static_cast<cublasComputeType_t>(CUDA_R_32F),
                              CUBLAS_GEMM_DEFAULT));
    CHECK_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    c7.Download(s);
    fmt::GemmRecord g7 = GemmExpect(base + 7, fmt::ApiId::kCublasGemmEx, h, s, N, N, m, n, k, a7, b7, c7,
                                    CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 0, 0);
    g7.flags = fmt::kScalarsUnknown;
    Expect(RecordType::kGemm, g7);
    ExpectTensor(base + 7, TensorSlot::kA, a7);
    ExpectTensor(base + 7, TensorSlot::kB, b7);
    ExpectTensor(base + 7, TensorSlot::kCOut, c7);
    // The device-resident alpha and beta, one FP32 element each.
    for (int i = 0; i < 2; ++i) {
      Tensor scalar;
      scalar.rows = scalar.cols = scalar.ld = 1;
      scalar.host.assign(reinterpret_cast<const char*>(&scalar_host[i]),
                         reinterpret_cast<const char*>(&scalar_host[i]) + sizeof(float));
      ExpectTensor(base + 7, i == 0 ? TensorSlot::kAlpha : TensorSlot::kBeta, scalar);
    }
  }

  CHECK_CUDA(cudaStreamSynchronize(s));
  if (timed)
    printf("loop_seconds=%.6f\n",
           std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count());
  if (hang_at_exit) {
    float* buf = nullptr;
    CHECK_CUDA(cudaMalloc(&buf, 48 * sizeof(float)));
    CHECK_CUDA(cudaLaunchHostFunc(s, [](void*) { sleep(600); }, nullptr));
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasSgemm(h, N, N, 4, 4, 4, &one, buf, 4, buf + 16, 4, &zero, buf + 32, 4));
    return 0;
  }
  if (typed_gemms) {
    // One GEMM per typed and _64 entry point, seq 8 * iters + 0 .. 11: small shapes, alpha 0.75, beta 0 (beta 0.5
    // for the batched ones, C prefilled), host pointer mode.
    uint64_t seq = 8 * static_cast<uint64_t>(iters);
    const __half h_alpha = __float2half(0.75f), h_beta0 = __float2half(0.0f), h_beta = __float2half(0.5f);
    const float f_alpha = 0.75f, f_beta = 0.5f, f_beta0 = 0.0f;
    const double d_alpha = 0.75, d_beta0 = 0.0, d_beta = 0.5;
    auto gemm = [&](fmt::ApiId api, DType dt, int type, int compute, int64_t batch, double beta, auto call) {
      const int64_t bm = 5, bn = 3, bk = 4;
      Tensor a = Make(dt, bm, bk, bm, salt + 90 + static_cast<uint32_t>(seq), batch, bm * bk + 2);
      Tensor b = Make(dt, bk, bn, bk, salt + 91 + static_cast<uint32_t>(seq), batch, bk * bn);
      Tensor c = Make(dt, bm, bn, bm, salt + 92 + static_cast<uint32_t>(seq), batch, bm * bn + 1);
      a.Upload(s);
      b.Upload(s);
      c.Upload(s);
      if (beta != 0) ExpectTensor(seq, TensorSlot::kCIn, c);
      CHECK_CUBLAS(call(a, b, c));
      c.Download(s);
      Expect(RecordType::kGemm, GemmExpect(seq, api, h, s, N, N, bm, bn, bk, a, b, c, type, type, compute, 0.75,
                                           beta));
      ExpectTensor(seq, TensorSlot::kA, a);
      ExpectTensor(seq, TensorSlot::kB, b);
      ExpectTensor(seq, TensorSlot::kCOut, c);
      ++seq;
    };
    using A = const Tensor&;
    gemm(fmt::ApiId::kCublasDgemm, DType::kF64, CUDA_R_64F, CUBLAS_COMPUTE_64F, 1, 0, [&](A a, A b, A c) {
      return cublasDgemm(h, N, N, 5, 3, 4, &d_alpha, static_cast<double*>(a.dev), 5, static_cast<double*>(b.dev), 4,
                         &d_beta0, static_cast<double*>(c.dev), 5);
    });
    gemm(fmt::ApiId::kCublasDgemm64, DType::kF64, CUDA_R_64F, CUBLAS_COMPUTE_64F, 1, 0, [&](A a, A b, A c) {
      return cublasDgemm_64(h, N, N, 5, 3, 4, &d_alpha, static_cast<double*>(a.dev), 5, static_cast<double*>(b.dev),
                            4, &d_beta0, static_cast<double*>(c.dev), 5);
    });
    gemm(fmt::ApiId::kCublasHgemm, DType::kF16, CUDA_R_16F, CUBLAS_COMPUTE_16F, 1, 0, [&](A a, A b, A c) {
      return cublasHgemm(h, N, N, 5, 3, 4, &h_alpha, static_cast<__half*>(a.dev), 5, static_cast<__half*>(b.dev), 4,
                         &h_beta0, static_cast<__half*>(c.dev), 5);
    });
    gemm(fmt::ApiId::kCublasHgemm64, DType::kF16, CUDA_R_16F, CUBLAS_COMPUTE_16F, 1, 0, [&](A a, A b, A c) {
      return cublasHgemm_64(h, N, N, 5, 3, 4, &h_alpha, static_cast<__half*>(a.dev), 5,
                            static_cast<__half*>(b.dev), 4, &h_beta0, static_cast<__half*>(c.dev), 5);
    });
    gemm(fmt::ApiId::kCublasSgemmStridedBatched, DType::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 0.5,
         [&](A a, A b, A c) {
           return cublasSgemmStridedBatched(h, N, N, 5, 3, 4, &f_alpha, static_cast<float*>(a.dev), 5, a.stride,
                                            static_cast<float*>(b.dev), 4, b.stride, &f_beta,
                                            static_cast<float*>(c.dev), 5, c.stride, 2);
         });
    gemm(fmt::ApiId::kCublasSgemmStridedBatched64, DType::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 0.5,
         [&](A a, A b, A c) {
           return cublasSgemmStridedBatched_64(h, N, N, 5, 3, 4, &f_alpha, static_cast<float*>(a.dev), 5, a.stride,
                                               static_cast<float*>(b.dev), 4, b.stride, &f_beta,
                                               static_cast<float*>(c.dev), 5, c.stride, 2);
         });
    gemm(fmt::ApiId::kCublasDgemmStridedBatched, DType::kF64, CUDA_R_64F, CUBLAS_COMPUTE_64F, 2, 0.5,
         [&](A a, A b, A c) {
           return cublasDgemmStridedBatched(h, N, N, 5, 3, 4, &d_alpha, static_cast<double*>(a.dev), 5, a.stride,
                                            static_cast<double*>(b.dev), 4, b.stride, &d_beta,
                                            static_cast<double*>(c.dev), 5, c.stride, 2);
         });
    gemm(fmt::ApiId::kCublasDgemmStridedBatched64, DType::kF64, CUDA_R_64F, CUBLAS_COMPUTE_64F, 2, 0.5,
         [&](A a, A b, A c) {
           return cublasDgemmStridedBatched_64(h, N, N, 5, 3, 4, &d_alpha, static_cast<double*>(a.dev), 5, a.stride,
                                               static_cast<double*>(b.dev), 4, b.stride, &d_beta,
                                               static_cast<double*>(c.dev), 5, c.stride, 2);
         });
    gemm(fmt::ApiId::kCublasHgemmStridedBatched, DType::kF16, CUDA_R_16F, CUBLAS_COMPUTE_16F, 2, 0.5,
         [&](A a, A b, A c) {
           return cublasHgemmStridedBatched(h, N, N, 5, 3, 4, &h_alpha, static_cast<__half*>(a.dev), 5, a.stride,
                                            static_cast<__half*>(b.dev), 4, b.stride, &h_beta,
                                            static_cast<__half*>(c.dev), 5, c.stride, 2);
         });
    gemm(fmt::ApiId::kCublasHgemmStridedBatched64, DType::kF16, CUDA_R_16F, CUBLAS_COMPUTE_16F, 2, 0.5,
         [&](A a, A b, A c) {
           return cublasHgemmStridedBatched_64(h, N, N, 5, 3, 4, &h_alpha, static_cast<__half*>(a.dev), 5, a.stride,
                                               static_cast<__half*>(b.dev), 4, b.stride, &h_beta,
                                               static_cast<__half*>(c.dev), 5, c.stride, 2);
         });
    gemm(fmt::ApiId::kCublasGemmEx64, DType::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 1, 0,
         [&](A a, A b, A c) {
      return cublasGemmEx_64(h, N, N, 5, 3, 4, &f_alpha, a.dev, CUDA_R_32F, 5, b.dev, CUDA_R_32F, 4, &f_beta0, c.dev,
                             CUDA_R_32F, 5, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
         });
    gemm(fmt::ApiId::kCublasGemmStridedBatchedEx64, DType::kF16, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 0.5,
         [&](A a, A b, A c) {
           return cublasGemmStridedBatchedEx_64(h, N, N, 5, 3, 4, &f_alpha, a.dev, CUDA_R_16F, 5, a.stride, b.dev,
                                                CUDA_R_16F, 4, b.stride, &f_beta, c.dev, CUDA_R_16F, 5, c.stride, 2,
                                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
         });
  }
  watching = false;
  if (watchdog.joinable()) watchdog.join();
  if (abort_pending) {
    // One more all-reduce, and the communicator is aborted before NCCL reports it enqueued: the shim never gets a
    // moment at which its output is valid, so it drops that snapshot with a notice (the input is captured).
    const uint64_t seq = static_cast<uint64_t>(iters) * 8;
    const ncclResult_t st = ncclAllReduce(y6.dev, z6.dev, y6.Elems(), ncclFloat32, ncclSum, comm, s);
    if (st != ncclSuccess && st != ncclInProgress) Die("ncclAllReduce before abort", st);
    fmt::CollectiveRecord e = AllReduceExpect(seq, comm, rank, world, 3u * static_cast<uint64_t>(iters), ncclSum,
                                              ncclFloat32, y6, z6, s, false);
    e.status = st;
    Expect(RecordType::kCollective, e);
    ExpectTensor(seq, TensorSlot::kSend, y6);
    CHECK_NCCL(ncclCommAbort(comm));
    ExpectCommDestroy(comm, fmt::ApiId::kNcclCommAbort);
    CHECK_CUDA(cudaStreamSynchronize(s));
    return 0;
  }
  if (nonblocking) {
    const ncclResult_t st = Nccl(ncclCommFinalize(comm), comm, "ncclCommFinalize");
    ExpectCommDestroy(comm, fmt::ApiId::kNcclCommFinalize, st);
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  ExpectCommDestroy(comm);
  if (kill_after_destroy) {
    if (g_dump) fclose(g_dump);
    raise(SIGKILL);
  }
  CHECK_CUBLAS(cublasDestroy(h));
  if (fork_child) {
    const pid_t child = fork();
    if (child == 0) {
      const float one = 1.0f;
      const cublasStatus_t st = cublasSgemm(nullptr, N, N, 4, 4, 4, &one, nullptr, 4, nullptr, 4, &one, nullptr, 4);
      _exit(st == CUBLAS_STATUS_NOT_INITIALIZED ? 0 : 3);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      Die("forked child", status);
  }
  return 0;
}

int RunInitAll(int ndev) {
  std::vector<ncclComm_t> comms(ndev);
  CHECK_NCCL(ncclCommInitAll(comms.data(), ndev, nullptr));
  for (int i = 0; i < ndev; ++i) ExpectCommInit(fmt::ApiId::kNcclCommInitAll, comms[i], i, ndev, i);
  std::vector<cudaStream_t> streams(ndev);
  std::vector<Tensor> send, recv;
  for (int i = 0; i < ndev; ++i) {
    CHECK_CUDA(cudaSetDevice(i));
    CHECK_CUDA(cudaStreamCreate(&streams[i]));
    send.push_back(Make(DType::kF32, 257, 1, 257, 50u + i));
    recv.push_back(Make(DType::kF32, 257, 1, 257, 90u + i));
    send[i].Upload(streams[i]);
  }
  CHECK_NCCL(ncclGroupStart());
  ExpectGroup(fmt::ApiId::kNcclGroupStart, 1);
  for (int i = 0; i < ndev; ++i) {
    CHECK_NCCL(ncclAllReduce(send[i].dev, recv[i].dev, 257, ncclFloat32, ncclSum, comms[i], streams[i]));
    Expect(RecordType::kCollective,
           AllReduceExpect(i, comms[i], i, ndev, 0, ncclSum, ncclFloat32, send[i], recv[i], streams[i], true));
  }
  CHECK_NCCL(ncclGroupEnd());
  ExpectGroup(fmt::ApiId::kNcclGroupEnd, 0);
  for (int i = 0; i < ndev; ++i) {
    recv[i].Download(streams[i]);
    ExpectTensor(i, TensorSlot::kSend, send[i]);
    ExpectTensor(i, TensorSlot::kRecv, recv[i]);
  }
  for (int i = 0; i < ndev; ++i) {
    CHECK_NCCL(ncclCommDestroy(comms[i]));
    ExpectCommDestroy(comms[i]);
  }
  return 0;
}

// ---- --collectives ------------------------------------------------------------------------------------------

fmt::CollectiveRecord CollExpect(uint64_t seq, fmt::ApiId api, ncclComm_t comm, int rank, int size, uint64_t index,
                                 int red_op, int root_or_peer, ncclDataType_t dtype, uint64_t count,
                                 const void* send, const void* recv, cudaStream_t s, bool in_group) {
  fmt::CollectiveRecord r;
  memset(&r, 0, sizeof r);
  r.seq = seq;
  r.api = static_cast<uint16_t>(api);
  r.red_op = red_op < 0 ? 0xff : static_cast<uint8_t>(red_op);
  r.in_group = in_group;
  r.comm_handle = reinterpret_cast<uint64_t>(comm);
  r.comm_rank = rank;
  r.comm_size = size;
  r.nccl_dtype = dtype;
  r.root_or_peer = root_or_peer;
  r.count = count;
  r.comm_op_index = index;
  r.sendbuff = reinterpret_cast<uint64_t>(send);
  r.recvbuff = reinterpret_cast<uint64_t>(recv);
  r.stream = reinterpret_cast<uint64_t>(s);
  return r;
}

// Elements [offset, offset + n) of a vector tensor, as a vector tensor of its own (host bytes copied now).
Tensor Slice(const Tensor& t, int64_t offset, int64_t n) {
  Tensor v;
  v.dtype = t.dtype;
  v.rows = v.ld = n;
  v.cols = 1;
  v.host.assign(t.host.begin() + offset * static_cast<int64_t>(t.Elem()),
                t.host.begin() + (offset + n) * static_cast<int64_t>(t.Elem()));
  v.dev = static_cast<char*>(t.dev) + offset * static_cast<int64_t>(t.Elem());
  return v;
}

// Every collective and point-to-point call on every rank (at least 2), out of place and in place, outside and
// inside a group, and on a split communicator; the dump has what each rank's buffers held before (inputs) and
// after (outputs), only the buffers NCCL reads or writes on that rank. World communicator, in order (seq =
// position; coll = simgpu's SIMGPU_FAULT call number on every rank):
//   0 all-gather (coll 0), 1 all-gather in place, 2 reduce-scatter sum (coll 2), 3 reduce-scatter in place,
//   4 broadcast root 1 (coll 4), 5 broadcast in place root 0, 6 bcast root n-1, 7 reduce sum root 0, 8 reduce max
//   in place root n-1, 9 all-to-all, 10 gather root 1, 11 scatter root 0, 12 all-reduce BF16;
//   group { 13 all-gather BF16, 14 reduce-scatter avg, 15 send to rank+1, 16 receive from rank-1 };
//   group { 17 send to rank-1, 18 receive from rank+1 };
// then ncclCommSplit(color rank % 2, key -rank) and on the child 19 all-reduce sum, 20 all-gather.
int RunCollectives(const std::string& rdzv) {
  const int rank = EnvInt("RANK", 0), n = EnvInt("WORLD_SIZE", 1), device = EnvInt("LOCAL_RANK", 0);
  if (n < 2) Die("--collectives needs 2 or more ranks", n);
  CHECK_CUDA(cudaSetDevice(device));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ncclComm_t world;
  CHECK_NCCL(ncclCommInitRank(&world, n, Rendezvous(rdzv, rank), rank));
  ExpectCommInit(fmt::ApiId::kNcclCommInitRank, world, rank, n, device);
  const int64_t c = 7, nc = c * n;
  const uint32_t salt = 7000u * static_cast<uint32_t>(rank);
  uint64_t seq = 0, index = 0;
  std::vector<uint64_t> p2p_index(2 * static_cast<size_t>(n), 0);  // [peer * 2 + send]
  using A = fmt::ApiId;
  // One call: `in` is what the rank's send buffer held (empty tensor: none), `out` its receive buffer (downloaded
  // after the call or group, then dumped by Finish).
  struct Pending {
    uint64_t seq;
    Tensor* out;
    int64_t offset, n;
  };
  std::vector<Pending> outputs;
  auto call = [&](ncclComm_t comm, int crank, int csize, uint64_t* idx, A api, int red_op, int param,
                  ncclDataType_t dt, int64_t count, const Tensor* in, int64_t in_off, int64_t in_n, Tensor* out,
                  int64_t out_off, int64_t out_n, const void* sendbuff, const void* recvbuff, bool in_group,
                  const std::function<ncclResult_t()>& nccl) {
    if (in != nullptr && in_n > 0) ExpectTensor(seq, TensorSlot::kSend, Slice(*in, in_off, in_n));
    CHECK_NCCL(nccl());
    const bool p2p = api == A::kNcclSend || api == A::kNcclRecv;
    uint64_t* counter = p2p ? &p2p_index[static_cast<size_t>(param) * 2 + (api == A::kNcclSend)] : idx;
    Expect(RecordType::kCollective, CollExpect(seq, api, comm, crank, csize, (*counter)++, red_op, param, dt,
                                               static_cast<uint64_t>(count), sendbuff, recvbuff, s, in_group));
    if (out != nullptr && out_n > 0) outputs.push_back({seq, out, out_off, out_n});
    ++seq;
  };
  auto finish = [&] {
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (const Pending& p : outputs) {
      p.out->Download(s);
      ExpectTensor(p.seq, TensorSlot::kRecv, Slice(*p.out, p.offset, p.n));
    }
    outputs.clear();
  };
  std::vector<std::unique_ptr<Tensor>> keep;
  auto vec = [&](DType dt, int64_t elems, uint32_t k, bool upload = true) {
    keep.push_back(std::make_unique<Tensor>(Make(dt, elems, 1, elems, salt + k)));
    if (upload) keep.back()->Upload(s);
    return keep.back().get();
  };
  const int root1 = 1 % n, last = n - 1, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  const ncclDataType_t f32 = ncclFloat32;
  auto W = [&](A api, int red_op, int param, ncclDataType_t dt, int64_t count, const Tensor* in, int64_t in_off,
               int64_t in_n, Tensor* out, int64_t out_off, int64_t out_n, const void* sb, const void* rb,
               bool grouped, const std::function<ncclResult_t()>& nccl) {
    call(world, rank, n, &index, api, red_op, param, dt, count, in, in_off, in_n, out, out_off, out_n, sb, rb,
         grouped, nccl);
    if (!grouped) finish();
  };
  {  // 0, 1: all-gather, out of place and in place
    Tensor *a = vec(DType::kF32, c, 1), *b = vec(DType::kF32, nc, 2, false), *g = vec(DType::kF32, nc, 3);
    W(A::kNcclAllGather, -1, -1, f32, c, a, 0, c, b, 0, nc, a->dev, b->dev, false,
      [&] { return ncclAllGather(a->dev, b->dev, c, f32, world, s); });
    float* mine = static_cast<float*>(g->dev) + rank * c;
    W(A::kNcclAllGather, -1, -1, f32, c, g, rank * c, c, g, 0, nc, mine, g->dev, false,
      [&] { return ncclAllGather(mine, g->dev, c, f32, world, s); });
  }
  {  // 2, 3: reduce-scatter, out of place and in place
    Tensor *a = vec(DType::kF32, nc, 4), *b = vec(DType::kF32, c, 5, false), *h = vec(DType::kF32, nc, 6);
    W(A::kNcclReduceScatter, ncclSum, -1, f32, c, a, 0, nc, b, 0, c, a->dev, b->dev, false,
      [&] { return ncclReduceScatter(a->dev, b->dev, c, f32, ncclSum, world, s); });
    float* mine = static_cast<float*>(h->dev) + rank * c;
    W(A::kNcclReduceScatter, ncclSum, -1, f32, c, h, 0, nc, h, rank * c, c, h->dev, mine, false,
      [&] { return ncclReduceScatter(h->dev, mine, c, f32, ncclSum, world, s); });
  }
  {  // 4, 5, 6: broadcast out of place and in place, bcast
    Tensor *a = vec(DType::kF32, c, 7), *b = vec(DType::kF32, c, 8, false), *k = vec(DType::kF32, c, 9);
    Tensor* m = vec(DType::kF32, c, 10);
    W(A::kNcclBroadcast, -1, root1, f32, c, rank == root1 ? a : nullptr, 0, c, b, 0, c, a->dev, b->dev, false,
      [&] { return ncclBroadcast(a->dev, b->dev, c, f32, root1, world, s); });
    W(A::kNcclBroadcast, -1, 0, f32, c, rank == 0 ? k : nullptr, 0, c, k, 0, c, k->dev, k->dev, false,
      [&] { return ncclBroadcast(k->dev, k->dev, c, f32, 0, world, s); });
    W(A::kNcclBcast, -1, last, f32, c, rank == last ? m : nullptr, 0, c, m, 0, c, m->dev, m->dev, false,
      [&] { return ncclBcast(m->dev, c, f32, last, world, s); });
  }
  {  // 7, 8: reduce out of place (sum, root 0) and in place (max, root n-1)
    Tensor *a = vec(DType::kF32, c, 11), *b = vec(DType::kF32, c, 12, false), *k = vec(DType::kF32, c, 13);
    W(A::kNcclReduce, ncclSum, 0, f32, c, a, 0, c, rank == 0 ? b : nullptr, 0, c, a->dev, b->dev, false,
      [&] { return ncclReduce(a->dev, b->dev, c, f32, ncclSum, 0, world, s); });
    W(A::kNcclReduce, ncclMax, last, f32, c, k, 0, c, rank == last ? k : nullptr, 0, c, k->dev, k->dev, false,
      [&] { return ncclReduce(k->dev, k->dev, c, f32, ncclMax, last, world, s); });
  }
  {  // 9, 10, 11: all-to-all, gather, scatter
    Tensor *a = vec(DType::kF32, nc, 14), *b = vec(DType::kF32, nc, 15, false);
    W(A::kNcclAlltoAll, -1, -1, f32, c, a, 0, nc, b, 0, nc, a->dev, b->dev, false,
      [&] { return ncclAlltoAll(a->dev, b->dev, c, f32, world, s); });
    Tensor *g = vec(DType::kF32, c, 16), *h = vec(DType::kF32, nc, 17, false);
    W(A::kNcclGather, -1, root1, f32, c, g, 0, c, rank == root1 ? h : nullptr, 0, nc, g->dev, h->dev, false,
      [&] { return ncclGather(g->dev, h->dev, c, f32, root1, world, s); });
    Tensor *x = vec(DType::kF32, nc, 18), *y = vec(DType::kF32, c, 19, false);
    W(A::kNcclScatter, -1, 0, f32, c, rank == 0 ? x : nullptr, 0, nc, y, 0, c, x->dev, y->dev, false,
      [&] { return ncclScatter(x->dev, y->dev, c, f32, 0, world, s); });
  }
  {  // 12: all-reduce BF16
    Tensor *a = vec(DType::kBF16, 33, 20), *b = vec(DType::kBF16, 33, 21, false);
    W(A::kNcclAllReduce, ncclSum, -1, ncclBfloat16, 33, a, 0, 33, b, 0, 33, a->dev, b->dev, false,
      [&] { return ncclAllReduce(a->dev, b->dev, 33, ncclBfloat16, ncclSum, world, s); });
  }
  {  // 13-16 in one group, 17-18 in another
    Tensor *a = vec(DType::kBF16, c, 22), *b = vec(DType::kBF16, nc, 23, false);
    Tensor *x = vec(DType::kF32, nc, 24), *y = vec(DType::kF32, c, 25, false);
    Tensor *p = vec(DType::kF32, 9, 26), *q = vec(DType::kF32, 9, 27, false);
    CHECK_NCCL(ncclGroupStart());
    ExpectGroup(fmt::ApiId::kNcclGroupStart, 1);
    W(A::kNcclAllGather, -1, -1, ncclBfloat16, c, a, 0, c, b, 0, nc, a->dev, b->dev, true,
      [&] { return ncclAllGather(a->dev, b->dev, c, ncclBfloat16, world, s); });
    W(A::kNcclReduceScatter, ncclAvg, -1, f32, c, x, 0, nc, y, 0, c, x->dev, y->dev, true,
      [&] { return ncclReduceScatter(x->dev, y->dev, c, f32, ncclAvg, world, s); });
    W(A::kNcclSend, -1, next, f32, 9, p, 0, 9, nullptr, 0, 0, p->dev, nullptr, true,
      [&] { return ncclSend(p->dev, 9, f32, next, world, s); });
    W(A::kNcclRecv, -1, prev, f32, 9, nullptr, 0, 0, q, 0, 9, nullptr, q->dev, true,
      [&] { return ncclRecv(q->dev, 9, f32, prev, world, s); });
    CHECK_NCCL(ncclGroupEnd());
    ExpectGroup(fmt::ApiId::kNcclGroupEnd, 0);
    finish();
    Tensor *u = vec(DType::kF32, 5, 28), *v = vec(DType::kF32, 5, 29, false);
    CHECK_NCCL(ncclGroupStart());
    ExpectGroup(fmt::ApiId::kNcclGroupStart, 1);
    W(A::kNcclSend, -1, prev, f32, 5, u, 0, 5, nullptr, 0, 0, u->dev, nullptr, true,
      [&] { return ncclSend(u->dev, 5, f32, prev, world, s); });
    W(A::kNcclRecv, -1, next, f32, 5, nullptr, 0, 0, v, 0, 5, nullptr, v->dev, true,
      [&] { return ncclRecv(v->dev, 5, f32, next, world, s); });
    CHECK_NCCL(ncclGroupEnd());
    ExpectGroup(fmt::ApiId::kNcclGroupEnd, 0);
    finish();
  }
  // A split: colors rank % 2, keys -rank (the child orders its ranks backwards).
  ncclComm_t child;
  CHECK_NCCL(ncclCommSplit(world, rank % 2, -rank, &child, nullptr));
  const int csize = (n - rank % 2 + 1) / 2;
  int crank = 0;
  for (int r = rank + 2; r < n; r += 2) ++crank;  // same color, larger rank: smaller key
  ExpectCommInit(fmt::ApiId::kNcclCommSplit, child, crank, csize, device);
  {
    uint64_t cindex = 0;
    Tensor *a = vec(DType::kF32, 12, 30), *b = vec(DType::kF32, 12, 31, false);
    call(child, crank, csize, &cindex, A::kNcclAllReduce, ncclSum, -1, f32, 12, a, 0, 12, b, 0, 12, a->dev, b->dev,
         false, [&] { return ncclAllReduce(a->dev, b->dev, 12, f32, ncclSum, child, s); });
    finish();
    Tensor *g = vec(DType::kF32, 4, 32), *h = vec(DType::kF32, 4 * csize, 33, false);
    call(child, crank, csize, &cindex, A::kNcclAllGather, -1, -1, f32, 4, g, 0, 4, h, 0, 4 * csize, g->dev,
         h->dev, false, [&] { return ncclAllGather(g->dev, h->dev, 4, f32, child, s); });
    finish();
  }
  CHECK_NCCL(ncclCommDestroy(child));
  ExpectCommDestroy(child);
  CHECK_NCCL(ncclCommDestroy(world));
  ExpectCommDestroy(world);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::string rdzv, dump;
  int scale = 1, iters = 1, init_all = 0;
  bool fork_child = false, kill_after_destroy = false, timed = false, hang_at_exit = false, nonblocking = false;
  bool abort_pending = false, typed_gemms = false, collectives = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(("missing value of " + arg).c_str(), 0);
      return argv[++i];
    };
    if (arg == "--rdzv") rdzv = value();
    else if (arg == "--dump") dump = value();
    else if (arg == "--scale") scale = std::stoi(value());
    else if (arg == "--iters") iters = std::stoi(value());
    else if (arg == "--init-all") init_all = std::stoi(value());
    else if (arg == "--fork") fork_child = true;
    else if (arg == "--kill-after-destroy") kill_after_destroy = true;
    else if (arg == "--time") timed = true;
    else if (arg == "--hang-at-exit") hang_at_exit = true;
    else if (arg == "--nonblocking") nonblocking = true;
    else if (arg == "--abort-pending") abort_pending = nonblocking = true;
    else if (arg == "--typed-gemms") typed_gemms = true;
    else if (arg == "--collectives") collectives = true;
    else Die(("unknown argument " + arg).c_str(), 0);
  }
  if (!dump.empty() && (g_dump = fopen(dump.c_str(), "wb")) == nullptr) Die("opening the dump", errno);
  const int rc = init_all > 0              ? RunInitAll(init_all)
                 : rdzv.empty()             ? 2
                 : collectives              ? RunCollectives(rdzv)
                                : RunRanks(rdzv, scale, iters, fork_child, kill_after_destroy, timed, hang_at_exit,
                                           nonblocking, abort_pending, typed_gemms);
  if (rc == 2) fprintf(stderr, "usage: shim_workload --rdzv DIR | --init-all N [--dump FILE] ...\n");
  if (g_dump) fclose(g_dump);
  return rc;
}
