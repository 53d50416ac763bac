#include "checkpoint/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace orchid {

Result<MappedFile> MappedFile::Open(const std::string& path, const std::string& error_prefix) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg = error_prefix + "cannot open: " + std::strerror(err);
    return err == ENOENT ? Status::NotFound(msg) : Status::IoError(msg);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IoError(error_prefix + "cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IoError(error_prefix + "not a regular file");
  }
  MappedFile f;
  if (st.st_size > 0) {
    void* map = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_err = errno;
    ::close(fd);
    if (map == MAP_FAILED) {
      return Status::IoError(error_prefix + "mmap failed: " + std::strerror(map_err));
    }
    f.map_ = map;
    f.size_ = size_t(st.st_size);
  } else {
    ::close(fd);
  }
  return f;
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) munmap(map_, size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) munmap(map_, size_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace orchid
