// shim_driver_workload: a program with no CUDA runtime in its process, as a closed binary with cudart linked
// statically looks to the shim: it makes its context, allocates, uploads and downloads with the driver API
// (libcuda.so.1), and runs cuBLAS GEMMs and an NCCL all-reduce on a CUstream. It is built twice: linked against
// cuBLAS 13 (shim_driver_workload), and against a stand-in libcublas.so.12 (shim_driver_workload12), so that its
// GEMMs bind to the cuBLAS 12 version node as a CUDA 12 program's do.
//
//   shim_driver_workload --rdzv DIR [--dump FILE] [--both-majors | --graph N]   one rank (RANK, WORLD_SIZE, ...)
//
// seq 0 Sgemm NN (lda padded), 1 GemmEx BF16 x BF16 -> FP32 TN with beta 0.5, 2 all-reduce sum (out of place) of
// GEMM 0's C; --both-majors: 3 an Sgemm through cuBLAS 13's entry point (libcublas.so.13 loaded RTLD_GLOBAL, then
// dlvsym(RTLD_DEFAULT, "cublasSgemm_v2", "libcublas.so.13"), as a second library linked against cuBLAS 13 would
// bind it) in the same process. --graph N: instead, seq 3 (an Sgemm) and 4 (a GemmEx with beta 0.5) are captured
// into a CUDA graph on the stream (they do not run), which is launched N times with new A values uploaded before
// each launch; launch L's GEMMs are the ops 5 + 2L and 6 + 2L (the shim numbers graph launches as they run).
// --dump writes the tensors the program saw (dump.h); stdout says "cudart_loaded=0|1 standin_calls=N".
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
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
using ttrace::format::TensorSlot;

FILE* g_dump = nullptr;

// A column-major rows x cols matrix with leading dimension ld, in device memory and as the host saw it last.
struct Matrix {
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<char> host;
  CUdeviceptr dev = 0;

  size_t Elem() const { return ttrace::format::DTypeSize(static_cast<uint8_t>(dtype)); }
  size_t Bytes() const { return static_cast<size_t>(ld * (cols - 1) + rows) * Elem(); }
  void* Ptr() const { return reinterpret_cast<void*>(dev); }
  void Upload() { CHECK_CU(cuMemcpyHtoD(dev, host.data(), Bytes())); }
  void Download(CUstream s) {
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(host.data(), dev, Bytes()));
  }
  void Expect(uint64_t seq, TensorSlot slot) const {
    if (g_dump == nullptr) return;
    std::string packed;
    for (int64_t j = 0; j < cols; ++j) packed.append(host.data() + j * ld * Elem(), rows * Elem());
    ttrace::format::TensorRecord r;
    memset(&r, 0, sizeof r);
    r.seq = seq;
    r.slot = static_cast<uint8_t>(slot);
    r.dtype = static_cast<uint8_t>(dtype);
    r.rows = rows;
    r.cols = cols;
    r.batch = 1;
    r.payload_bytes = packed.size();
    ttrace::shim::testing::WriteEntry(g_dump, ttrace::format::RecordType::kTensor, &r, sizeof r, packed.data(),
                                      packed.size());
  }
};

// Deterministic values, exactly representable in FP32 and BF16; uploaded.
Matrix Make(DType dtype, int64_t rows, int64_t cols, int64_t ld, uint32_t salt) {
  Matrix m;
  m.dtype = dtype;
  m.rows = rows;
  m.cols = cols;
  m.ld = ld;
  m.host.resize(m.Bytes());
  for (size_t i = 0; i < m.Bytes() / m.Elem(); ++i) {
    const uint32_t h = (static_cast<uint32_t>(i) * 2654435761u) ^ (salt * 40503u);
    const float v = static_cast<float>(static_cast<int>(h % 255u) - 127) / 64.0f;
    if (dtype == DType::kF32) {
      memcpy(m.host.data() + 4 * i, &v, 4);
    } else {
      const uint16_t bits = simgpu::nv::FloatToBf16(v);
      memcpy(m.host.data() + 2 * i, &bits, 2);
    }
  }
  CHECK_CU(cuMemAlloc(&m.dev, m.Bytes()));
  m.Upload();
  return m;
}

bool CudartLoaded() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("libcudart") != std::string::npos) return true;
  return false;
}

// seq 3 and 4 into a graph, launched `launches` times (see the header comment).
void RunGraph(cublasHandle_t h, CUstream s, Matrix& a, const Matrix& b, const Matrix& a2, const Matrix& b2,
              uint32_t salt, int launches) {
  const int m = static_cast<int>(a.rows), k = static_cast<int>(a.cols), n = static_cast<int>(b.cols);
  Matrix c4 = Make(DType::kF32, m, n, m, salt + 20), c5 = Make(DType::kF32, m, n, m, salt + 21);
  const float one = 1.0f, zero = 0.0f, half = 0.5f;
  CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, static_cast<const float*>(a.Ptr()), a.ld,
                           static_cast<const float*>(b.Ptr()), b.ld, &zero, static_cast<float*>(c4.Ptr()), c4.ld));
  CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, a2.Ptr(), CUDA_R_16BF, a2.ld, b2.Ptr(),
                            CUDA_R_16BF, b2.ld, &half, c5.Ptr(), CUDA_R_32F, c5.ld, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  CUgraph graph;
  CHECK_CU(cuStreamEndCapture(s, &graph));
  CUgraphExec exec;
  CHECK_CU(cuGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < launches; ++launch) {
    const uint64_t seq = 5 + 2 * static_cast<uint64_t>(launch);
    Matrix fresh = Make(DType::kF32, a.rows, a.cols, a.ld, salt + 30 + static_cast<uint32_t>(launch));
    a.host = fresh.host;
    a.Upload();
    CHECK_CU(cuMemFree(fresh.dev));
    c5.Expect(seq + 1, TensorSlot::kCIn);
    CHECK_CU(cuGraphLaunch(exec, s));
    c4.Download(s);
    c5.Download(s);
    a.Expect(seq, TensorSlot::kA);
    b.Expect(seq, TensorSlot::kB);
    c4.Expect(seq, TensorSlot::kCOut);
    a2.Expect(seq + 1, TensorSlot::kA);
    b2.Expect(seq + 1, TensorSlot::kB);
    c5.Expect(seq + 1, TensorSlot::kCOut);
  }
  CHECK_CU(cuGraphExecDestroy(exec));
  CHECK_CU(cuGraphDestroy(graph));
}

int Run(const std::string& rdzv, bool both_majors, int graph_launches) {
  const int rank = EnvInt("RANK", 0), world = EnvInt("WORLD_SIZE", 1), local = EnvInt("LOCAL_RANK", 0);
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, local));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, device));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  CHECK_CUBLAS(cublasSetStream(h, s));
  ncclUniqueId id;
  if (!ttrace::shim::testing::ExchangeUniqueId(rdzv, rank, &id)) Die("the NCCL unique id exchange", 0);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));

  const uint32_t salt = 17u * static_cast<uint32_t>(rank + 1);
  const int m = 24, n = 16, k = 32;
  // seq 0: C = A * B, A padded (ld 40).
  Matrix a = Make(DType::kF32, m, k, 40, salt + 1), b = Make(DType::kF32, k, n, k, salt + 2);
  Matrix c = Make(DType::kF32, m, n, m, salt + 3);
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, static_cast<const float*>(a.Ptr()), a.ld,
                           static_cast<const float*>(b.Ptr()), b.ld, &zero, static_cast<float*>(c.Ptr()), c.ld));
  c.Download(s);
  a.Expect(0, TensorSlot::kA);
  b.Expect(0, TensorSlot::kB);
  c.Expect(0, TensorSlot::kCOut);

  // seq 1: C2 = A2^T * B2 + 0.5 C2 in BF16 x BF16 -> FP32.
  Matrix a2 = Make(DType::kBF16, k, m, k, salt + 4), b2 = Make(DType::kBF16, k, n, k, salt + 5);
  Matrix c2 = Make(DType::kF32, m, n, m, salt + 6);
  const float half = 0.5f;
  c2.Expect(1, TensorSlot::kCIn);
  CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, a2.Ptr(), CUDA_R_16BF, a2.ld, b2.Ptr(),
                            CUDA_R_16BF, b2.ld, &half, c2.Ptr(), CUDA_R_32F, c2.ld, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  c2.Download(s);
  a2.Expect(1, TensorSlot::kA);
  b2.Expect(1, TensorSlot::kB);
  c2.Expect(1, TensorSlot::kCOut);

  // seq 2: R = sum over ranks of C.
  Matrix r = Make(DType::kF32, m * n, 1, m * n, salt + 7);
  CHECK_NCCL(ncclAllReduce(c.Ptr(), r.Ptr(), m * n, ncclFloat, ncclSum, comm, s));
  r.Download(s);
  Matrix send = c;
  send.rows = send.ld = m * n;
  send.cols = 1;
  send.Expect(2, TensorSlot::kSend);
  r.Expect(2, TensorSlot::kRecv);

  if (graph_launches > 0) RunGraph(h, s, a, b, a2, b2, salt, graph_launches);
  if (both_majors) {
    // seq 3: the cuBLAS 13 entry point, in the same process, C3 = 2 A B.
    // A library linked against cuBLAS 13 beside this program's cuBLAS 12: libcublas.so.13 in the global scope.
    if (dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL) == nullptr) Die("dlopen libcublas.so.13", 0);
    using Sgemm = decltype(&cublasSgemm_v2);
    auto sgemm13 = reinterpret_cast<Sgemm>(dlvsym(RTLD_DEFAULT, "cublasSgemm_v2", "libcublas.so.13"));
    if (sgemm13 == nullptr) Die("dlvsym cublasSgemm_v2@libcublas.so.13", 0);
    Matrix c3 = Make(DType::kF32, m, n, m, salt + 8);
    const float two = 2.0f;
    CHECK_CUBLAS(sgemm13(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &two, static_cast<const float*>(a.Ptr()), a.ld,
                         static_cast<const float*>(b.Ptr()), b.ld, &zero, static_cast<float*>(c3.Ptr()), c3.ld));
    c3.Download(s);
    a.Expect(3, TensorSlot::kA);
    b.Expect(3, TensorSlot::kB);
    c3.Expect(3, TensorSlot::kCOut);
  }

  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK_CUBLAS(cublasDestroy(h));
  CHECK_CU(cuStreamDestroy(s));
  auto standin_calls = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "standin_cublas12_calls"));
  printf("cudart_loaded=%d standin_calls=%ld\n", CudartLoaded() ? 1 : 0,
         standin_calls != nullptr ? standin_calls() : -1L);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string rdzv, dump;
  bool both_majors = false;
  int graph_launches = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--both-majors") {
      both_majors = true;
    } else if (arg == "--graph" && i + 1 < argc) {
      graph_launches = atoi(argv[++i]);
    } else if ((arg == "--rdzv" || arg == "--dump") && i + 1 < argc) {
      (arg == "--rdzv" ? rdzv : dump) = argv[++i];
    } else {
      fprintf(stderr, "usage: shim_driver_workload --rdzv DIR [--dump FILE] [--both-majors | --graph N]\n");
      return 2;
    }
  }
  if (rdzv.empty() || (both_majors && graph_launches > 0)) {
    fprintf(stderr, "usage: shim_driver_workload --rdzv DIR [--dump FILE] [--both-majors | --graph N]\n");
    return 2;
  }
  if (!dump.empty() && (g_dump = fopen(dump.c_str(), "wb")) == nullptr) Die("opening the dump", 0);
  const int rc = Run(rdzv, both_majors, graph_launches);
  if (g_dump != nullptr) fclose(g_dump);
  return rc;
}
