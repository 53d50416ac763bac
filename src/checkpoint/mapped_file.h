// MappedFile: a whole file mapped read-only into memory, as every checkpoint reader reads its
// file (safetensors.h, torch_checkpoint.h). The mapping lives as long as the MappedFile; the
// file descriptor is closed once it is mapped. An empty file maps to no bytes (data() null).
//
// Thread safety: immutable after Open(); any thread may read the bytes.
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace orchid {

class MappedFile {
 public:
  // Maps `path`. Errors start with `error_prefix` (the reader's name for the file):
  //   NotFound  no such file
  //   IoError   it cannot be opened, stat'ed or mapped, or it is not a regular file
  static Result<MappedFile> Open(const std::string& path, const std::string& error_prefix);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return static_cast<const std::byte*>(map_); }
  size_t size() const { return size_; }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
};

}  // namespace orchid
