// simgpu_cudnn_unimplemented_load: linked against NVIDIA's libcudnn.so, run on simgpu's with LD_BIND_NOW=1
// (simgpu.Cudnn.UnimplementedLoadsBindNow). Loading at all shows every referenced name resolves; then
// cudnnCreatePoolingDescriptor (through its real prototype) and every other stub must return
// CUDNN_STATUS_NOT_SUPPORTED and leave "simgpu: <name> is not implemented" as the last error, read once.
// Prints the failures and exits 1, or prints a summary and exits 0.
#include <cudnn.h>

#include <cstdio>
#include <string>

#include "tools/simgpu/cudnn/unimplemented_load_test.h"

namespace {

int failures = 0;

void Expect(const char* name, int status) {
  char message[256];
  cudnnGetLastErrorString(message, sizeof message);
  const std::string want = std::string("simgpu: ") + name + " is not implemented";
  if (status != CUDNN_STATUS_NOT_SUPPORTED || want != message) {
    std::printf("FAIL: %s returned %d (%s), last error \"%s\"\n", name, status,
                cudnnGetErrorString(static_cast<cudnnStatus_t>(status)), message);
    ++failures;
  }
  cudnnGetLastErrorString(message, sizeof message);
  if (message[0] != '\0') {
    std::printf("FAIL: %s: reading the last error did not clear it (\"%s\")\n", name, message);
    ++failures;
  }
}

}  // namespace

int main() {
  using simgpu::cudnn::testing::kStubRefCount;
  using simgpu::cudnn::testing::kStubRefs;
  cudnnPoolingDescriptor_t pooling = nullptr;
  Expect("cudnnCreatePoolingDescriptor", cudnnCreatePoolingDescriptor(&pooling));
  for (int i = 0; i < kStubRefCount; ++i) Expect(kStubRefs[i].name, kStubRefs[i].fn());
  if (failures != 0) return 1;
  std::printf("OK: %d unimplemented functions resolved with LD_BIND_NOW=1, each NOT_SUPPORTED with its message\n",
              kStubRefCount);
  return 0;
}
