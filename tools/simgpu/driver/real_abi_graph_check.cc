// A program built the ordinary way against NVIDIA's toolkit (real headers; linked with NVIDIA's libcudart.so,
// libcublas.so and the libcuda.so stub; see CMakeLists.txt) and run with LD_LIBRARY_PATH=<simgpu lib dir>. It
// checks that the loader bound its references to simgpu's libraries in argv[1], then uses the issue-3 runtime
// surface as an application would: driver entry points, a cuBLAS GEMM recorded by stream capture across two
// streams and replayed with new operands, stream-ordered allocation and pitched copies. Exit 0 on success, 1
// with a message otherwise.
#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

std::string dir;

bool From(void* address, const char* what) {
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    fprintf(stderr, "%s is not defined in the process\n", what);
    return false;
  }
  if (std::string(info.dli_fname).rfind(dir, 0) != 0) {
    fprintf(stderr, "%s comes from %s, not from %s\n", what, info.dli_fname, dir.c_str());
    return false;
  }
  return true;
}

#define CHECK(cond)                                        \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                            \
    }                                                      \
  } while (0)

int CheckDriver() {
  CHECK(From(dlvsym(RTLD_DEFAULT, "cudaStreamBeginCapture", "libcudart.so.13"), "cudaStreamBeginCapture"));
  CHECK(From(dlvsym(RTLD_DEFAULT, "cudaGraphLaunch", "libcudart.so.13"), "cudaGraphLaunch"));
  CHECK(From(dlvsym(RTLD_DEFAULT, "cudaMallocAsync", "libcudart.so.13"), "cudaMallocAsync"));
  CHECK(From(dlsym(RTLD_DEFAULT, "cuInit"), "cuInit"));
  CHECK(From(dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"), "cuGetProcAddress_v2"));
  CHECK(cuInit(0) == CUDA_SUCCESS);
  int count = 0;
  CHECK(cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0);
  char name[128];
  CHECK(cuDeviceGetName(name, sizeof name, 0) == CUDA_SUCCESS && strstr(name, "simgpu") != nullptr);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status;
  CHECK(cudaGetDriverEntryPointByVersion("cuDriverGetVersion", &fn, 12000, cudaEnableDefault, &status) ==
        cudaSuccess);
  CHECK(status == cudaDriverEntryPointSuccess && From(fn, "cuDriverGetVersion via cudaGetDriverEntryPoint"));
  int version = 0;
  CHECK(reinterpret_cast<CUresult (*)(int*)>(fn)(&version) == CUDA_SUCCESS && version >= 12000);
  CUcontext ctx = nullptr;
  CHECK(cudaSetDevice(0) == cudaSuccess && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr);
  return 0;
}

// C = A * B (2 x 2, column-major) recorded once; B's upload on a second stream forked and joined by events.
int CheckCapturedGemm() {
  cudaStream_t main_stream, side;
  CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking) == cudaSuccess);
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t fork, join;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) == cudaSuccess);
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming) == cudaSuccess);
  cublasHandle_t handle;
  CHECK(cublasCreate_v2(&handle) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasSetStream_v2(handle, main_stream) == CUBLAS_STATUS_SUCCESS);
  float *a, *b, *c, *host_b, *host_c;
  CHECK(cudaMalloc(reinterpret_cast<void**>(&a), 16) == cudaSuccess);
  CHECK(cudaMalloc(reinterpret_cast<void**>(&b), 16) == cudaSuccess);
  CHECK(cudaMalloc(reinterpret_cast<void**>(&c), 16) == cudaSuccess);
  CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_b), 16) == cudaSuccess);
  CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_c), 16) == cudaSuccess);
  const float host_a[4] = {1, 2, 3, 4};  // [[1, 3], [2, 4]]
  CHECK(cudaMemcpy(a, host_a, 16, cudaMemcpyHostToDevice) == cudaSuccess);
  const float alpha = 1.0f, beta = 0.0f;

  CHECK(cudaStreamBeginCapture(main_stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  CHECK(cudaEventRecord(fork, main_stream) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(side, fork, 0) == cudaSuccess);
  CHECK(cudaMemcpyAsync(b, host_b, 16, cudaMemcpyHostToDevice, side) == cudaSuccess);
  CHECK(cudaEventRecord(join, side) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(main_stream, join, 0) == cudaSuccess);
  CHECK(cublasSgemm_v2(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta, c, 2) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(cudaMemcpyAsync(host_c, c, 16, cudaMemcpyDeviceToHost, main_stream) == cudaSuccess);
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(main_stream, &graph) == cudaSuccess);
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess && nodes == 3);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);

  for (float scale : {1.0f, -2.0f}) {
    for (int i = 0; i < 4; ++i) host_b[i] = scale * static_cast<float>(i + 5);  // [[5, 7], [6, 8]] * scale
    memset(host_c, 0, 16);
    CHECK(cudaGraphLaunch(exec, main_stream) == cudaSuccess);
    CHECK(cudaStreamSynchronize(main_stream) == cudaSuccess);
    const float expected[4] = {23 * scale, 34 * scale, 31 * scale, 46 * scale};
    if (memcmp(host_c, expected, sizeof expected) != 0) {
      fprintf(stderr, "replayed A * B = [%g %g %g %g], expected [%g %g %g %g]\n", host_c[0], host_c[1], host_c[2],
              host_c[3], expected[0], expected[1], expected[2], expected[3]);
      return 1;
    }
  }
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess && cudaGraphDestroy(graph) == cudaSuccess);
  cublasDestroy_v2(handle);
  for (float* p : {a, b, c}) cudaFree(p);
  cudaFreeHost(host_b);
  cudaFreeHost(host_c);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(main_stream);
  cudaStreamDestroy(side);
  return 0;
}

int CheckAsyncMemory() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -1) == cudaSuccess);
  unsigned char* dev = nullptr;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&dev), 4 * 32, s) == cudaSuccess);
  unsigned char host[3 * 10], back[3 * 6] = {};
  for (int i = 0; i < 30; ++i) host[i] = static_cast<unsigned char>(i);
  CHECK(cudaMemcpy2DAsync(dev, 32, host, 10, 6, 3, cudaMemcpyHostToDevice, s) == cudaSuccess);
  CHECK(cudaMemcpy2DAsync(back, 6, dev, 32, 6, 3, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(cudaFreeAsync(dev, s) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  for (int r = 0; r < 3; ++r) {
    for (int col = 0; col < 6; ++col) CHECK(back[r * 6 + col] == host[r * 10 + col]);
  }
  cudaStreamDestroy(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SIMGPU_LIB_DIR\n", argv[0]);
    return 1;
  }
  dir = argv[1];
  if (CheckDriver() != 0 || CheckCapturedGemm() != 0 || CheckAsyncMemory() != 0) return 1;
  printf("OK: NVIDIA-linked program used capture, graphs, the driver API and async memory on simgpu from %s\n",
         dir.c_str());
  return 0;
}
