// SafetensorsFile: a memory-mapped .safetensors file whose header has been fully validated.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the data section; offsets are relative to the data section. Open() checks every tensor
// (known dtype, shape without overflow, begin <= end <= data size, end - begin == numel x dtype
// size, no two tensors overlapping) before anything is read, so no later access can leave the
// mapping. Errors are kCorrupt / kIoError Statuses that name the file and the problem.
//
// Thread safety: immutable after Open(); any thread may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checkpoint/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orchid {

enum class DType : uint8_t {
  kBool,
  kU8,
  kI8,
  kF8E4M3,
  kF8E5M2,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kI64,
  kU64,
  kF64,
};

// "F32" etc. as safetensors spells them; nullptr-free (unknown values give "?").
const char* DTypeName(DType t);
size_t DTypeSize(DType t);

// Converts n values of `dtype` at `src` (unaligned, little-endian) to fp32 at `dst`: F32, F16,
// BF16 and F64; false (nothing written) for other dtypes.
bool ConvertToF32(DType dtype, const std::byte* src, size_t n, float* dst);

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets in the data section
  uint64_t end = 0;
  uint64_t numel = 1;
};

// A file's tensor `t` (nullptr: absent, kNotFound naming `name`) whose bytes are at `bytes`, as
// fp32 (ConvertToF32; kCorrupt for other dtypes). `error_prefix` names the file in errors.
Result<Tensor> ReadTensorF32(const TensorInfo* t, const std::byte* bytes, std::string_view name,
                             const std::string& error_prefix);

class SafetensorsFile {
 public:
  // Largest header accepted (the reference implementation's limit).
  static constexpr uint64_t kMaxHeaderBytes = 100u << 20;

  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorInfo* Find(std::string_view name) const;
  // The tensor's raw bytes (end - begin of them), inside the mapping.
  const std::byte* Bytes(const TensorInfo& t) const { return data_ + t.begin; }

  // The tensor converted to fp32 (from F32, F16, BF16 or F64). kNotFound if absent,
  // kCorrupt for other dtypes.
  Result<Tensor> ReadF32(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  Status Parse(std::string_view header, uint64_t data_size);

  std::string path_;
  MappedFile file_;
  const std::byte* data_ = nullptr;  // the data section, inside file_
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace orchid
