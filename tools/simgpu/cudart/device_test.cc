// Devices, versions and the last-error record of simgpu's libcudart.so.13.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace {

TEST(Device, CountSelectAndProperties) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const char* env = getenv("SIMGPU_DEVICES");  // set by one of this test's ctest registrations
  EXPECT_EQ(count, env != nullptr ? atoi(env) : 8);
  ASSERT_GE(count, 4);
  ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 3);
  std::thread([] {
    int d = -1;
    cudaGetDevice(&d);
    EXPECT_EQ(d, 0);  // the current device is per host thread
  }).join();
  EXPECT_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 3);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);

  cudaDeviceProp prop;
  memset(&prop, 0x5a, sizeof prop);
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 2), cudaSuccess);
  EXPECT_NE(std::string(prop.name).find("simgpu"), std::string::npos);
  EXPECT_EQ(prop.warpSize, 32);
  EXPECT_EQ(prop.major, 9);
  EXPECT_GT(prop.totalGlobalMem, size_t{1} << 30);
  EXPECT_EQ(prop.pciBusID, 3);
  EXPECT_EQ(prop.unifiedAddressing, 1);
  EXPECT_EQ(prop.reserved[0], 0);
  EXPECT_EQ(cudaGetDeviceProperties(&prop, count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetDeviceProperties(nullptr, 0), cudaErrorInvalidValue);

  int value = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(value, prop.multiProcessorCount);
  ASSERT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  EXPECT_EQ(value, prop.minor);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, static_cast<cudaDeviceAttr>(100000), 0), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST(Device, Versions) {
  int v = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  EXPECT_EQ(v, CUDART_VERSION);
  ASSERT_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  EXPECT_GE(v, CUDART_VERSION);
  EXPECT_EQ(cudaRuntimeGetVersion(nullptr), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST(Errors, LastErrorIsPerThreadAndResetByGetButNotByPeek) {
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaSetDevice(-5), cudaErrorInvalidDevice);
  int count;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);  // a later success does not clear it
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  std::thread([] { EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess); }).join();
  EXPECT_EQ(cudaMalloc(nullptr, 4), cudaErrorInvalidValue);  // the latest error wins
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

TEST(Errors, NamesAndStringsMatchNvidia) {
  EXPECT_STREQ(cudaGetErrorName(cudaSuccess), "cudaSuccess");
  EXPECT_STREQ(cudaGetErrorString(cudaSuccess), "no error");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidDevice), "invalid device ordinal");
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(12345)), "unrecognized error code");
}

}  // namespace
