// The gpt workload's thin layer over CUDA, cuBLAS and NCCL: device buffers in the run's dtype, row-major GEMMs
// issued as PyTorch issues them (cublasGemmEx, cublasGemmStridedBatchedEx), collectives and point-to-point
// transfers on communicator groups. Every failure of a vendor call ends the program (exit 1) with the call named:
// the workload is a test subject, not a library, and has nothing to recover.
//
// Single-threaded: every call runs on the calling thread's one stream; downloads synchronize that stream.
#ifndef TTRACE_TOOLS_WORKLOADS_GPT_DEVICE_H_
#define TTRACE_TOOLS_WORKLOADS_GPT_DEVICE_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

namespace ttrace::workloads::gpt {

[[noreturn]] void Die(const std::string& what, const std::string& why);

// `v` rounded to BF16 (round to nearest even) when `bf16`, else unchanged: what storing it in the run's dtype does.
float Round(float v, bool bf16);
void RoundAll(std::vector<float>& v, bool bf16);

// An owned device allocation of `size` elements, BF16 or FP32.
class DevBuf {
 public:
  DevBuf() = default;
  DevBuf(size_t size, bool bf16);
  DevBuf(DevBuf&& o) noexcept;
  DevBuf& operator=(DevBuf&& o) noexcept;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf();

  void* data() const { return p_; }
  void* at(size_t elem) const;
  size_t size() const { return n_; }
  bool bf16() const { return bf16_; }
  size_t elem_bytes() const { return bf16_ ? 2 : 4; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
  bool bf16_ = false;
};

// One communicator and this process's place in it. size 1 groups carry no traffic: like Megatron's mappings,
// every collective on them is skipped.
struct Group {
  ncclComm_t comm = nullptr;
  int size = 1;
  int rank = 0;
};

class Device {
 public:
  // Selects device `local_rank`, creates the stream and the cuBLAS handle. `bf16`: the dtype of activations and
  // of the weights' device copies.
  Device(int local_rank, bool bf16);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  bool bf16() const { return bf16_; }
  cudaStream_t stream() const { return stream_; }

  // Host FP32 to a new device buffer in the run's dtype (`f32`: always FP32), rounding to nearest even.
  DevBuf Upload(const std::vector<float>& host, bool f32 = false) const;
  void UploadTo(const std::vector<float>& host, DevBuf& dst) const;
  // Waits for the stream, then copies the whole buffer back as FP32.
  std::vector<float> Download(const DevBuf& b) const;
  DevBuf Alloc(size_t n, bool f32 = false) const { return DevBuf(n, f32 ? false : bf16_); }
  // Copies `n` elements between device buffers of one dtype, stream-ordered.
  void Copy(const DevBuf& src, size_t src_off, DevBuf& dst, size_t dst_off, size_t n) const;

  // Row-major C_i = alpha·op(A_i)·op(B_i) for i < batch (C: m x n, op(A): m x k, op(B): k x n; ld*: row lengths as
  // stored; s*: element strides between batch entries). batch 1: cublasGemmEx; more: cublasGemmStridedBatchedEx.
  // All operands in the run's dtype, FP32 compute.
  void Gemm(bool ta, bool tb, int m, int n, int k, float alpha, const DevBuf& a, int lda, long long sa,
            const DevBuf& b, int ldb, long long sb, DevBuf& c, int ldc, long long sc, int batch) const;
  // Row-major C = op(A)·op(B), unbatched and with packed rows.
  void MatMul(bool ta, bool tb, int m, int n, int k, const DevBuf& a, const DevBuf& b, DevBuf& c) const;

  void AllReduce(const Group& g, DevBuf& buf, ncclRedOp_t op) const;
  // out holds g.size chunks of in.size() elements, in rank order.
  void AllGather(const Group& g, const DevBuf& in, DevBuf& out) const;
  // in holds g.size chunks of out.size() elements; out receives this rank's reduced chunk.
  void ReduceScatter(const Group& g, const DevBuf& in, DevBuf& out, ncclRedOp_t op) const;
  // One transfer as its own NCCL group (ncclGroupStart, ncclSend/ncclRecv, ncclGroupEnd), as Megatron's p2p
  // communication batches its operations.
  void Send(const Group& g, const DevBuf& buf, int peer) const;
  void Recv(const Group& g, DevBuf& buf, int peer) const;
  // A send to `to` and a receive from `from` in one NCCL group, neither waiting for the other (Megatron's
  // send_forward_recv_backward and send_backward_recv_forward under 1F1B, where both stages send at once).
  void SendRecv(const Group& g, const DevBuf& out, int to, DevBuf& in, int from) const;
  // FP32 host vector through an all-reduce (for the cross-entropy statistics and the gradient buffers).
  void AllReduceHost(const Group& g, std::vector<float>& v, ncclRedOp_t op) const;
  // The same, issued on a one-rank group too, as torch.distributed.all_reduce is (Megatron reduces its gradient
  // statistics with it, unlike its tensor-parallel mappings, which skip a group of one).
  void AllReduceStat(const Group& g, std::vector<float>& v, ncclRedOp_t op) const;

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  bool bf16_ = false;
};

// The world communicator, met through a file in `rdzv` written by rank 0, and the groups split from it: ranks with
// equal color[i] form group i (tp, dp, pp, mp), ordered by key[i].
struct Comms {
  Group world, tp, dp, pp;
  Group mp;  // the model-parallel group (TP x PP: the ranks of one DP replica), where the gradient norm is reduced
  // The groups the all-gathers run on: tp and dp themselves, or with `rotated_gathers` their members split again
  // with keys rotated by one, so that comm rank i is the group's rank i + 1 and chunk i of a gather comes from it.
  Group tp_gather, dp_gather;
};
Comms OpenComms(const std::string& rdzv, int rank, int world, const int color[4], const int key[4],
                bool rotated_gathers);
void CloseComms(Comms& c);

}  // namespace ttrace::workloads::gpt

#endif  // TTRACE_TOOLS_WORKLOADS_GPT_DEVICE_H_
