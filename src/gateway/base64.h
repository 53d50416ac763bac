// Base64 (RFC 4648, standard alphabet, with padding), as OpenAI's `encoding_format: "base64"`
// uses it for the little-endian float32 bytes of an embedding.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace orchid {

void AppendBase64(std::string* out, const void* data, size_t size);
std::string Base64Encode(std::string_view bytes);
// nullopt when `text` is not canonical padded base64.
std::optional<std::string> Base64Decode(std::string_view text);

// Appends the base64 of `n` floats as little-endian IEEE-754 float32 bytes.
void AppendBase64Floats(std::string* out, const float* values, size_t n);

}  // namespace orchid
