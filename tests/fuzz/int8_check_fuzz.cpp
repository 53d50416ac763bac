// Arbitrary bytes as a kept int8 start-up check (runtime/int8_cache.h), read back under the key
// the committed seeds were written with. ParseInt8Check must return nothing or a record whose
// serialization is exactly the input (the format has one spelling per record); ASan/UBSan check
// every read it makes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/int8_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string key = "orchid int8 fuzz key\n";
  if (const auto r = orchid::ParseInt8Check(bytes, key)) {
    if (orchid::SerializeInt8Check(key, *r) != bytes) std::abort();
  }
  return 0;
}
