// TorchCheckpointFile: a PyTorch state dict saved by torch.save (BGE-M3's colbert_linear.pt and
// sparse_linear.pt, a pytorch_model.bin), read without running any pickle code.
//
// torch.save (since PyTorch 1.6) writes a zip archive whose entries are stored uncompressed:
// PREFIX/data.pkl, a pickle of the object in which each tensor's storage is a persistent id
// ('storage', torch.FloatStorage, key, location, numel), and PREFIX/data/KEY, the storage's raw
// little-endian bytes. Open() maps the file (mapped_file.h), reads the zip's central directory
// (stored_zip.h: every entry must be stored, not compressed, and lie inside the file), then
// interprets data.pkl with a small pickle machine that knows only the opcodes torch.save emits
// and only these globals:
//
//   collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter,
//   torch.{Float,Half,BFloat16,Double,Long,Int,Short,Char,Byte,Bool}Storage
//
// Any other global is refused, naming it: nothing from the file is ever called or imported. The
// pickle must give a dict of name -> tensor (a state dict); each tensor must be contiguous and
// lie inside its storage entry. The legacy (pre-1.6, non-zip) format is refused with the
// conversion to safetensors that docs/models.md documents. Errors are kCorrupt / kIoError /
// kNotFound Statuses that name the file.
//
// Thread safety: immutable after Open(); any thread may read it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checkpoint/mapped_file.h"
#include "checkpoint/safetensors.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orchid {

class TorchCheckpointFile {
 public:
  // Bounds on what a file may ask for (far above a real state dict's).
  static constexpr size_t kMaxPickleBytes = 64u << 20;
  static constexpr size_t kMaxEntries = 1u << 20;

  static Result<std::unique_ptr<TorchCheckpointFile>> Open(const std::string& path);
  TorchCheckpointFile(const TorchCheckpointFile&) = delete;
  TorchCheckpointFile& operator=(const TorchCheckpointFile&) = delete;

  const std::string& path() const { return path_; }
  // In the state dict's order. begin / end are byte offsets from the start of the file.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorInfo* Find(std::string_view name) const;
  const std::byte* Bytes(const TensorInfo& t) const { return base_ + t.begin; }
  // The tensor converted to fp32 (from F32, F16, BF16 or F64). kNotFound if absent, kCorrupt for
  // other dtypes.
  Result<Tensor> ReadF32(std::string_view name) const;

 private:
  TorchCheckpointFile() = default;

  std::string path_;
  MappedFile file_;
  const std::byte* base_ = nullptr;  // file_.data()
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

// Parses `size` bytes of a torch.save zip archive (no file involved; Open() maps the file and
// calls this). `path` names it in errors. Tensor offsets are from `data`.
Status ParseTorchCheckpoint(const std::byte* data, size_t size, const std::string& path,
                            std::vector<TensorInfo>* tensors);

}  // namespace orchid
