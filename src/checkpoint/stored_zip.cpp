#include "checkpoint/stored_zip.h"

#include <initializer_list>
#include <limits>

namespace orchid {

Status ReadStoredZip(const std::byte* data, size_t size, const std::string& error_prefix,
                     uint64_t max_entries, std::map<std::string, ZipEntry>* entries) {
  auto corrupt = [&](const std::string& m) { return Status::Corrupt(error_prefix + m); };
  if (size < 22) return corrupt("too short to be a zip archive");
  // The end-of-central-directory record: within the last 64 KiB + 22 bytes.
  size_t eocd = std::numeric_limits<size_t>::max();
  const size_t lowest = size > 65557 ? size - 65557 : 0;
  for (size_t p = size - 22 + 1; p-- > lowest;) {
    if (ReadLe(data + p, 4) == 0x06054b50u) {
      eocd = p;
      break;
    }
  }
  if (eocd == std::numeric_limits<size_t>::max()) {
    return corrupt("no zip end-of-central-directory record");
  }
  uint64_t count = ReadLe(data + eocd + 10, 2);
  uint64_t cd_size = ReadLe(data + eocd + 12, 4);
  uint64_t cd_offset = ReadLe(data + eocd + 16, 4);
  if (count == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu) {
    // Zip64: the locator sits right before the record.
    if (eocd < 20 || ReadLe(data + eocd - 20, 4) != 0x07064b50u) {
      return corrupt("zip64 archive without its end-of-central-directory locator");
    }
    const uint64_t rec = ReadLe(data + eocd - 20 + 8, 8);
    if (rec > size || size - rec < 56 || ReadLe(data + rec, 4) != 0x06064b50u) {
      return corrupt("bad zip64 end-of-central-directory record");
    }
    count = ReadLe(data + rec + 32, 8);
    cd_size = ReadLe(data + rec + 40, 8);
    cd_offset = ReadLe(data + rec + 48, 8);
  }
  if (cd_offset > size || cd_size > size - cd_offset) {
    return corrupt("the zip central directory lies outside the file");
  }
  if (count > max_entries) {
    return corrupt("the zip archive lists " + std::to_string(count) + " entries, over " +
                   std::to_string(max_entries));
  }
  uint64_t p = cd_offset;
  const uint64_t end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (end - p < 46 || ReadLe(data + p, 4) != 0x02014b50u) {
      return corrupt("zip central directory entry " + std::to_string(i) + " is malformed");
    }
    const std::byte* h = data + p;
    const uint64_t flags = ReadLe(h + 8, 2), method = ReadLe(h + 10, 2);
    uint64_t comp = ReadLe(h + 20, 4), uncomp = ReadLe(h + 24, 4), local = ReadLe(h + 42, 4);
    const uint64_t name_len = ReadLe(h + 28, 2), extra_len = ReadLe(h + 30, 2),
                   comment_len = ReadLe(h + 32, 2);
    if (end - p - 46 < name_len + extra_len + comment_len) {
      return corrupt("zip central directory entry " + std::to_string(i) + " is truncated");
    }
    std::string name(reinterpret_cast<const char*>(h + 46), size_t(name_len));
    // Zip64 sizes and offset, in that order, for the fields that say 0xffffffff.
    const std::byte* x = h + 46 + name_len;
    for (uint64_t q = 0; q + 4 <= extra_len;) {
      const uint64_t id = ReadLe(x + q, 2), len = ReadLe(x + q + 2, 2);
      if (q + 4 + len > extra_len) return corrupt("zip entry \"" + name + "\": bad extra field");
      if (id == 1) {
        uint64_t r = q + 4;
        for (uint64_t* field : {&uncomp, &comp, &local}) {
          if (*field != 0xffffffffu) continue;
          if (r + 8 > q + 4 + len) return corrupt("zip entry \"" + name + "\": short zip64 field");
          *field = ReadLe(x + r, 8);
          r += 8;
        }
      }
      q += 4 + len;
    }
    if ((flags & 1) != 0) return corrupt("zip entry \"" + name + "\" is encrypted");
    if (method != 0 || comp != uncomp) {
      return corrupt("zip entry \"" + name + "\" is compressed (method " + std::to_string(method) +
                     "); torch.save stores its entries uncompressed");
    }
    if (local > size || size - local < 30 || ReadLe(data + local, 4) != 0x04034b50u) {
      return corrupt("zip entry \"" + name + "\": its local header is outside the file");
    }
    const uint64_t start = local + 30 + ReadLe(data + local + 26, 2) + ReadLe(data + local + 28, 2);
    if (start > size || uncomp > size - start) {
      return corrupt("zip entry \"" + name + "\" runs past the end of the file (truncated?)");
    }
    if (!entries->emplace(name, ZipEntry{start, uncomp}).second) {
      return corrupt("zip entry \"" + name + "\" appears twice");
    }
    p += 46 + name_len + extra_len + comment_len;
  }
  return Status::Ok();
}

}  // namespace orchid
