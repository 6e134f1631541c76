// Devices: selection, synchronization and versions; the device description itself lives in the simgpu core
// (DeviceProperties), shared with the driver library.

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudart/cudart_internal.h"

namespace simgpu::cudart {

int ValidCurrentDevice() {
  int device = CurrentDevice();
  return device >= 0 && device < DeviceCount() ? device : -1;
}

namespace {

constexpr int kRuntimeVersion = 13000;

}  // namespace
}  // namespace simgpu::cudart

using simgpu::cudart::Report;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::InitializeDriver();
  *count = simgpu::DeviceCount();
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Report(cudaErrorInvalidValue);
  *device = simgpu::CurrentDevice();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= simgpu::DeviceCount()) return Report(cudaErrorInvalidDevice);
  simgpu::SetCurrentDevice(device);
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return Report(cudaErrorInvalidValue);
  if (device < 0 || device >= simgpu::DeviceCount()) return Report(cudaErrorInvalidDevice);
  simgpu::InitializeDriver();
  simgpu::DeviceProperties(device, prop);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return Report(cudaErrorInvalidValue);
  if (device < 0 || device >= simgpu::DeviceCount()) return Report(cudaErrorInvalidDevice);
  return simgpu::DeviceAttribute(attr, device, value) ? cudaSuccess : Report(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceSynchronize() {
  if (simgpu::cudart::ValidCurrentDevice() < 0) return Report(cudaErrorInvalidDevice);
  cudaError_t refused = simgpu::CheckDeviceWait(simgpu::CurrentDevice());
  if (refused != cudaSuccess) return Report(refused);
  simgpu::SynchronizeDevice();
  return cudaSuccess;
}

// CUDA destroys every allocation and stream of the device. simgpu waits for the device's work and keeps its
// memory and streams: a program that uses them after a reset is wrong on a GPU, and programs call this at exit.
cudaError_t cudaDeviceReset() {
  if (simgpu::cudart::ValidCurrentDevice() < 0) return Report(cudaErrorInvalidDevice);
  cudaError_t refused = simgpu::CheckDeviceWait(simgpu::CurrentDevice());
  if (refused != cudaSuccess) return Report(refused);
  simgpu::SynchronizeDevice();
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return Report(cudaErrorInvalidValue);
  *runtimeVersion = simgpu::cudart::kRuntimeVersion;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return Report(cudaErrorInvalidValue);
  *driverVersion = simgpu::cudart::kRuntimeVersion;
  return cudaSuccess;
}

}  // extern "C"
