// The ttrace trace format: one stream per rank, written by the shim (or the collector) and read by the analyzer.
// Hermetic: depends on nothing but <cstdint>. docs/format.md is the written spec, field by field; this header
// and that document change together.
//
// A stream is a FileHeader followed by frames. A frame is a FrameHeader followed by `compressed_size` bytes: a
// zstd frame whose content is `uncompressed_size` bytes of records. Each record is a RecordHeader followed by a
// body. All integers are little-endian, all structs are packed by construction (natural alignment, no padding:
// every size is static_asserted) and copied with memcpy, never cast in place.
//
// Evolution without a version break:
// - New record types get new ids; readers skip record types they do not know (RecordHeader.size says how far).
// - A record body may grow by appending fields; readers copy min(body size, sizeof(struct)) bytes and zero-fill
//   the rest, so an old reader reads a new stream and a new reader reads an old one.
// - TensorRecord.payload_kind tells how its payload is encoded (full tensor today; summaries, tiles later).
// kFormatVersion changes only for an incompatible change of FileHeader, FrameHeader or RecordHeader.
// - The index (IndexHeader, IndexEntry) and the manifest (ManifestEntry) beside the streams grow the same way: new
//   fields go after the last one and before the trailing CRC, which stays the last 4 bytes; header_size /
//   entry_size say how long each is as written, and readers read the fields they know. kIndexVersion and
//   kManifestVersion change only for an incompatible change.
#ifndef TTRACE_INCLUDE_TTRACE_FORMAT_H_
#define TTRACE_INCLUDE_TTRACE_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace ttrace::format {

inline constexpr char kFileMagic[8] = {'T', 'T', 'R', 'A', 'C', 'E', '\r', '\n'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kFrameMagic = 0x52465454;  // "TTFR"
// Bounds a reader enforces before allocating (input is untrusted).
inline constexpr uint32_t kMaxFrameBytes = 256u << 20;

// ---- API ids and kinds (the list is apis.inc) ----------------------------------------------------------------
enum class Library : uint8_t { kCublas = 1, kCublasLt = 2, kCudnn = 3, kNccl = 4 };
enum class ApiKind : uint8_t { kOp = 1, kSetup = 2 };
enum class ApiId : uint16_t {
  kUnknown = 0,
#define TTRACE_API(name, id, symbol, library, kind) name = id,
#include "ttrace/apis.inc"
#undef TTRACE_API
};
struct ApiInfo {
  ApiId id;
  const char* symbol;
  Library library;
  ApiKind kind;
};
inline constexpr ApiInfo kApis[] = {
#define TTRACE_API(name, id, symbol, library, kind) {ApiId::name, symbol, Library::library, ApiKind::kind},
#include "ttrace/apis.inc"
#undef TTRACE_API
};
// Symbol of an api id, or "unknown".
inline const char* ApiName(uint16_t id) {
  for (const ApiInfo& a : kApis)
    if (static_cast<uint16_t>(a.id) == id) return a.symbol;
  return "unknown";
}

// ---- element types of captured tensors (the list is dtypes.inc) ---------------------------------------------
// Our own numbering (records keep the vendor's enum values in their own fields; tensors use this one).
enum class DType : uint8_t {
  kInvalid = 0,
#define TTRACE_DTYPE(name, id, bytes, text, cuda_enum, cuda, nccl_enum, nccl, cudnn_enum, cudnn) name = id,
#include "ttrace/dtypes.inc"
#undef TTRACE_DTYPE
};
struct DTypeInfo {
  DType dtype;
  uint32_t bytes;
  const char* name;        // "bf16"
  int32_t cuda;            // cudaDataType_t, -1: none
  const char* cuda_name;   // "CUDA_R_16BF"
  int32_t nccl;            // ncclDataType_t, -1: none
  const char* nccl_name;   // "ncclBfloat16"
  int32_t cudnn;           // cudnnDataType_t, -1: none
  const char* cudnn_name;  // "CUDNN_DATA_BFLOAT16"
};
inline constexpr DTypeInfo kDTypes[] = {
#define TTRACE_DTYPE(name, id, bytes, text, cuda_enum, cuda, nccl_enum, nccl, cudnn_enum, cudnn) \
  {DType::name, bytes, text, cuda, #cuda_enum, nccl, #nccl_enum, cudnn, #cudnn_enum},
#include "ttrace/dtypes.inc"
#undef TTRACE_DTYPE
};
// The table's row of a DType value, or null for an unknown one.
inline const DTypeInfo* FindDType(uint8_t dtype) {
  for (const DTypeInfo& t : kDTypes)
    if (static_cast<uint8_t>(t.dtype) == dtype) return &t;
  return nullptr;
}
// Bytes per element; 0 for an unknown value.
inline uint32_t DTypeSize(uint8_t dtype) {
  const DTypeInfo* t = FindDType(dtype);
  return t == nullptr ? 0 : t->bytes;
}
// The DType of a vendor's enum value; kInvalid for a type ttrace has none for (complex, sub-byte, unknown).
inline DType DTypeFromCuda(int32_t cuda_type) {
  for (const DTypeInfo& t : kDTypes)
    if (t.cuda >= 0 && t.cuda == cuda_type) return t.dtype;
  return DType::kInvalid;
}
inline DType DTypeFromNccl(int32_t nccl_type) {
  for (const DTypeInfo& t : kDTypes)
    if (t.nccl >= 0 && t.nccl == nccl_type) return t.dtype;
  return DType::kInvalid;
}
inline DType DTypeFromCudnn(int32_t cudnn_type) {
  for (const DTypeInfo& t : kDTypes)
    if (t.cudnn >= 0 && t.cudnn == cudnn_type) return t.dtype;
  return DType::kInvalid;
}

// ---- stream framing ------------------------------------------------------------------------------------------
struct FileHeader {
  char magic[8];              // kFileMagic
  uint32_t version;           // kFormatVersion
  uint32_t header_size;       // sizeof(FileHeader) of the writer; a reader skips to this offset
  int32_t rank;               // process rank (RANK), -1 if unknown
  int32_t world_size;         // WORLD_SIZE, -1 if unknown
  int32_t local_rank;         // LOCAL_RANK, -1 if unknown
  uint32_t pid;               // writer's process id
  uint64_t start_unix_ns;     // wall clock when the stream was opened
  char job[48];               // job id (TTRACE_JOB, else TORCHELASTIC_RUN_ID, else "default"), NUL-padded
  char host[32];              // host name, NUL-padded, truncated
  uint32_t flags;             // FileFlags
  uint32_t header_crc;        // CRC-32C of the preceding bytes of this header
};
static_assert(sizeof(FileHeader) == 128, "FileHeader layout is part of the format");
enum FileFlags : uint32_t {
  // The shim streamed to a collector until it went away and wrote the rest here: this stream's first records
  // are in the collector's store (its frames are numbered from 0 again; its EndRecord counts the whole stream).
  kFileFailover = 1u << 0,
};

struct FrameHeader {
  uint32_t magic;             // kFrameMagic
  uint32_t frame_index;       // 0, 1, 2, ... within the stream
  uint32_t compressed_size;   // bytes following this header (a zstd frame), <= kMaxFrameBytes
  uint32_t uncompressed_size; // bytes of records after decompression, <= kMaxFrameBytes
  uint32_t record_count;      // records in this frame
  uint32_t payload_crc;       // CRC-32C of the compressed bytes
  uint32_t reserved;          // 0
  uint32_t header_crc;        // CRC-32C of the preceding 28 bytes of this header
};
static_assert(sizeof(FrameHeader) == 32, "FrameHeader layout is part of the format");

// ---- the store around the streams (docs/format.md "Index" and "Manifest") ----------------------------------------
// Beside each stream `<name>.ttr` lies its index `<name>.ttr.idx`: an IndexHeader, then one IndexEntry per frame
// in frame order, appended after the frame itself is written, so an index is never ahead of its stream (after a
// kill it may lag behind; the reader scans past its end). The index is a hint: a reader verifies every frame it
// reaches through it, and a missing, stale or inconsistent index means "scan".
inline constexpr char kIndexMagic[8] = {'T', 'T', 'I', 'N', 'D', 'E', 'X', '\n'};
inline constexpr uint32_t kIndexVersion = 1;
inline constexpr uint64_t kNoSeq = ~0ull;  // "no seq" in NoticeRecord.seq and IndexEntry.min_seq
struct IndexHeader {
  char magic[8];              // kIndexMagic
  uint32_t version;           // kIndexVersion
  uint32_t header_size;       // sizeof(IndexHeader) of the writer: entries start at this offset
  uint32_t entry_size;        // sizeof(IndexEntry) of the writer: entries are this far apart
  uint32_t stream_header_crc; // FileHeader.header_crc of the stream indexed: binds the index to one stream
  uint64_t stream_start_unix_ns;  // FileHeader.start_unix_ns of that stream
  uint32_t stream_pid;        // FileHeader.pid of that stream
  uint32_t flags;             // 0
  uint8_t reserved[20];       // 0
  uint32_t header_crc;        // CRC-32C of the preceding 60 bytes
};
static_assert(sizeof(IndexHeader) == 64, "IndexHeader layout is part of the format");

struct IndexEntry {
  uint64_t offset;            // stream file offset of the frame's FrameHeader
  uint32_t frame_index;       // FrameHeader.frame_index: entry i describes frame i
  uint32_t record_count;      // FrameHeader.record_count
  uint64_t min_seq;           // smallest seq of a record in the frame that has one (RecordSeq), kNoSeq if none
  uint64_t max_seq;           // largest such seq, 0 if none
  uint32_t compressed_size;   // FrameHeader.compressed_size: the frame ends at offset + 32 + compressed_size
  uint32_t frame_header_crc;  // FrameHeader.header_crc: ties the entry to that very frame
  uint32_t seq_records;       // records of the frame that have a seq
  uint32_t entry_crc;         // CRC-32C of the preceding 44 bytes
};
static_assert(sizeof(IndexEntry) == 48, "IndexEntry layout is part of the format");

// One per job directory, `manifest.ttm`: a log of ManifestEntry, appended (O_APPEND, one write each) by every
// writer of a stream in that directory: one when the stream opens (state kOpen), one when it closes (kClosed or
// kCut, final counts). The last intact entry of a stream name is its state; entries with a bad checksum or
// magic (a torn append) are skipped. Many processes append to one manifest without locks.
inline constexpr char kManifestMagic[8] = {'T', 'T', 'M', 'A', 'N', 'I', 'F', '\n'};
inline constexpr uint32_t kManifestVersion = 1;
enum class ManifestState : uint32_t {
  kOpen = 1,                  // the stream is being written (or its writer died: no later entry)
  kClosed = 2,                // the writer closed it after its EndRecord: the counts are final
  kCut = 3,                   // the writer closed it without an EndRecord (a collector whose client went away)
};
enum class ManifestWriter : uint32_t { kShim = 1, kCollector = 2 };
// Why a writer of the store lost data (ManifestEntry.lost_reason): the first reason, with frames_lost and
// bytes_lost counting every loss.
#define TTRACE_LOSS_REASONS(X)                                                     \
  X(kNone, 0, "none")                                                              \
  X(kConnectionLost, 1, "connection lost (the stream ends where the client went)") \
  X(kWriteFailed, 2, "write failed (disk full or I/O error)")                      \
  X(kOverLimit, 3, "over a per-connection limit")                                  \
  X(kMalformed, 4, "malformed stream")
enum class LossReason : uint32_t {
#define TTRACE_LOSS_ENUM(name, id, text) name = id,
  TTRACE_LOSS_REASONS(TTRACE_LOSS_ENUM)
#undef TTRACE_LOSS_ENUM
};
inline const char* LossReasonName(uint32_t reason) {
  switch (reason) {
#define TTRACE_LOSS_NAME(name, id, text) \
  case id:                               \
    return text;
    TTRACE_LOSS_REASONS(TTRACE_LOSS_NAME)
#undef TTRACE_LOSS_NAME
  }
  return "unknown";
}
enum ManifestFlags : uint32_t {
  kManifestFailover = 1u << 0,  // the shim lost its collector and wrote the rest of the stream to a local file
  kManifestHasEnd = 1u << 1,    // the counts from ops on are the stream's EndRecord's
};
struct ManifestEntry {
  char magic[8];              // kManifestMagic
  uint32_t version;           // kManifestVersion
  uint32_t entry_size;        // sizeof(ManifestEntry) of the writer: the next entry starts this far on
  uint32_t state;             // ManifestState
  uint32_t writer;            // ManifestWriter
  int32_t rank;               // the stream's FileHeader identity
  int32_t world_size;
  int32_t local_rank;
  uint32_t pid;
  uint64_t start_unix_ns;     // FileHeader.start_unix_ns
  uint64_t end_unix_ns;       // wall clock at the close, 0 while open
  uint64_t written_unix_ns;   // wall clock when this entry was written
  char job[48];               // NUL-padded
  char host[64];              // NUL-padded, truncated
  char stream[64];            // the stream's file name in the job directory, NUL-padded
  char tool[32];              // "ttrace <version>" of the writer
  char libraries[160];        // vendor libraries loaded, as their files are named, space-separated, truncated
  uint32_t end_reason;        // EndRecord.reason, 0 without an EndRecord
  int32_t end_signal;         // EndRecord.signal
  uint64_t frames;            // frames in the stream file
  uint64_t records;           // records in those frames
  uint64_t bytes;             // bytes of the stream file
  uint64_t ops;               // EndRecord.ops (kManifestHasEnd), else 0
  uint64_t tensors;           // EndRecord.tensors
  uint64_t tensor_bytes;      // EndRecord.tensor_bytes
  uint64_t records_dropped;   // EndRecord.records_dropped
  uint64_t payloads_dropped;  // EndRecord.payloads_dropped
  uint64_t dropped[8];        // EndRecord.dropped by DropReason (room for one more reason)
  uint64_t frames_lost;       // frames the store writer lost (LossReason), whole or in part
  uint64_t bytes_lost;        // their bytes, as far as known
  uint32_t lost_reason;       // LossReason of the first loss
  uint32_t flags;             // ManifestFlags
  uint8_t reserved[44];       // 0
  uint32_t entry_crc;         // CRC-32C of the preceding 636 bytes
};
static_assert(sizeof(ManifestEntry) == 640, "ManifestEntry layout is part of the format");

// ---- records -------------------------------------------------------------------------------------------------
// X(Enum, id, Body): the one list of record types.
#define TTRACE_RECORD_TYPES(X)         \
  X(kCommInit, 1, CommInitRecord)       \
  X(kCommDestroy, 2, CommDestroyRecord) \
  X(kGemm, 3, GemmRecord)               \
  X(kCollective, 4, CollectiveRecord)   \
  X(kTensor, 5, TensorRecord)           \
  X(kNotice, 6, NoticeRecord)           \
  X(kGroup, 7, GroupRecord)             \
  X(kEnd, 8, EndRecord)                 \
  X(kLtMatmul, 9, LtMatmulRecord)        \
  X(kConv, 10, ConvRecord)               \
  X(kBackendGraph, 11, BackendGraphRecord) \
  X(kName, 12, NameRecord)               \
  X(kContext, 13, ContextRecord)
enum class RecordType : uint16_t {
#define TTRACE_RECORD_ENUM(name, id, body) name = id,
  TTRACE_RECORD_TYPES(TTRACE_RECORD_ENUM)
#undef TTRACE_RECORD_ENUM
};

struct RecordHeader {
  uint16_t type;              // RecordType
  uint16_t body_offset;       // bytes from the start of this header to the body: sizeof(RecordHeader) today
  uint32_t size;              // total bytes of this record: header + body (+ payload for TensorRecord)
};
static_assert(sizeof(RecordHeader) == 8, "RecordHeader layout is part of the format");

// Host-side identity every record carries: the api, what the vendor call returned, and when it was made.
// A communicator is identified by a 64-bit hash (FNV-1a) of its ncclUniqueId, the same on every rank.

// ncclCommInitRank / ncclCommInitAll (one record per communicator created).
struct CommInitRecord {
  uint16_t api;               // ApiId
  uint16_t reserved0;
  int32_t status;             // vendor return value (ncclResult_t)
  uint64_t comm_hash;         // communicator identity
  uint64_t comm_handle;       // the ncclComm_t value in this process (to join later records)
  int32_t comm_rank;          // this rank in the communicator
  int32_t comm_size;          // ranks in the communicator
  int32_t cuda_device;        // device the communicator was created on, -1 unknown
  uint32_t reserved1;
  uint64_t t_ns;              // CLOCK_MONOTONIC at the call
};
static_assert(sizeof(CommInitRecord) == 48);

struct CommDestroyRecord {
  uint16_t api;
  uint16_t reserved0;
  int32_t status;
  uint64_t comm_hash;
  uint64_t comm_handle;
  uint64_t t_ns;
};
static_assert(sizeof(CommDestroyRecord) == 32);

// ncclGroupStart / ncclGroupEnd.
struct GroupRecord {
  uint16_t api;
  uint16_t reserved0;
  int32_t status;
  int32_t depth;              // nesting depth after the call
  uint32_t reserved1;
  uint64_t t_ns;
};
static_assert(sizeof(GroupRecord) == 24);

// A cuBLAS GEMM: C = alpha * op(A) * op(B) + beta * C, column-major, per batch.
struct GemmRecord {
  uint64_t seq;               // op number on this rank (DESIGN.md §4)
  uint16_t api;               // ApiId
  uint8_t transa;             // cublasOperation_t: 0 N, 1 T, 2 C
  uint8_t transb;
  int32_t status;             // cublasStatus_t returned to the application
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
  int64_t batch_count;        // 1 unless batched
  int64_t stride_a, stride_b, stride_c;  // elements between batches (0 unless strided batched)
  int32_t a_type, b_type, c_type;        // cudaDataType_t
  int32_t compute_type;       // as passed: cublasComputeType_t, or the legacy cudaDataType_t value
  int32_t math_mode;          // cublasMath_t of the handle at the call, -1 unknown
  uint32_t flags;             // GemmFlags
  double alpha, beta;         // real parts, valid when !(flags & kScalarsUnknown)
  uint64_t handle, stream;    // cublasHandle_t, cudaStream_t values
  uint64_t a_ptr, b_ptr, c_ptr;  // device addresses (kPointerArrays: of the arrays of per-batch addresses)
  uint64_t t_ns;
};
enum GemmFlags : uint32_t {
  kScalarsUnknown = 1u << 0,  // device pointer mode: alpha/beta not read on host
  kPointerArrays = 1u << 1,   // cublas?gemmBatched / cublasGemmBatchedEx: batch b's operands start at a_ptr[b],
                              // b_ptr[b], c_ptr[b] (arrays in memory the device reads); strides are 0
};
static_assert(sizeof(GemmRecord) == 184);

// One matrix layout of a cublasLtMatmul call (cublasLtMatrixLayout_t, read with its getter at the call).
struct LtLayout {
  int32_t type;               // cudaDataType_t (CUBLASLT_MATRIX_LAYOUT_TYPE)
  int32_t order;              // cublasLtOrder_t: 0 COL, 1 ROW, others tiled
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch_count;
  int32_t reserved;           // 0
  int64_t batch_stride;       // STRIDED_BATCH_OFFSET, elements
};
static_assert(sizeof(LtLayout) == 48);

// A cublasLtMatmul: D = epilogue(alpha * op(A) * op(B) + beta * C) per batch, with FP8 scales
// (D = scale_d * epilogue(alpha * scale_a * scale_b * op(A) op(B) + beta * scale_c * C)). Descriptor values as the
// getters answered at the call; docs/format.md gives every field.
struct LtMatmulRecord {
  uint64_t seq;
  uint16_t api;               // ApiId
  uint8_t transa, transb;     // cublasOperation_t (TRANSA, TRANSB)
  int32_t status;             // cublasStatus_t returned to the application
  int64_t m, n, k;            // m = rows(D), n = cols(D), k = cols(op(A)); derived from the layouts
  int32_t compute_type;       // cublasComputeType_t (COMPUTE_TYPE)
  int32_t scale_type;         // cudaDataType_t (SCALE_TYPE): the type of alpha and beta
  int32_t pointer_mode;       // cublasLtPointerMode_t
  uint32_t epilogue;          // cublasLtEpilogue_t
  uint32_t flags;             // LtFlags
  int32_t bias_type;          // BIAS_DATA_TYPE as read: -1 = cuBLASLt's default
  int32_t aux_type;           // EPILOGUE_AUX_DATA_TYPE as read: -1 = D's type
  int32_t a_scale_mode, b_scale_mode;  // cublasLtMatmulMatrixScale_t (A_SCALE_MODE, B_SCALE_MODE)
  int32_t reserved0;          // 0
  LtLayout a, b, c, d;
  double alpha, beta;         // real parts, valid when !(flags & kLtScalarsUnknown)
  uint64_t bias_ptr;          // BIAS_POINTER
  int64_t bias_batch_stride;  // elements
  uint64_t aux_ptr;           // EPILOGUE_AUX_POINTER
  int64_t aux_ld, aux_batch_stride;  // elements
  uint64_t a_scale_ptr, b_scale_ptr, c_scale_ptr, d_scale_ptr;  // device pointers, 0 = none (scale 1)
  uint64_t amax_d_ptr, aux_scale_ptr, aux_amax_ptr;
  uint64_t handle, stream;    // cublasLtHandle_t, cudaStream_t values
  uint64_t a_ptr, b_ptr, c_ptr, d_ptr;  // device addresses
  uint64_t t_ns;
};
enum LtFlags : uint32_t {
  kLtScalarsUnknown = 1u << 0,   // alpha/beta not read on the host (device pointer mode, or not readable)
  kLtFastAccum = 1u << 1,        // FAST_ACCUM was set
  kLtDescUnreadable = 1u << 2,   // a getter failed: fields it answers are zero/default, operands not captured
};
static_assert(sizeof(LtMatmulRecord) == 440);

// A cuDNN legacy convolution (cudnnConvolutionForward, BackwardData, BackwardFilter), described in forward terms
// whatever the direction: x [N, C, spatial...], w [K, C/groups, filter...], y [N, K, out...]; backward data reads
// y (dy) and w and writes x (dx), backward filter reads x and y (dy) and writes w (dw). Descriptor values as
// cuDNN's getters answered at the call; docs/format.md gives every field.
inline constexpr int kConvMaxDims = 8;     // CUDNN_DIM_MAX
inline constexpr int kConvMaxSpatial = 6;  // kConvMaxDims - 2
struct ConvRecord {
  uint64_t seq;
  uint16_t api;               // ApiId
  uint8_t mode;               // cudnnConvolutionMode_t: 0 CONVOLUTION (filter flipped), 1 CROSS_CORRELATION
  uint8_t nb_dims;            // rank of x, w and y (spatial dimensions: nb_dims - 2)
  int32_t status;             // cudnnStatus_t returned to the application
  int32_t algo;               // the algorithm argument (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t)
  int32_t x_type, w_type, y_type;  // cudnnDataType_t of the three descriptors
  int32_t compute_type;       // cudnnDataType_t of the convolution descriptor
  int32_t math_type;          // cudnnMathType_t of the convolution descriptor, -1 unknown
  int32_t groups;             // group count
  int32_t w_format;           // cudnnTensorFormat_t of the filter (0 NCHW, 1 NHWC); w_strides follow from it
  uint32_t flags;             // ConvFlags
  int32_t reserved0;          // 0
  int64_t x_dims[kConvMaxDims], x_strides[kConvMaxDims];  // elements; entries past nb_dims are 0
  int64_t w_dims[kConvMaxDims], w_strides[kConvMaxDims];
  int64_t y_dims[kConvMaxDims], y_strides[kConvMaxDims];
  int32_t pad[kConvMaxSpatial], stride[kConvMaxSpatial], dilation[kConvMaxSpatial];
  double alpha, beta;         // host scaling factors, valid when !(flags & kConvScalarsUnknown)
  uint64_t handle, stream;    // cudnnHandle_t, cudaStream_t values
  uint64_t x_ptr, w_ptr, y_ptr;  // device addresses (dx, dw, dy in the backward forms, as above)
  uint64_t t_ns;
};
enum ConvFlags : uint32_t {
  kConvDescUnreadable = 1u << 0,  // a getter failed or a rank is out of range: fields it answers are zero, nothing
                                  // captured
  kConvScalarsUnknown = 1u << 1,  // alpha/beta not read (null pointers)
};
static_assert(sizeof(ConvRecord) == 576);

// A cudnnBackendExecute: the operation graph of the execution plan, as the shim's shadow of the backend
// descriptors recorded it (DESIGN.md §5: cuDNN's getters do not answer for variant packs), followed by
// `tensor_count` GraphTensor and `op_count` GraphOp entries (payload_bytes in all). docs/format.md gives every
// field and the operand roles of each operation type.
struct BackendGraphRecord {   // followed by payload_bytes of GraphTensor[tensor_count], GraphOp[op_count]
  uint64_t seq;
  uint16_t api;               // ApiId
  uint16_t tensor_entry_bytes;  // bytes of each GraphTensor entry as written; 0: 160 (streams before it was set)
  int32_t status;             // cudnnStatus_t returned to the application
  uint32_t tensor_count, op_count;
  uint32_t flags;             // GraphFlags
  uint32_t op_entry_bytes;    // bytes of each GraphOp entry as written; 0: 272 (streams before it was set)
  uint64_t handle, stream;    // cudnnHandle_t and its cudaStream_t
  uint64_t plan, variant_pack, workspace;  // descriptor handles, workspace pointer
  uint64_t t_ns;
  uint64_t payload_bytes;
};
enum GraphFlags : uint32_t {
  kGraphUnknown = 1u << 0,     // the plan's operation graph was not shadowed (created before capture began, by
                               // deserialization, or over the shadow's bounds): no entries follow
  kGraphPackUnknown = 1u << 1, // the variant pack was not shadowed: tensors have no pointers, nothing captured
};
static_assert(sizeof(BackendGraphRecord) == 88);

inline constexpr int kGraphMaxDims = 8;
// One tensor of the graph (CUDNN_BACKEND_TENSOR_DESCRIPTOR) as the program set it.
struct GraphTensor {
  int64_t uid;                // UNIQUE_ID
  int32_t data_type;          // cudnnDataType_t
  uint8_t nb_dims;
  uint8_t is_virtual, by_value;
  uint8_t flags;              // GraphTensorFlags
  int64_t dims[kGraphMaxDims], strides[kGraphMaxDims];  // elements; entries past nb_dims are 0
  uint64_t ptr;               // the variant pack's pointer for uid at this execution, 0 when none (virtual)
  double value;               // a one-element by-value tensor's value as the program passed it (host memory)
};
enum GraphTensorFlags : uint8_t {
  kGraphTensorRagged = 1u << 0,  // RAGGED_OFFSET_DESC set: batches packed at offsets the record does not hold
};
static_assert(sizeof(GraphTensor) == 160);

// One operation of the graph: its descriptor type, operands by role (indices into the tensors, -1 absent; roles
// per type in docs/format.md), and the attributes the analyzer needs. Entries grow by appending fields, like record
// bodies: BackendGraphRecord.op_entry_bytes says how long each is as written, and a reader zero-fills the fields
// past it (so a field whose zero is not its default says whether it was set, in `params_set`).
struct GraphOp {
  int32_t type;               // cudnnBackendDescriptorType_t of the operation
  int32_t mode;               // pointwise mode, reduction operator, convolution mode; -1 none
  int32_t compute_type;       // convolution / matmul / reduction compute type, pointwise math precision; -1
  int32_t spatial;            // convolution spatial dimensions
  int32_t operands[8];
  int64_t pre_pad[6], post_pad[6], stride[6], dilation[6];  // convolution, per spatial dimension
  double alpha, beta;         // convolution alpha/beta, pointwise alpha1/alpha2
  int64_t axis;               // pointwise GEN_INDEX axis, -1
  uint32_t params_set;        // GraphOpParams: which of the pointwise parameters below the program set
  uint32_t reserved0;         // 0
  // Entries of 320 bytes and more: pointwise parameters (CUDNN_ATTR_POINTWISE_*), each as the program set it;
  // where its bit in params_set is clear, cuDNN's default applies (a plain ReLU: lower clip 0, no upper clip,
  // slope 0; ELU alpha, softplus beta, swish beta 1).
  double relu_lower_clip, relu_upper_clip, relu_lower_clip_slope;
  double elu_alpha, softplus_beta, swish_beta;
  // Entries of 352 bytes and more: operands by role 8..15 (GraphOperand), -1 absent. Entries shorter than 352 have
  // none: a reader sets these to -1 (their zero fill would name tensor 0).
  int32_t more_operands[8];
};
enum GraphOpParams : uint32_t {
  kParamReluLowerClip = 1u << 0,
  kParamReluUpperClip = 1u << 1,
  kParamReluLowerClipSlope = 1u << 2,
  kParamEluAlpha = 1u << 3,
  kParamSoftplusBeta = 1u << 4,
  kParamSwishBeta = 1u << 5,
};
inline constexpr uint32_t kGraphTensorEntryBytesV1 = 160, kGraphOpEntryBytesV1 = 272;  // entries when the sizes were 0
inline constexpr uint32_t kGraphOpEntryBytesMoreOperands = 352;  // the first entry size with more_operands
inline constexpr int kGraphOpMaxOperands = 16;                   // roles 0..7 in operands, 8..15 in more_operands
static_assert(sizeof(GraphOp) == 352);
static_assert(offsetof(GraphOp, more_operands) == 320);
// The operand of `role` (0 <= role < kGraphOpMaxOperands), -1 absent.
inline int32_t GraphOperand(const GraphOp& o, int role) {
  return role < 8 ? o.operands[role] : o.more_operands[role - 8];
}
inline int32_t& GraphOperand(GraphOp& o, int role) {
  return role < 8 ? o.operands[role] : o.more_operands[role - 8];
}

// An NCCL collective or point-to-point call.
struct CollectiveRecord {
  uint64_t seq;
  uint16_t api;
  uint8_t red_op;             // ncclRedOp_t (0 sum, 1 prod, 2 max, 3 min, 4 avg), 0xff when none
  uint8_t in_group;           // 1 when issued between ncclGroupStart and the outermost ncclGroupEnd
  int32_t status;             // ncclResult_t returned to the application
  uint64_t comm_hash;
  uint64_t comm_handle;
  int32_t comm_rank, comm_size;
  int32_t nccl_dtype;         // ncclDataType_t
  int32_t root_or_peer;       // root (broadcast, reduce) or peer (send, recv), -1 when none
  uint64_t count;             // element count as the API defines it
  uint64_t comm_op_index;     // 0-based index of this call among this communicator's calls on this rank:
                              // calls with equal comm_hash and comm_op_index on different ranks belong together
  uint64_t sendbuff, recvbuff, stream;
  uint64_t t_ns;
};
static_assert(sizeof(CollectiveRecord) == 96);

// ---- context between ops (CUPTI callbacks; docs/format.md "Context") ------------------------------------------
// A name the stream interns: a kernel's symbol name (as the driver gave it, mangled) or an NVTX range's message.
// Written once per name, before the first ContextRecord that uses its id on the writing thread; a reader resolves
// ids after reading the whole stream (records of different threads are not ordered by name).
enum class NameKind : uint16_t { kKernel = 1, kNvtxRange = 2 };
struct NameRecord {           // followed by name_bytes of text (no NUL; truncated at kMaxNameBytes)
  uint32_t id;                // >= 1, one name per id within the stream
  uint16_t kind;              // NameKind
  uint16_t reserved0;         // 0
  uint32_t name_bytes;
  uint32_t reserved1;         // 0
};
static_assert(sizeof(NameRecord) == 16);
inline constexpr uint32_t kMaxNameBytes = 512;

// What the op's thread ran since its previous captured op (or since capture began): kernel launches with their
// names, CUDA graph launches, and the NVTX range stack the op was called in. Launches inside an intercepted call
// (the library's own kernels) are not counted. Followed by kernel_entries ContextKernel (in order of
// first launch), then nvtx_entries uint32_t name ids of the range stack, outermost first.
struct ContextRecord {
  uint64_t seq;               // the op this context precedes
  uint64_t kernels;           // kernel launches (cuLaunchKernel and its variants), all of them
  uint64_t unnamed_kernels;   // of those, launches not counted in an entry (more distinct names than entries,
                              // the name table full, or no name given)
  uint64_t graph_launches;    // cuGraphLaunch calls
  uint32_t kernel_entries;    // ContextKernel entries following
  uint32_t nvtx_depth;        // NVTX ranges open on the thread at the op (may exceed nvtx_entries)
  uint32_t nvtx_entries;      // name ids following the kernel entries: the outermost nvtx_entries ranges
  uint32_t flags;             // 0
  uint64_t t_ns;              // CLOCK_MONOTONIC when the record was taken (the op's publication)
};
static_assert(sizeof(ContextRecord) == 56);
struct ContextKernel {
  uint32_t name_id;           // NameRecord id (NameKind::kKernel)
  uint32_t count;             // launches of that kernel
};
static_assert(sizeof(ContextKernel) == 8);

// An operand of op `seq`, captured as the policy said. Followed by `payload_bytes` bytes of payload.
enum class TensorSlot : uint8_t {
  kA = 0, kB = 1,             // GEMM inputs, as stored (before op(): a transposed A is stored k x m)
  kCIn = 2,                   // GEMM C before the call (only when beta != 0)
  kCOut = 3,                  // GEMM result
  kSend = 4, kRecv = 5,       // collective input (before) and output (after)
  kAlpha = 6, kBeta = 7,      // GEMM scalars in device pointer mode: 1x1x1 in the scalar type, as read by the call
  // cuBLASLt (LtMatmulRecord): kA, kB, kCIn as above and kCOut for D; the epilogue's and FP8's operands:
  kBias = 8,                  // bias vector read by the bias epilogues (before)
  kAuxIn = 9,                 // epilogue aux read by DGELU / DRELU (before)
  kAuxOut = 10,               // epilogue aux written by GELU_AUX / RELU_AUX (after)
  kBiasGrad = 11,             // bias gradient written by the BGRAD epilogues (after)
  kScaleA = 12, kScaleB = 13, kScaleC = 14, kScaleD = 15,  // FP8 scales (before): 1x1, or a vector (OUTER_VEC)
  kAmaxD = 16,                // amax of D before scale_D (after), 1x1 FP32
  kAuxScale = 17,             // scale of the aux output (before), 1x1 FP32
  kAuxAmax = 18,              // amax of the aux output before its scale (after), 1x1 FP32
  // cuDNN convolutions (ConvRecord): the inputs by role, the written tensor (y, dx or dw) as kCIn (before, only
  // when beta != 0) and kCOut (after). A strided tensor is stored as the span of memory its elements occupy,
  // span x 1 (span = 1 + sum (dims[i] - 1) * strides[i]); its record's dims and strides index it.
  kConvX = 19,                // x (forward, backward filter)
  kConvW = 20,                // w (forward, backward data)
  kConvY = 21,                // dy (backward data, backward filter)
  // cudnnBackendExecute (BackendGraphRecord): graph tensor number TensorRecord.index (its GraphTensor entry),
  // stored as a span like kConvX.
  kGraphIn = 22,              // before the execution: every tensor an operation reads
  kGraphOut = 23,             // after the execution: every tensor an operation writes
};
inline constexpr uint32_t kTensorSlots = 24;  // slots 0 .. kTensorSlots-1
enum class PayloadKind : uint8_t {
  kFull = 0,                  // every element, dense: rows x cols column-major (ld = rows), batches back to back
  kShuffled = 1,              // the kFull bytes, byte-shuffled by element size (byte_shuffle.h)
  kFloatCoded = 2,            // the kFull bytes, float-coded (store/float_codec.h): sign-rotated byte planes, Huffman
};
struct TensorRecord {
  uint64_t seq;
  uint8_t slot;               // TensorSlot
  uint8_t payload_kind;       // PayloadKind
  uint8_t dtype;              // DType
  uint8_t reserved0;
  uint32_t index;             // kGraphIn / kGraphOut: the graph tensor's number; else 0
  int64_t rows, cols, batch;  // logical shape of what is stored
  uint64_t payload_bytes;     // bytes following this body
};
static_assert(sizeof(TensorRecord) == 48);

// Something a reader must know about the capture itself (dropped payloads, capture disabled, ...).
enum class NoticeCode : uint32_t {
  kPayloadDropped = 1,        // a tensor was not captured (buffer full, too large); count = how many so far
  kCaptureDisabled = 2,       // capture stopped for an API after an internal error
  kRecordDropped = 3,         // a call record was not written: the call had not returned while too many later
                              // records waited behind it (a hung vendor call); count = how many so far
  kGraphCaptured = 4,         // op `seq` was called while its stream captured a CUDA graph: it did not run, its
                              // record is the template of the graph's node; its operands are captured at each
                              // launch, as an op with a new seq (kGraphReplay)
  kGraphReplay = 5,           // op `seq` is one launch of the graph node captured as op `count` (kGraphCaptured);
                              // its seq is taken when the launch runs on the device, not in host call order
};
// Why a tensor payload was dropped (NoticeRecord.reason of a kPayloadDropped notice, EndRecord counts).
#define TTRACE_DROP_REASONS(X)                                                                      \
  X(kOther, 0, "other")                       /* see the notice's message */                        \
  X(kRingFull, 1, "ring full")                /* the ring stayed full for TTRACE_RING_WAIT_MS */    \
  X(kTooLarge, 2, "too large")                /* TTRACE_MAX_TENSOR_MB, the ring or the frame limit */ \
  X(kGraphCapture, 3, "graph capture")        /* a CUDA graph's operand: capture invalidated, no host \
                                                 nodes, or TTRACE_GRAPH_MB exhausted */              \
  X(kCopyFailed, 4, "copy failed")            /* the device-to-host copy or its wait failed */       \
  X(kExitTimeout, 5, "exit timeout")          /* not copied TTRACE_EXIT_WAIT_MS after exit began */  \
  X(kUnsupported, 6, "unsupported type")      /* an operand type with no ttrace dtype */
enum class DropReason : uint32_t {
#define TTRACE_DROP_ENUM(name, id, text) name = id,
  TTRACE_DROP_REASONS(TTRACE_DROP_ENUM)
#undef TTRACE_DROP_ENUM
};
inline constexpr uint32_t kDropReasons = 7;  // ids 0 .. kDropReasons-1
inline const char* DropReasonName(uint32_t reason) {
  switch (reason) {
#define TTRACE_DROP_NAME(name, id, text) \
  case id:                               \
    return text;
    TTRACE_DROP_REASONS(TTRACE_DROP_NAME)
#undef TTRACE_DROP_NAME
  }
  return "other";
}

struct NoticeRecord {         // followed by message_bytes of UTF-8 text (no NUL)
  uint32_t code;              // NoticeCode
  uint32_t message_bytes;
  uint64_t seq;               // op it concerns, UINT64_MAX when none
  uint64_t count;
  uint32_t reason;            // DropReason of a kPayloadDropped notice (appended; 0 in older streams)
  uint32_t reserved;          // 0
};
static_assert(sizeof(NoticeRecord) == 32);

// How a stream ended. Written once, as the last record of a stream the writer closed; a stream whose last
// record is not an EndRecord is incomplete (killed, disk full, ...) whatever frame it stops on. A writer that
// goes on after writing one (a signal whose handler returned) writes another at its close: only the last record
// of a stream counts.
enum class EndReason : uint32_t {
  kExit = 1,                  // the process exited (atexit) or the engine was shut down
  kSignal = 2,                // SIGTERM or SIGINT whose default action ends the process; `signal` says which
};
enum class CaptureModeId : uint32_t { kUnknown = 0, kMeta = 1, kFull = 2 };
enum EndFlags : uint32_t {
  kTensorsOff = 1u << 0,      // the capture was configured without tensors (meta mode, TTRACE_BUFFER_MB=0)
};
struct EndRecord {
  uint32_t reason;            // EndReason
  int32_t signal;             // signal number for kSignal, else 0
  uint32_t mode;              // CaptureModeId the stream was written in
  uint32_t flags;             // EndFlags
  uint64_t ops;               // seq numbers assigned: ops 0 .. ops-1 were called
  uint64_t records;           // records in the stream before this one
  uint64_t tensors;           // tensor records in the stream
  uint64_t tensor_bytes;      // their payload bytes
  uint64_t records_dropped;   // call records given up (NoticeCode::kRecordDropped)
  uint64_t payloads_dropped;  // payloads dropped, all reasons
  uint64_t dropped[kDropReasons];  // payloads dropped, by DropReason
  uint64_t t_ns;              // CLOCK_MONOTONIC at the close
};
static_assert(sizeof(EndRecord) == 128);

}  // namespace ttrace::format

#endif  // TTRACE_INCLUDE_TTRACE_FORMAT_H_
