// Zip archives whose entries are stored uncompressed (torch.save's format,
// torch_checkpoint.h): the central directory read, with every entry checked to lie inside the
// archive, so that an entry's bytes can be used in place. Zip64 is understood; compressed or
// encrypted entries are refused.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"

namespace orchid {

// The `n`-byte little-endian unsigned integer at `p` (zip and pickle fields).
inline uint64_t ReadLe(const std::byte* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | uint64_t(p[i]);
  return v;
}

struct ZipEntry {
  uint64_t offset = 0;  // of the entry's data, from the start of the archive
  uint64_t size = 0;
};

// The entries of the `size`-byte archive at `data`, by name. kCorrupt, starting with
// `error_prefix`, when it is not a zip archive, holds more than `max_entries` entries, or an
// entry is compressed, encrypted, listed twice or not wholly inside the archive.
Status ReadStoredZip(const std::byte* data, size_t size, const std::string& error_prefix,
                     uint64_t max_entries, std::map<std::string, ZipEntry>* entries);

}  // namespace orchid
