#include "runtime/int8_cache.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "backends/cpu/int8_linear.h"
#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/cpu_features.h"

namespace orchid {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxFiles = 10000;  // model directories are small; a key stays bounded

// "<size> <mtime ns>" of a file, or an error.
Result<std::string> Stamp(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return Status::NotFound("int8 cache key: " + p.string() + ": " + ec.message());
  const auto mtime = fs::last_write_time(p, ec);
  if (ec) return Status::NotFound("int8 cache key: " + p.string() + ": " + ec.message());
  const long long ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  return std::to_string(size) + " " + std::to_string(ns);
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "(unset)" : v;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

std::string DefaultInt8CacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return (fs::path(x) / "orchid").string();
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return (fs::path(h) / ".cache" / "orchid").string();
  }
  return "";
}

Result<std::string> Int8CacheKey(const std::string& model_dir, int max_length) {
  std::ostringstream key;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::NotFound("int8 cache key: /proc/self/exe: " + ec.message());
  ORCHID_ASSIGN_OR_RETURN(std::string exe_stamp, Stamp(exe));
  key << "binary " << exe.string() << " " << exe_stamp << "\n";
  const fs::path dir = fs::weakly_canonical(fs::path(model_dir), ec);
  if (ec) return Status::NotFound("int8 cache key: " + model_dir + ": " + ec.message());
  key << "model " << dir.string() << "\n";
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(
           dir, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 3) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    if (int(files.size()) >= kMaxFiles) {
      return Status::ResourceExhausted("int8 cache key: more than " + std::to_string(kMaxFiles) +
                                       " files under " + dir.string());
    }
    ORCHID_ASSIGN_OR_RETURN(std::string stamp, Stamp(it->path()));
    files.push_back(fs::relative(it->path(), dir).string() + " " + stamp);
  }
  if (ec) return Status::NotFound("int8 cache key: " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) key << "file " << f << "\n";
  key << "cpu onednn " << OneDnnIsa() << ", activation levels " << Int8ActivationLevels()
      << ", " << DescribeCpu() << ", vdpbf16ps " << Bf16DotInUse() << "\n";
  key << "env ONEDNN_MAX_CPU_ISA=" << Env("ONEDNN_MAX_CPU_ISA")
      << " ORCHID_MAX_CPU_ISA=" << Env("ORCHID_MAX_CPU_ISA")
      << " ORCHID_BF16_GEMM=" << Env("ORCHID_BF16_GEMM") << "\n";
  key << "max_length " << max_length << "\n";
  return key.str();
}

std::string Int8CachePath(const std::string& dir, const std::string& key) {
  char name[64];
  std::snprintf(name, sizeof(name), "int8-check-%016llx.bin",
                static_cast<unsigned long long>(Fnv1a(key)));
  return (fs::path(dir) / name).string();
}

std::optional<Int8CheckRecord> LoadInt8Check(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseInt8Check(data, key);
}

Status StoreInt8Check(const std::string& path, const std::string& key, const Int8CheckRecord& r) {
  const std::string data = SerializeInt8Check(key, r);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    return Status::IoError("cannot create " + fs::path(path).parent_path().string() + ": " +
                           ec.message());
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), std::streamsize(data.size()));
    if (!out.flush()) {
      std::remove(tmp.c_str());
      return Status::IoError("cannot write " + tmp);
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return Status::IoError("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace orchid
