// simgpu's libcuda.so.1 next to its libcudart.so.13: initialization, device queries that agree with the runtime,
// primary contexts shared with the runtime's current device, and entry-point resolution (cuGetProcAddress,
// cudaGetDriverEntryPoint).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"

// cudaGetDriverEntryPoint is deprecated in CUDA 13 but still exported and used; it is under test here.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

using simgpu::testing::Eventually;
using simgpu::testing::Gate;

// Runs first in the process (and alone under ctest): nothing has initialized the driver yet.
TEST(Driver, CallsBeforeInitializationFail) {
  int n = -1;
  EXPECT_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  CUcontext ctx;
  EXPECT_EQ(cuCtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
  int version = 0;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);  // allowed before cuInit
  EXPECT_EQ(version, 13000);
  EXPECT_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  EXPECT_EQ(n, 8);  // SIMGPU_DEVICES default
}

TEST(Driver, DeviceQueriesAgreeWithTheRuntime) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUdevice dev = -1;
  EXPECT_EQ(cuDeviceGet(&dev, 8), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGet(&dev, -1), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(cuDeviceGet(&dev, 3), CUDA_SUCCESS);
  EXPECT_EQ(dev, 3);
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 3), cudaSuccess);
  char name[256];
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
  EXPECT_STREQ(name, prop.name);
  ASSERT_EQ(cuDeviceGetName(name, 5, dev), CUDA_SUCCESS);
  EXPECT_EQ(std::string(name), std::string(prop.name, 4));
  EXPECT_EQ(cuDeviceGetName(name, 0, dev), CUDA_ERROR_INVALID_VALUE);
  int answered = 0;
  for (int attr = 1; attr < 160; ++attr) {
    int from_driver = -7, from_runtime = -7;
    CUresult d = cuDeviceGetAttribute(&from_driver, static_cast<CUdevice_attribute>(attr), dev);
    cudaError_t r = cudaDeviceGetAttribute(&from_runtime, static_cast<cudaDeviceAttr>(attr), 3);
    ASSERT_EQ(d == CUDA_SUCCESS, r == cudaSuccess) << "attribute " << attr;
    if (d == CUDA_SUCCESS) {
      ++answered;
      EXPECT_EQ(from_driver, from_runtime) << "attribute " << attr;
    }
  }
  cudaGetLastError();
  EXPECT_GT(answered, 50);
  int major = 0, minor = -1;
  ASSERT_EQ(cuDeviceComputeCapability(&major, &minor, dev), CUDA_SUCCESS);
  EXPECT_EQ(major, prop.major);
  EXPECT_EQ(minor, prop.minor);
  size_t bytes = 0;
  ASSERT_EQ(cuDeviceTotalMem_v2(&bytes, dev), CUDA_SUCCESS);
  EXPECT_EQ(bytes, prop.totalGlobalMem);
  CUuuid a, b;
  ASSERT_EQ(cuDeviceGetUuid_v2(&a, dev), CUDA_SUCCESS);
  EXPECT_EQ(memcmp(a.bytes, prop.uuid.bytes, sizeof a.bytes), 0);
  ASSERT_EQ(cuDeviceGetUuid(&b, 4), CUDA_SUCCESS);
  EXPECT_NE(memcmp(a.bytes, b.bytes, sizeof a.bytes), 0);
}

TEST(Driver, PrimaryContextsFollowTheRuntimesCurrentDevice) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  std::thread([] {
    CUcontext ctx = reinterpret_cast<CUcontext>(1);
    ASSERT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
    EXPECT_EQ(ctx, nullptr);  // a thread that has used neither the runtime nor a context has none
    CUdevice dev = -1;
    EXPECT_EQ(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    unsigned flags = 99;
    int active = -1;
    ASSERT_EQ(cuDevicePrimaryCtxGetState(6, &flags, &active), CUDA_SUCCESS);
    EXPECT_EQ(active, 0);  // nobody used device 6
    EXPECT_EQ(flags, 0u);
    CUcontext primary2 = nullptr, primary3 = nullptr, again = nullptr;
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary2, 2), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary3, 3), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&again, 2), CUDA_SUCCESS);
    EXPECT_EQ(again, primary2);
    EXPECT_NE(primary2, primary3);
    ASSERT_EQ(cuDevicePrimaryCtxGetState(2, &flags, &active), CUDA_SUCCESS);
    EXPECT_EQ(active, 1);
    ASSERT_EQ(cuCtxSetCurrent(primary2), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 2);
    int runtime_device = -1;
    ASSERT_EQ(cudaGetDevice(&runtime_device), cudaSuccess);
    EXPECT_EQ(runtime_device, 2);  // one current device for driver and runtime
    ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
    ASSERT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
    EXPECT_EQ(ctx, primary3);
    ASSERT_EQ(cuCtxGetDevice_v2(&dev, primary2), CUDA_SUCCESS);
    EXPECT_EQ(dev, 2);
    ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_EQ(cuCtxSetCurrent(reinterpret_cast<CUcontext>(&ctx)), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(cuDevicePrimaryCtxSetFlags_v2(2, CU_CTX_SCHED_BLOCKING_SYNC), CUDA_SUCCESS);
    EXPECT_EQ(cuDevicePrimaryCtxSetFlags_v2(2, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuDevicePrimaryCtxSetFlags(2, 0x10000), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuDevicePrimaryCtxGetState(2, &flags, &active), CUDA_SUCCESS);
    EXPECT_EQ(flags, static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC));
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(2), CUDA_SUCCESS);
    EXPECT_EQ(cuDevicePrimaryCtxRelease(2), CUDA_SUCCESS);
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(2), CUDA_ERROR_INVALID_CONTEXT);  // released more than retained
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(3), CUDA_SUCCESS);
    EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx, 99), CUDA_ERROR_INVALID_DEVICE);
  }).join();
}

TEST(Driver, CtxSynchronizeWaitsForTheDevicesStreams) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(s, Gate::WaitFn, &gate), cudaSuccess);
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    returned = true;
  });
  EXPECT_FALSE(Eventually([&] { return returned.load(); }, std::chrono::milliseconds(100)));
  gate.Open();
  waiter.join();
  EXPECT_TRUE(returned.load());
  cudaStreamDestroy(s);
  cudaSetDevice(0);
}

TEST(Driver, ErrorNamesAndStrings) {
  const char* s = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_INVALID_VALUE");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "invalid argument");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_NOT_INITIALIZED, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "initialization error");
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
  ASSERT_EQ(cuGetErrorString(CUDA_SUCCESS, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "no error");
  EXPECT_EQ(cuGetErrorString(static_cast<CUresult>(12345), &s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(cuGetErrorName(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

void* Proc(const char* name, int version, CUdriverProcAddressQueryResult* status,
           cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* fn = reinterpret_cast<void*>(1);
  EXPECT_EQ(cuGetProcAddress_v2(name, &fn, version, flags, status), CUDA_SUCCESS) << name;
  return fn;
}

TEST(Driver, GetProcAddressPicksTheAbiOfTheRequestedVersion) {
  CUdriverProcAddressQueryResult status;
  EXPECT_EQ(Proc("cuInit", 13000, &status), reinterpret_cast<void*>(&cuInit));
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(Proc("cuDevicePrimaryCtxRelease", 10020, &status), reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease));
  EXPECT_EQ(Proc("cuDevicePrimaryCtxRelease", 11000, &status),
            reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease_v2));
  EXPECT_EQ(Proc("cuDeviceGetUuid", 11030, &status), reinterpret_cast<void*>(&cuDeviceGetUuid));
  EXPECT_EQ(Proc("cuDeviceGetUuid", 12000, &status), reinterpret_cast<void*>(&cuDeviceGetUuid_v2));
  EXPECT_EQ(Proc("cuCtxSynchronize", 12080, &status), reinterpret_cast<void*>(&cuCtxSynchronize));
  EXPECT_EQ(Proc("cuCtxSynchronize", 13000, &status, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            reinterpret_cast<void*>(&cuCtxSynchronize_v2));
  EXPECT_EQ(Proc("cuGetProcAddress", 12000, &status), reinterpret_cast<void*>(&cuGetProcAddress_v2));
  EXPECT_EQ(Proc("cuDeviceTotalMem", 3010, &status), nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(Proc("cuMemAlloc", 13000, &status), reinterpret_cast<void*>(&cuMemAlloc_v2));
  EXPECT_EQ(Proc("cuMemAlloc", 3010, &status), nullptr);  // the 32-bit CUDA 2.0 ABI is not implemented
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(Proc("cuStreamGetCaptureInfo", 10010, &status), reinterpret_cast<void*>(&cuStreamGetCaptureInfo));
  EXPECT_EQ(Proc("cuStreamGetCaptureInfo", 12020, &status), reinterpret_cast<void*>(&cuStreamGetCaptureInfo_v2));
  EXPECT_EQ(Proc("cuStreamGetCaptureInfo", 13000, &status), reinterpret_cast<void*>(&cuStreamGetCaptureInfo_v3));
  EXPECT_EQ(Proc("cuEventElapsedTime", 12060, &status), reinterpret_cast<void*>(&cuEventElapsedTime));
  EXPECT_EQ(Proc("cuEventElapsedTime", 13000, &status), reinterpret_cast<void*>(&cuEventElapsedTime_v2));
  EXPECT_EQ(Proc("cuCtxPopCurrent", 12000, &status), reinterpret_cast<void*>(&cuCtxPopCurrent_v2));
  EXPECT_EQ(Proc("cuStreamGetDevice", 12060, &status), nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(Proc("cuMemAllocManaged", 13000, &status), nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(Proc("cuInit_v2", 13000, &status), nullptr);  // base names only
  void* fn = nullptr;
  EXPECT_EQ(cuGetProcAddress_v2("cuInit", &fn, 13010, 0, &status), CUDA_ERROR_INVALID_VALUE);  // newer than us
  EXPECT_EQ(cuGetProcAddress_v2("cuInit", &fn, 13000, 4, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2(nullptr, &fn, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuGetProcAddress("cuDriverGetVersion", &fn, 13000, 0), CUDA_SUCCESS);
  int version = 0;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(int*)>(fn)(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
}

TEST(Driver, RuntimeEntryPointsResolveThroughTheDriver) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  ASSERT_EQ(cudaGetDriverEntryPoint("cuCtxGetCurrent", &fn, cudaEnableDefault, &status), cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSuccess);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuCtxGetCurrent));
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // initializes the runtime, and so the driver
  CUcontext ctx = nullptr;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUcontext*)>(fn)(&ctx), CUDA_SUCCESS);
  EXPECT_NE(ctx, nullptr);  // this thread used the runtime: the primary context of its device is current
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxRelease", &fn, 10000, 0, &status), cudaSuccess);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease));
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxRelease", &fn, 12000, 0, &status), cudaSuccess);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease_v2));
  ASSERT_EQ(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &status), cudaSuccess);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(status, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(cudaGetDriverEntryPoint(nullptr, &fn, 0, &status), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetDriverEntryPoint("cuInit", &fn, 8, &status), cudaErrorInvalidValue);
  cudaGetLastError();
}

}  // namespace
