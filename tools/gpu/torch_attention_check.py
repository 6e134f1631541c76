"""GPU check workload: one BF16 attention block as PyTorch runs it on cuDNN, forward and backward (Q/K/V and output
projections through cuBLAS / cuBLASLt, scaled_dot_product_attention forced onto cuDNN's backend graph API, the
backward pass of both), so that a run under libttrace.so can be compared bit for bit with a run without it.

Compared: the block's output, the attention output, and the gradients of the output projection (GEMMs only, which
cuBLAS runs deterministically under CUBLAS_WORKSPACE_CONFIG); the Q/K/V gradients go through cuDNN's attention
backward, which may accumulate in a different order from run to run, so they run but are not compared.

Usage: CUBLAS_WORKSPACE_CONFIG=:4096:8 python3 tools/gpu/torch_attention_check.py OUT.pt
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main() -> int:
    if not torch.cuda.is_available():
        print("torch_attention_check: no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    dev, dtype = torch.device("cuda"), torch.bfloat16
    batch, seq, heads, head_dim = 4, 256, 8, 64
    width = heads * head_dim
    x = torch.randn(batch, seq, width, device=dev, dtype=dtype, requires_grad=True)
    wq, wk, wv, wo = [(torch.randn(width, width, device=dev, dtype=dtype) * 0.04).requires_grad_() for _ in range(4)]
    bias = torch.randn(width, device=dev, dtype=dtype, requires_grad=True)
    q, k, v = [(x @ w).view(batch, seq, heads, head_dim).transpose(1, 2) for w in (wq, wk, wv)]
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = F.linear(o.transpose(1, 2).reshape(batch, seq, width), wo, bias)
    y.float().pow(2).mean().backward()
    torch.cuda.synchronize()
    results = {"y": y.detach(), "attention": o.detach(), "grad_wo": wo.grad, "grad_bias": bias.grad}
    torch.save({k: t.cpu() for k, t in results.items()}, sys.argv[1])
    print(f"torch_attention_check: {len(results)} results, torch {torch.__version__}, cuda {torch.version.cuda}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
