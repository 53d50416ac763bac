// Arbitrary bytes as a .safetensors file. SafetensorsFile::Open() takes a path, so the bytes go
// into a memfd opened through /proc/self/fd. Open() must return an error or a file whose every
// tensor lies inside the mapping: reading all of them (raw and as fp32) is checked by ASan.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "checkpoint/safetensors.h"

namespace {

int g_fd = -1;
std::string g_path;

bool WriteAll(int fd, const uint8_t* data, size_t size) {
  if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return false;
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_fd = memfd_create("safetensors_fuzz", 0);
  if (g_fd < 0) std::abort();
  g_path = "/proc/self/fd/" + std::to_string(g_fd);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!WriteAll(g_fd, data, size)) std::abort();
  auto file = orchid::SafetensorsFile::Open(g_path);
  if (!file.ok()) return 0;
  const orchid::SafetensorsFile& f = **file;
  volatile uint8_t sink = 0;
  for (const orchid::TensorInfo& t : f.tensors()) {
    if (t.begin > t.end || f.Find(t.name) != &t) std::abort();
    const std::byte* bytes = f.Bytes(t);
    for (uint64_t i = 0; i < t.end - t.begin; ++i) sink = sink ^ static_cast<uint8_t>(bytes[i]);
    auto tensor = f.ReadF32(t.name);
    (void)tensor.ok();
  }
  return 0;
}
