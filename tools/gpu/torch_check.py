"""GPU check workload: the cuBLAS calls PyTorch makes (FP32 -> cublasSgemm_v2, BF16/FP16 -> cublasGemmEx and
cublasGemmStridedBatchedEx; addmm may go through cublasLt), run deterministically so that a run under
libttrace.so can be compared bit for bit with a run without it.

Usage: python3 tools/gpu/torch_check.py OUT.pt       (writes every result tensor to OUT.pt)
"""
import sys

import torch


def main() -> int:
    if not torch.cuda.is_available():
        print("torch_check: no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    results = {}
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        a = torch.randn(256, 192, device=dev, dtype=dtype)
        b = torch.randn(192, 128, device=dev, dtype=dtype)
        bias = torch.randn(128, device=dev, dtype=dtype)
        results[f"mm_{dtype}"] = a @ b
        results[f"mm_t_{dtype}"] = a.t().contiguous().t() @ b
        results[f"addmm_{dtype}"] = torch.addmm(bias, a, b)
        x = torch.randn(4, 64, 96, device=dev, dtype=dtype)
        y = torch.randn(4, 96, 32, device=dev, dtype=dtype)
        results[f"bmm_{dtype}"] = torch.bmm(x, y)
    torch.cuda.synchronize()
    torch.save({k: v.cpu() for k, v in results.items()}, sys.argv[1])
    print(f"torch_check: {len(results)} results, torch {torch.__version__}, cuda {torch.version.cuda}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
