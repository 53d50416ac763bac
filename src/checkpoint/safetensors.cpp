#include "checkpoint/safetensors.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace orchid {
namespace {

struct DTypeEntry {
  const char* name;
  DType dtype;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {"BOOL", DType::kBool, 1},      {"U8", DType::kU8, 1},          {"I8", DType::kI8, 1},
    {"F8_E4M3", DType::kF8E4M3, 1}, {"F8_E5M2", DType::kF8E5M2, 1}, {"I16", DType::kI16, 2},
    {"U16", DType::kU16, 2},        {"F16", DType::kF16, 2},        {"BF16", DType::kBF16, 2},
    {"I32", DType::kI32, 4},        {"U32", DType::kU32, 4},        {"F32", DType::kF32, 4},
    {"I64", DType::kI64, 8},        {"U64", DType::kU64, 8},        {"F64", DType::kF64, 8},
};

constexpr int kMaxRank = 8;

bool ParseDType(std::string_view s, DType* out) {
  for (const auto& e : kDTypes) {
    if (s == e.name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

// IEEE half -> float, including subnormals, infinities and NaN.
float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string ErrPrefix(const std::string& path) { return "safetensors file " + path + ": "; }

}  // namespace

const char* DTypeName(DType t) {
  for (const auto& e : kDTypes) {
    if (e.dtype == t) return e.name;
  }
  return "?";
}

size_t DTypeSize(DType t) {
  for (const auto& e : kDTypes) {
    if (e.dtype == t) return e.size;
  }
  return 0;
}

bool ConvertToF32(DType dtype, const std::byte* src, size_t n, float* dst) {
  // memcpy per element: offsets need not be aligned.
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, n * 4);
      return true;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = HalfToFloat(h);
      }
      return true;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(dst + i, &bits, 4);
      }
      return true;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, src + 8 * i, 8);
        dst[i] = float(d);
      }
      return true;
    default:
      return false;
  }
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  const std::string pre = ErrPrefix(path);
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  ORCHID_ASSIGN_OR_RETURN(f->file_, MappedFile::Open(path, pre));
  const uint64_t file_size = f->file_.size();
  if (file_size < 8) {
    return Status::Corrupt(pre + "file is " + std::to_string(file_size) +
                           " bytes, too short for the 8-byte header length");
  }
  const std::byte* bytes = f->file_.data();

  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | uint64_t(bytes[i]);
  if (header_len > kMaxHeaderBytes) {
    return Status::Corrupt(pre + "header length " + std::to_string(header_len) +
                           " exceeds the limit of " + std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_len > file_size - 8) {
    return Status::Corrupt(pre + "header length " + std::to_string(header_len) +
                           " exceeds the file size " + std::to_string(file_size) +
                           " (truncated file?)");
  }
  if (header_len < 2) return Status::Corrupt(pre + "header is too short to be a JSON object");
  const std::string_view header(reinterpret_cast<const char*>(bytes + 8), size_t(header_len));
  f->data_ = bytes + 8 + header_len;
  ORCHID_RETURN_IF_ERROR(f->Parse(header, file_size - 8 - header_len));
  return f;
}

Status SafetensorsFile::Parse(std::string_view header, uint64_t data_size) {
  const std::string pre = ErrPrefix(path_);
  if (header.front() != '{') return Status::Corrupt(pre + "header does not start with '{'");
  simdjson::dom::parser parser;
  simdjson::padded_string padded(header.data(), header.size());
  simdjson::dom::element root;
  if (auto err = parser.parse(padded).get(root)) {
    return Status::Corrupt(pre + "header is not valid JSON: " + simdjson::error_message(err));
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return Status::Corrupt(pre + "header is not a JSON object");

  for (auto field : obj) {
    const std::string name(field.key);
    const std::string where = pre + "tensor \"" + name + "\": ";
    if (name == "__metadata__") {
      if (!field.value.is_object()) return Status::Corrupt(pre + "__metadata__ is not an object");
      continue;
    }
    if (index_.count(name)) return Status::Corrupt(where + "appears twice in the header");
    simdjson::dom::object t;
    if (field.value.get_object().get(t)) return Status::Corrupt(where + "entry is not an object");

    TensorInfo info;
    info.name = name;
    std::string_view dtype;
    if (t["dtype"].get_string().get(dtype)) {
      return Status::Corrupt(where + "missing or non-string \"dtype\"");
    }
    if (!ParseDType(dtype, &info.dtype)) {
      return Status::Corrupt(where + "unknown dtype \"" + std::string(dtype) + "\"");
    }

    simdjson::dom::array shape;
    if (t["shape"].get_array().get(shape)) {
      return Status::Corrupt(where + "missing or non-array \"shape\"");
    }
    if (shape.size() > size_t(kMaxRank)) {
      return Status::Corrupt(where + "rank " + std::to_string(shape.size()) + " exceeds " +
                             std::to_string(kMaxRank));
    }
    const uint64_t elem = DTypeSize(info.dtype);
    uint64_t numel = 1;
    for (auto d : shape) {
      uint64_t v;
      if (d.get_uint64().get(v)) {
        return Status::Corrupt(where + "shape entries must be non-negative integers");
      }
      if (v > uint64_t(std::numeric_limits<int64_t>::max()) ||
          (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v)) {
        return Status::Corrupt(where + "shape overflows");
      }
      numel *= v;
      info.shape.push_back(int64_t(v));
    }
    if (numel > std::numeric_limits<uint64_t>::max() / elem) {
      return Status::Corrupt(where + "shape overflows");
    }
    info.numel = numel;

    simdjson::dom::array offsets;
    if (t["data_offsets"].get_array().get(offsets) || offsets.size() != 2) {
      return Status::Corrupt(where + "\"data_offsets\" must be an array [begin, end]");
    }
    uint64_t off[2];
    for (size_t i = 0; i < 2; ++i) {
      if (offsets.at(i).get_uint64().get(off[i])) {
        return Status::Corrupt(where + "data_offsets must be non-negative integers");
      }
    }
    info.begin = off[0];
    info.end = off[1];
    if (info.begin > info.end) {
      return Status::Corrupt(where + "data_offsets begin " + std::to_string(info.begin) +
                             " > end " + std::to_string(info.end));
    }
    if (info.end > data_size) {
      return Status::Corrupt(where + "data_offsets end " + std::to_string(info.end) +
                             " is beyond the data section (" + std::to_string(data_size) +
                             " bytes; truncated file?)");
    }
    if (info.end - info.begin != numel * elem) {
      return Status::Corrupt(where + "byte range " + std::to_string(info.end - info.begin) +
                             " does not match shape x dtype (" + std::to_string(numel) + " x " +
                             std::to_string(elem) + " bytes)");
    }
    index_.emplace(name, tensors_.size());
    tensors_.push_back(std::move(info));
  }

  // No two non-empty tensors may share bytes.
  std::vector<const TensorInfo*> sorted;
  for (const auto& t : tensors_) {
    if (t.end > t.begin) sorted.push_back(&t);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->begin < sorted[i - 1]->end) {
      return Status::Corrupt(pre + "tensors \"" + sorted[i - 1]->name + "\" and \"" +
                             sorted[i]->name + "\" overlap");
    }
  }
  return Status::Ok();
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Result<Tensor> ReadTensorF32(const TensorInfo* t, const std::byte* bytes, std::string_view name,
                             const std::string& error_prefix) {
  if (t == nullptr) {
    return Status::NotFound(error_prefix + "no tensor named \"" + std::string(name) + "\"");
  }
  Tensor out(t->shape);
  if (!ConvertToF32(t->dtype, bytes, size_t(t->numel), out.data())) {
    return Status::Corrupt(error_prefix + "tensor \"" + t->name + "\" has dtype " +
                           DTypeName(t->dtype) + ", expected a float type (F32, F16, BF16, F64)");
  }
  return out;
}

Result<Tensor> SafetensorsFile::ReadF32(std::string_view name) const {
  const TensorInfo* t = Find(name);
  return ReadTensorF32(t, t == nullptr ? nullptr : Bytes(*t), name, ErrPrefix(path_));
}

}  // namespace orchid
