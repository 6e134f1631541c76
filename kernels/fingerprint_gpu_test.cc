// GPU fingerprints equal the CPU twin's bit for bit. Labelled `gpu`; skips itself without a CUDA device.
#include <cuda_runtime_api.h>

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/fingerprint.h"

namespace ttrace::kernels {
namespace {

TEST(FingerprintGpu, EqualsCpuTwin) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(HaveDeviceKernels());
  std::mt19937 rng(3);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{1000}, size_t{1} << 20,
                       (size_t{1} << 24) + 5}) {
    std::vector<unsigned char> host(bytes);
    for (auto& b : host) b = static_cast<unsigned char>(rng());
    void* dev = nullptr;
    uint64_t* out = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, bytes + 1), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), sizeof *out), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_TRUE(FingerprintDevice(dev, bytes, out, nullptr));
    uint64_t got = 0;
    ASSERT_EQ(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, FingerprintHost(host.data(), bytes)) << bytes;
    cudaFree(dev);
    cudaFree(out);
  }
}

}  // namespace
}  // namespace ttrace::kernels
