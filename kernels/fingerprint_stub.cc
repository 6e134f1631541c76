// Built instead of fingerprint.cu when no CUDA compiler is present: device fingerprints are unavailable.
#include "kernels/fingerprint.h"

namespace ttrace::kernels {

bool FingerprintDevice(const void*, size_t, uint64_t*, void*) { return false; }
bool HaveDeviceKernels() { return false; }

}  // namespace ttrace::kernels
