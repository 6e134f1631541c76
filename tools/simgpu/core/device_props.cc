// Device description shared by the runtime (cudaGetDeviceProperties, cudaDeviceGetAttribute) and the driver
// (cuDeviceGetAttribute, cuDeviceGetName, cuDeviceTotalMem): SIMGPU_DEVICES identical CPU-backed devices that
// describe themselves as a compute capability 9.0 part with kDeviceMemoryBytes of memory. Properties that imply
// hardware simgpu does not emulate (managed memory, cooperative or cluster launch) are reported as unsupported;
// stream-ordered allocation (memory pools) is supported.
#include <cstdio>
#include <cstring>

#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

constexpr int kClockKhz = 1755000;
constexpr int kMemoryClockKhz = 2619000;

void Fill(int device, cudaDeviceProp* p) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "simgpu CPU device %d", device);
  static const char kUuidPrefix[] = "simgpu-dev";
  memcpy(p->uuid.bytes, kUuidPrefix, sizeof kUuidPrefix - 1);
  p->uuid.bytes[15] = static_cast<char>(device);
  p->totalGlobalMem = kDeviceMemoryBytes;
  p->sharedMemPerBlock = 48 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 << 10;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = 132;
  p->canMapHostMemory = 1;
  p->surfaceAlignment = 512;
  p->concurrentKernels = 1;
  p->pciBusID = device + 1;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 << 20;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerMultiprocessor = 65536;
  p->computePreemptionSupported = 1;
  p->sharedMemPerBlockOptin = 227 << 10;
  p->maxBlocksPerMultiProcessor = 32;
  p->reservedSharedMemPerBlock = 1 << 10;
  p->hostRegisterSupported = 0;
  p->memoryPoolsSupported = 1;
  p->memoryPoolSupportedHandleTypes = 0;
  p->deviceNumaId = -1;
  p->hostNumaId = -1;
}

bool Lookup(cudaDeviceAttr attr, const cudaDeviceProp& p, int* value) {
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; return true;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; return true;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; return true;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; return true;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; return true;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; return true;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; return true;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); return true;
    case cudaDevAttrTotalConstantMemory: *value = static_cast<int>(p.totalConstMem); return true;
    case cudaDevAttrWarpSize: *value = p.warpSize; return true;
    case cudaDevAttrMaxPitch: *value = static_cast<int>(p.memPitch); return true;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; return true;
    case cudaDevAttrClockRate: *value = kClockKhz; return true;
    case cudaDevAttrTextureAlignment: *value = static_cast<int>(p.textureAlignment); return true;
    case cudaDevAttrGpuOverlap: *value = 1; return true;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; return true;
    case cudaDevAttrKernelExecTimeout: *value = 0; return true;
    case cudaDevAttrIntegrated: *value = p.integrated; return true;
    case cudaDevAttrCanMapHostMemory: *value = p.canMapHostMemory; return true;
    case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; return true;
    case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; return true;
    case cudaDevAttrEccEnabled: *value = p.ECCEnabled; return true;
    case cudaDevAttrPciBusId: *value = p.pciBusID; return true;
    case cudaDevAttrPciDeviceId: *value = p.pciDeviceID; return true;
    case cudaDevAttrPciDomainId: *value = p.pciDomainID; return true;
    case cudaDevAttrTccDriver: *value = p.tccDriver; return true;
    case cudaDevAttrMemoryClockRate: *value = kMemoryClockKhz; return true;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; return true;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; return true;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; return true;
    case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; return true;
    case cudaDevAttrUnifiedAddressing: *value = p.unifiedAddressing; return true;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; return true;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; return true;
    case cudaDevAttrStreamPrioritiesSupported: *value = p.streamPrioritiesSupported; return true;
    case cudaDevAttrGlobalL1CacheSupported: *value = p.globalL1CacheSupported; return true;
    case cudaDevAttrLocalL1CacheSupported: *value = p.localL1CacheSupported; return true;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = static_cast<int>(p.sharedMemPerMultiprocessor);
      return true;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; return true;
    case cudaDevAttrManagedMemory: *value = p.managedMemory; return true;
    case cudaDevAttrIsMultiGpuBoard: *value = p.isMultiGpuBoard; return true;
    case cudaDevAttrMultiGpuBoardGroupID: *value = p.multiGpuBoardGroupID; return true;
    case cudaDevAttrHostNativeAtomicSupported: *value = p.hostNativeAtomicSupported; return true;
    case cudaDevAttrPageableMemoryAccess: *value = p.pageableMemoryAccess; return true;
    case cudaDevAttrConcurrentManagedAccess: *value = p.concurrentManagedAccess; return true;
    case cudaDevAttrComputePreemptionSupported: *value = p.computePreemptionSupported; return true;
    case cudaDevAttrCooperativeLaunch: *value = p.cooperativeLaunch; return true;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(p.sharedMemPerBlockOptin); return true;
    case cudaDevAttrHostRegisterSupported: *value = p.hostRegisterSupported; return true;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; return true;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = static_cast<int>(p.reservedSharedMemPerBlock); return true;
    case cudaDevAttrMemoryPoolsSupported: *value = p.memoryPoolsSupported; return true;
    case cudaDevAttrMemoryPoolSupportedHandleTypes: *value = p.memoryPoolSupportedHandleTypes; return true;
    case cudaDevAttrClusterLaunch: *value = p.clusterLaunch; return true;
    case cudaDevAttrNumaId: *value = p.deviceNumaId; return true;
    case cudaDevAttrHostNumaId: *value = p.hostNumaId; return true;
    default: return false;
  }
}

}  // namespace

void DeviceProperties(int device, cudaDeviceProp* prop) { Fill(device, prop); }

bool DeviceAttribute(cudaDeviceAttr attr, int device, int* value) {
  cudaDeviceProp p;
  Fill(device, &p);
  return Lookup(attr, p, value);
}

}  // namespace simgpu
