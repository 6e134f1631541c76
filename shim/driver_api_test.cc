// How the capture engine's driver table is resolved (driver_api.h): each function through cuGetProcAddress with
// the CUDA version of the ABI its pointer type declares and legacy-stream semantics, the exported name of that
// ABI when cuGetProcAddress cannot serve it, and the first missing required function named. Then the real thing:
// simgpu's libcuda.so.1 serves the whole table.
#include "shim/driver_api.h"

#include <dlfcn.h>

#include <map>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace ttrace::shim {
namespace {

struct Asked {
  int version;
  cuuint64_t flags;
};
std::map<std::string, Asked> g_asked;
std::set<std::string> g_not_served;  // get_proc answers VERSION_NOT_SUFFICIENT for these
std::set<std::string> g_exported;    // the fake dlsym knows these
std::set<std::string> g_dlsym_asked;

// A distinct address per name, standing in for a function.
void* Sentinel(const std::string& name) {
  static std::map<std::string, char> storage;
  return &storage[name];
}

CUresult FakeGetProc(const char* symbol, void** pfn, int version, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* status) {
  g_asked[symbol] = {version, flags};
  if (g_not_served.count(symbol) != 0) {
    *pfn = nullptr;
    *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_SUCCESS;
  }
  *pfn = Sentinel(std::string(symbol) + "@" + std::to_string(version));
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

void* FakeDlsym(const char* name) {
  g_dlsym_asked.insert(name);
  return g_exported.count(name) != 0 ? Sentinel(name) : nullptr;
}

void Reset() {
  g_asked.clear();
  g_not_served.clear();
  g_exported.clear();
  g_dlsym_asked.clear();
}

TEST(DriverApiTest, AsksEachFunctionForTheAbiItsPointerTypeDeclares) {
  Reset();
  DriverApi api{};
  EXPECT_EQ(ResolveDriver(&FakeGetProc, &FakeDlsym, &api), nullptr);
  // cuStreamGetCtx got a new ABI in 12.5 and cuMemcpyDtoHAsync its 64-bit one in 3.2: we must get the ones our
  // pointer types are, whatever the driver's version.
  EXPECT_EQ(g_asked.at("cuStreamGetCtx").version, 9020);
  EXPECT_EQ(g_asked.at("cuMemcpyDtoHAsync").version, 3020);
  EXPECT_EQ(g_asked.at("cuEventDestroy").version, 4000);
  EXPECT_EQ(g_asked.at("cuCtxPushCurrent").version, 4000);
  for (const auto& [name, asked] : g_asked)
    EXPECT_EQ(asked.flags, CU_GET_PROC_ADDRESS_LEGACY_STREAM) << name;
  EXPECT_EQ(reinterpret_cast<void*>(api.StreamGetCtx), Sentinel("cuStreamGetCtx@9020"));
  EXPECT_EQ(reinterpret_cast<void*>(api.MemcpyDtoHAsync), Sentinel("cuMemcpyDtoHAsync@3020"));
  // cuDNN's native-graph kernels are read and written through the CUDA 12.0 kernel-node ABI (CUDA_KERNEL_NODE_PARAMS
  // with its kern and ctx fields), attributes through 11.0's.
  EXPECT_EQ(g_asked.at("cuGraphKernelNodeGetParams").version, 12000);
  EXPECT_EQ(g_asked.at("cuGraphKernelNodeSetParams").version, 12000);
  EXPECT_EQ(g_asked.at("cuGraphKernelNodeCopyAttributes").version, 11000);
  EXPECT_EQ(g_asked.at("cuMemAlloc").version, 3020);
  EXPECT_EQ(g_asked.size(), 37u);
  EXPECT_TRUE(g_dlsym_asked.empty());
}

TEST(DriverApiTest, FallsBackToTheExportedNameOfTheAbi) {
  Reset();
  g_not_served = {"cuMemcpyDtoHAsync", "cuEventDestroy", "cuStreamGetCtx"};
  g_exported = {"cuMemcpyDtoHAsync_v2", "cuEventDestroy_v2"};
  DriverApi api{};
  EXPECT_EQ(ResolveDriver(&FakeGetProc, &FakeDlsym, &api), nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(api.MemcpyDtoHAsync), Sentinel("cuMemcpyDtoHAsync_v2"));
  EXPECT_EQ(reinterpret_cast<void*>(api.EventDestroy), Sentinel("cuEventDestroy_v2"));
  EXPECT_EQ(api.StreamGetCtx, nullptr) << "optional: absent";
  EXPECT_EQ(g_dlsym_asked, (std::set<std::string>{"cuMemcpyDtoHAsync_v2", "cuEventDestroy_v2", "cuStreamGetCtx"}));

  // No cuGetProcAddress at all (a driver older than CUDA 11.3): every function by its exported name.
  Reset();
  g_exported = {"cuMemcpyDtoHAsync_v2", "cuMemHostAlloc", "cuMemFreeHost", "cuEventCreate", "cuEventRecord",
                "cuEventQuery", "cuEventDestroy_v2"};
  EXPECT_EQ(ResolveDriver(nullptr, &FakeDlsym, &api), nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(api.EventRecord), Sentinel("cuEventRecord"));
  EXPECT_EQ(api.Memcpy2DAsync, nullptr);
}

TEST(DriverApiTest, NamesTheFirstMissingRequiredFunction) {
  Reset();
  g_not_served = {"cuEventQuery", "cuEventRecord", "cuGetErrorName"};
  DriverApi api{};
  EXPECT_STREQ(ResolveDriver(&FakeGetProc, &FakeDlsym, &api), "cuEventRecord");
  Reset();
  g_not_served = {"cuGetErrorName", "cuMemcpy2DAsync"};  // optional ones only
  EXPECT_EQ(ResolveDriver(&FakeGetProc, &FakeDlsym, &api), nullptr);
}

// simgpu's libcuda.so.1, loaded as a CUDA program's libraries load it: the process's driver has every function,
// and it works (a pinned allocation, an event on the legacy stream).
TEST(DriverApiTest, SimgpuDriverServesTheWholeTable) {
  ASSERT_NE(dlopen(TTRACE_SIMGPU_LIBDIR "/libcuda.so.1", RTLD_NOW | RTLD_GLOBAL), nullptr) << dlerror();
  const char* missing = "unset";
  const DriverApi* driver = ProcessDriver(&missing);
  ASSERT_NE(driver, nullptr) << missing;
  EXPECT_EQ(missing, nullptr);
#define TTRACE_EXPECT_BOUND(member, name, version, exported, required) \
  EXPECT_NE(driver->member, nullptr) << #name;
  TTRACE_DRIVER_FUNCTIONS(TTRACE_EXPECT_BOUND)
#undef TTRACE_EXPECT_BOUND
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cuInit"));
  ASSERT_NE(init, nullptr);
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  auto retain = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRetain"));
  CUcontext ctx = nullptr;
  ASSERT_EQ(retain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(driver->CtxPushCurrent(ctx), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(driver->MemHostAlloc(&pinned, 4096, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(driver->EventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_EQ(driver->EventRecord(event, nullptr), CUDA_SUCCESS);
  CUresult q;
  while ((q = driver->EventQuery(event)) == CUDA_ERROR_NOT_READY) {
  }
  EXPECT_EQ(q, CUDA_SUCCESS);
  EXPECT_EQ(CudaErrorText(driver, CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(driver->EventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(driver->MemFreeHost(pinned), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  EXPECT_EQ(driver->CtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, ctx);
}

}  // namespace
}  // namespace ttrace::shim
