#include "checkpoint/torch_checkpoint.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <unordered_set>
#include <utility>

#include "checkpoint/stored_zip.h"

namespace orchid {
namespace {

std::string ErrPrefix(const std::string& path) { return "PyTorch checkpoint " + path + ": "; }

// The conversion docs/models.md gives (safetensors' own helper does the same for a state dict).
constexpr const char* kConvertHint =
    "; convert it to safetensors with `python -c \"import torch, safetensors.torch as st; "
    "st.save_file(torch.load('FILE', weights_only=True), 'FILE.safetensors')\"` (docs/models.md, "
    "\"PyTorch .pt / .bin weights\")";

// ---- pickle -------------------------------------------------------------------------------

struct Value;
using Items = std::shared_ptr<std::vector<Value>>;

struct StorageRef {
  std::string key;
  DType dtype = DType::kF32;
  int64_t numel = 0;
};

struct TensorRef {
  StorageRef storage;
  int64_t offset = 0;
  std::vector<int64_t> shape, stride;
};

struct Value {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kStr,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kStorage,
    kTensor
  };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;  // kStr, kGlobal ("module.name")
  Items items;    // kTuple, kList, kDict (key, value, key, value, ...)
  std::shared_ptr<StorageRef> storage;
  std::shared_ptr<TensorRef> tensor;
};

const char* KindName(Value::Kind k) {
  switch (k) {
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return "a bool";
    case Value::Kind::kInt:
      return "an int";
    case Value::Kind::kFloat:
      return "a float";
    case Value::Kind::kStr:
      return "a string";
    case Value::Kind::kTuple:
      return "a tuple";
    case Value::Kind::kList:
      return "a list";
    case Value::Kind::kDict:
      return "a dict";
    case Value::Kind::kGlobal:
      return "a global";
    case Value::Kind::kStorage:
      return "a storage";
    case Value::Kind::kTensor:
      return "a tensor";
  }
  return "?";
}

struct StorageType {
  const char* name;
  DType dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"torch.FloatStorage", DType::kF32},     {"torch.HalfStorage", DType::kF16},
    {"torch.BFloat16Storage", DType::kBF16}, {"torch.DoubleStorage", DType::kF64},
    {"torch.LongStorage", DType::kI64},      {"torch.IntStorage", DType::kI32},
    {"torch.ShortStorage", DType::kI16},     {"torch.CharStorage", DType::kI8},
    {"torch.ByteStorage", DType::kU8},       {"torch.BoolStorage", DType::kBool},
};
constexpr const char* kOrderedDict = "collections.OrderedDict";
constexpr const char* kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr const char* kRebuildParameter = "torch._utils._rebuild_parameter";

bool AllowedGlobal(const std::string& name) {
  if (name == kOrderedDict || name == kRebuildTensor || name == kRebuildParameter) return true;
  for (const StorageType& t : kStorageTypes) {
    if (name == t.name) return true;
  }
  return false;
}

// Interprets data.pkl. Lists, dicts and tuples are shared (the memo refers to them), so a pickle
// can nest them in themselves: every one stays in arena_ until the Unpickler is destroyed, which
// empties them all first, so that neither a cycle (a leak) nor deep nesting (a deep recursion of
// destructors) outlives it. Values taken from Run() are valid while the Unpickler lives.
class Unpickler {
 public:
  Unpickler(const std::byte* data, size_t size, std::string pre)
      : p_(data), end_(data + size), begin_(data), pre_(std::move(pre)) {}
  ~Unpickler() {
    stack_.clear();
    memo_.clear();
    for (const Items& items : arena_) items->clear();
  }
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;

  Result<Value> Run() {
    static constexpr size_t kMaxStack = 1u << 20;  // a real state dict: thousands
    for (;;) {
      if (p_ >= end_) return Corrupt("ends before its STOP opcode");
      const size_t at = size_t(p_ - begin_);
      const uint8_t op = uint8_t(*p_++);
      if (stack_.size() > kMaxStack || memo_.size() > kMaxStack || marks_.size() > kMaxStack ||
          arena_.size() > kMaxStack) {
        return Corrupt("holds too many values");
      }
      switch (op) {
        case 0x80: {  // PROTO
          uint64_t v;
          ORCHID_RETURN_IF_ERROR(Arg(1, &v));
          if (v > 5) return Corrupt("pickle protocol " + std::to_string(v) + " is unknown");
          break;
        }
        case 0x95: {  // FRAME: a length hint only
          uint64_t v;
          ORCHID_RETURN_IF_ERROR(Arg(8, &v));
          break;
        }
        case '.': {  // STOP
          if (stack_.size() != 1 || !marks_.empty()) {
            return Corrupt("stops with " + std::to_string(stack_.size()) +
                           " values on its stack, not one");
          }
          return stack_.back();
        }
        case '}':
          stack_.push_back(NewCompound(Value::Kind::kDict));
          break;
        case ']':
          stack_.push_back(NewCompound(Value::Kind::kList));
          break;
        case ')':
          stack_.push_back(NewCompound(Value::Kind::kTuple));
          break;
        case 'N':
          stack_.push_back(Value{});
          break;
        case 0x88:
        case 0x89: {
          Value v;
          v.kind = Value::Kind::kBool;
          v.i = op == 0x88 ? 1 : 0;
          stack_.push_back(v);
          break;
        }
        case '(':
          marks_.push_back(stack_.size());
          break;
        case 'q':
        case 'r': {
          uint64_t k;
          ORCHID_RETURN_IF_ERROR(Arg(op == 'q' ? 1 : 4, &k));
          if (stack_.empty()) return Corrupt("memo store from an empty stack", at);
          ORCHID_RETURN_IF_ERROR(Copied(stack_.back(), at));
          memo_[k] = stack_.back();
          break;
        }
        case 0x94:  // MEMOIZE
          if (stack_.empty()) return Corrupt("memo store from an empty stack", at);
          ORCHID_RETURN_IF_ERROR(Copied(stack_.back(), at));
          memo_[memo_.size()] = stack_.back();
          break;
        case 'h':
        case 'j': {
          uint64_t k;
          ORCHID_RETURN_IF_ERROR(Arg(op == 'h' ? 1 : 4, &k));
          auto it = memo_.find(k);
          if (it == memo_.end()) return Corrupt("memo key " + std::to_string(k) + " unset", at);
          ORCHID_RETURN_IF_ERROR(Copied(it->second, at));
          stack_.push_back(it->second);
          break;
        }
        case 'K':
        case 'M':
        case 'J': {
          uint64_t v;
          ORCHID_RETURN_IF_ERROR(Arg(op == 'K' ? 1 : op == 'M' ? 2 : 4, &v));
          Value iv;
          iv.kind = Value::Kind::kInt;
          iv.i = op == 'J' ? int64_t(int32_t(uint32_t(v))) : int64_t(v);
          stack_.push_back(iv);
          break;
        }
        case 0x8a: {  // LONG1: n little-endian two's-complement bytes
          uint64_t n;
          ORCHID_RETURN_IF_ERROR(Arg(1, &n));
          if (n > 8) return Corrupt("integer of " + std::to_string(n) + " bytes", at);
          uint64_t v;
          ORCHID_RETURN_IF_ERROR(Arg(int(n), &v));
          if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);
          Value iv;
          iv.kind = Value::Kind::kInt;
          iv.i = int64_t(v);
          stack_.push_back(iv);
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          if (end_ - p_ < 8) return Corrupt("truncated", at);
          uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | uint64_t(p_[k]);
          p_ += 8;
          Value fv;
          fv.kind = Value::Kind::kFloat;
          std::memcpy(&fv.f, &bits, 8);
          stack_.push_back(fv);
          break;
        }
        case 'X':
        case 0x8c:
        case 0x8d:
        case 'U':
        case 'T': {
          uint64_t n;
          ORCHID_RETURN_IF_ERROR(Arg(op == 0x8c || op == 'U' ? 1 : op == 0x8d ? 8 : 4, &n));
          if (uint64_t(end_ - p_) < n) return Corrupt("a string runs past the end", at);
          Value sv;
          sv.kind = Value::Kind::kStr;
          sv.s.assign(reinterpret_cast<const char*>(p_), size_t(n));
          p_ += n;
          stack_.push_back(std::move(sv));
          break;
        }
        case 'c': {  // GLOBAL "module\nname\n"
          std::string module, name;
          ORCHID_RETURN_IF_ERROR(Line(&module));
          ORCHID_RETURN_IF_ERROR(Line(&name));
          ORCHID_RETURN_IF_ERROR(PushGlobal(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          if (stack_.size() < 2 || stack_.back().kind != Value::Kind::kStr ||
              stack_[stack_.size() - 2].kind != Value::Kind::kStr) {
            return Corrupt("STACK_GLOBAL without module and name strings", at);
          }
          std::string name = stack_.back().s;
          stack_.pop_back();
          std::string module = stack_.back().s;
          stack_.pop_back();
          ORCHID_RETURN_IF_ERROR(PushGlobal(module + "." + name));
          break;
        }
        case 't': {
          std::vector<Value> items;
          ORCHID_RETURN_IF_ERROR(PopMark(&items, at));
          stack_.push_back(NewCompound(Value::Kind::kTuple, std::move(items)));
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {
          const size_t n = size_t(op - 0x84);
          if (stack_.size() < n + Floor()) return Corrupt("tuple of missing values", at);
          std::vector<Value> items(std::make_move_iterator(stack_.end() - std::ptrdiff_t(n)),
                                   std::make_move_iterator(stack_.end()));
          stack_.resize(stack_.size() - n);
          stack_.push_back(NewCompound(Value::Kind::kTuple, std::move(items)));
          break;
        }
        case 'a':
        case 'e': {
          std::vector<Value> items;
          if (op == 'e') {
            ORCHID_RETURN_IF_ERROR(PopMark(&items, at));
          } else {
            if (stack_.size() < 1 + Floor()) return Corrupt("APPEND without a value", at);
            items.push_back(std::move(stack_.back()));
            stack_.pop_back();
          }
          if (stack_.empty() || stack_.back().kind != Value::Kind::kList) {
            return Corrupt("APPEND to something that is not a list", at);
          }
          for (Value& v : items) stack_.back().items->push_back(std::move(v));
          break;
        }
        case 's':
        case 'u': {
          std::vector<Value> items;
          if (op == 'u') {
            ORCHID_RETURN_IF_ERROR(PopMark(&items, at));
          } else {
            if (stack_.size() < 2 + Floor()) return Corrupt("SETITEM without key and value", at);
            items.assign(std::make_move_iterator(stack_.end() - 2),
                         std::make_move_iterator(stack_.end()));
            stack_.resize(stack_.size() - 2);
          }
          if (items.size() % 2 != 0) return Corrupt("SETITEMS with an odd number of values", at);
          if (stack_.empty() || stack_.back().kind != Value::Kind::kDict) {
            return Corrupt("SETITEM on something that is not a dict", at);
          }
          for (Value& v : items) stack_.back().items->push_back(std::move(v));
          break;
        }
        case 'b': {  // BUILD: state_dict()'s _metadata attribute; nothing here uses it
          if (stack_.size() < 2 + Floor()) return Corrupt("BUILD without object and state", at);
          stack_.pop_back();
          const Value::Kind k = stack_.back().kind;
          if (k != Value::Kind::kDict && k != Value::Kind::kTensor) {
            return Corrupt(std::string("BUILD on ") + KindName(k), at);
          }
          break;
        }
        case 'Q': {  // BINPERSID: a storage
          if (stack_.size() < 1 + Floor()) return Corrupt("BINPERSID without an id", at);
          Value pid = std::move(stack_.back());
          stack_.pop_back();
          Value st;
          ORCHID_RETURN_IF_ERROR(Storage(pid, &st, at));
          stack_.push_back(std::move(st));
          break;
        }
        case 'R': {  // REDUCE
          if (stack_.size() < 2 + Floor()) return Corrupt("REDUCE without callable and args", at);
          Value args = std::move(stack_.back());
          stack_.pop_back();
          Value fn = std::move(stack_.back());
          stack_.pop_back();
          Value out;
          ORCHID_RETURN_IF_ERROR(Reduce(fn, args, &out, at));
          stack_.push_back(std::move(out));
          break;
        }
        default: {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "0x%02x", op);
          return Corrupt(std::string("pickle opcode ") + buf +
                             " is not one torch.save writes for a state dict",
                         at);
        }
      }
    }
  }

 private:
  Status Corrupt(const std::string& m, size_t at = std::numeric_limits<size_t>::max()) const {
    return Status::Corrupt(
        pre_ + "data.pkl: " + m +
        (at == std::numeric_limits<size_t>::max() ? "" : " (byte " + std::to_string(at) + ")"));
  }
  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // Memo stores and gets copy a value's string: bound what repeating them can allocate.
  Status Copied(const Value& v, size_t at) {
    copied_bytes_ += v.s.size();
    if (copied_bytes_ > TorchCheckpointFile::kMaxPickleBytes) {
      return Corrupt("copies too many bytes through its memo", at);
    }
    return Status::Ok();
  }
  Value NewCompound(Value::Kind k, std::vector<Value> items = {}) {
    Value v;
    v.kind = k;
    v.items = std::make_shared<std::vector<Value>>(std::move(items));
    arena_.push_back(v.items);
    return v;
  }
  Status Arg(int n, uint64_t* v) {
    if (end_ - p_ < n) return Corrupt("truncated");
    *v = ReadLe(p_, n);
    p_ += n;
    return Status::Ok();
  }
  Status Line(std::string* out) {
    const std::byte* nl = p_;
    while (nl < end_ && *nl != std::byte{'\n'} && nl - p_ < 256) ++nl;
    if (nl >= end_ || *nl != std::byte{'\n'}) return Corrupt("GLOBAL name is not terminated");
    out->assign(reinterpret_cast<const char*>(p_), size_t(nl - p_));
    p_ = nl + 1;
    return Status::Ok();
  }
  Status PushGlobal(const std::string& name) {
    if (!AllowedGlobal(name)) {
      return Status::Corrupt(pre_ + "data.pkl refers to the Python global \"" + name +
                             "\", which a plain state dict of tensors does not; orchid does not "
                             "run pickle code" +
                             kConvertHint);
    }
    Value g;
    g.kind = Value::Kind::kGlobal;
    g.s = name;
    stack_.push_back(std::move(g));
    return Status::Ok();
  }
  Status PopMark(std::vector<Value>* items, size_t at) {
    if (marks_.empty()) return Corrupt("no MARK to pop to", at);
    const size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) return Corrupt("MARK above the stack", at);
    items->assign(std::make_move_iterator(stack_.begin() + std::ptrdiff_t(m)),
                  std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return Status::Ok();
  }
  // ('storage', torch.FloatStorage, key, location, numel)
  Status Storage(const Value& pid, Value* out, size_t at) const {
    const std::vector<Value>* t = pid.kind == Value::Kind::kTuple ? pid.items.get() : nullptr;
    if (t == nullptr || t->size() != 5 || (*t)[0].kind != Value::Kind::kStr ||
        (*t)[0].s != "storage" || (*t)[1].kind != Value::Kind::kGlobal ||
        (*t)[2].kind != Value::Kind::kStr || (*t)[4].kind != Value::Kind::kInt) {
      return Corrupt("a persistent id that is not ('storage', type, key, location, numel)", at);
    }
    auto s = std::make_shared<StorageRef>();
    bool known = false;
    for (const StorageType& st : kStorageTypes) {
      if ((*t)[1].s == st.name) {
        s->dtype = st.dtype;
        known = true;
      }
    }
    if (!known) return Corrupt("storage of type " + (*t)[1].s, at);
    s->key = (*t)[2].s;
    s->numel = (*t)[4].i;
    if (s->numel < 0) return Corrupt("storage of negative size", at);
    out->kind = Value::Kind::kStorage;
    out->storage = std::move(s);
    return Status::Ok();
  }
  static bool Ints(const Value& v, std::vector<int64_t>* out) {
    if (v.kind != Value::Kind::kTuple) return false;
    for (const Value& x : *v.items) {
      if (x.kind != Value::Kind::kInt) return false;
      out->push_back(x.i);
    }
    return true;
  }
  Status Reduce(const Value& fn, const Value& args, Value* out, size_t at) {
    if (fn.kind != Value::Kind::kGlobal || args.kind != Value::Kind::kTuple) {
      return Corrupt(std::string("REDUCE of ") + KindName(fn.kind) + " with " + KindName(args.kind),
                     at);
    }
    const std::vector<Value>& a = *args.items;
    if (fn.s == kOrderedDict) {
      if (!a.empty()) return Corrupt("OrderedDict built from arguments", at);
      *out = NewCompound(Value::Kind::kDict);
      return Status::Ok();
    }
    if (fn.s == kRebuildParameter) {
      if (a.empty() || a[0].kind != Value::Kind::kTensor) {
        return Corrupt("_rebuild_parameter without a tensor", at);
      }
      *out = a[0];
      return Status::Ok();
    }
    if (fn.s == kRebuildTensor) {
      auto t = std::make_shared<TensorRef>();
      if (a.size() < 4 || a[0].kind != Value::Kind::kStorage || a[1].kind != Value::Kind::kInt ||
          !Ints(a[2], &t->shape) || !Ints(a[3], &t->stride) ||
          t->shape.size() != t->stride.size()) {
        return Corrupt("_rebuild_tensor_v2 without (storage, offset, size, stride)", at);
      }
      t->storage = *a[0].storage;
      t->offset = a[1].i;
      out->kind = Value::Kind::kTensor;
      out->tensor = std::move(t);
      return Status::Ok();
    }
    return Corrupt("REDUCE of " + fn.s, at);
  }

  const std::byte* p_;
  const std::byte* end_;
  const std::byte* begin_;
  std::string pre_;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value> memo_;
  std::vector<Items> arena_;
  uint64_t copied_bytes_ = 0;
};

constexpr int kMaxRank = 8;

// The tensor's byte range in the archive, checked against its storage entry.
Status Place(const std::string& name, const TensorRef& t, const ZipEntry& storage,
             const std::string& pre, TensorInfo* info) {
  const std::string where = pre + "tensor \"" + name + "\": ";
  info->name = name;
  info->dtype = t.storage.dtype;
  const uint64_t elem = DTypeSize(t.storage.dtype);
  if (uint64_t(t.storage.numel) > storage.size / elem ||
      storage.size != uint64_t(t.storage.numel) * elem) {
    return Status::Corrupt(where + "its storage holds " + std::to_string(storage.size) +
                           " bytes, not " + std::to_string(t.storage.numel) + " x " +
                           std::to_string(elem));
  }
  if (t.shape.size() > size_t(kMaxRank)) return Status::Corrupt(where + "rank over 8");
  uint64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return Status::Corrupt(where + "negative dimension");
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / uint64_t(d)) {
      return Status::Corrupt(where + "shape overflows");
    }
    numel *= uint64_t(d);
  }
  // Contiguous (row-major) only: what state_dict() gives; a dimension of size 1 may have any
  // stride.
  uint64_t expect = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && numel != 0 && uint64_t(t.stride[i]) != expect) {
      return Status::Corrupt(where + "is not contiguous (a view); save tensor.contiguous()");
    }
    expect *= uint64_t(t.shape[i]);
  }
  if (t.offset < 0 || uint64_t(t.offset) > uint64_t(t.storage.numel) ||
      numel > uint64_t(t.storage.numel) - uint64_t(t.offset)) {
    return Status::Corrupt(where + "offset " + std::to_string(t.offset) + " + " +
                           std::to_string(numel) + " elements runs past its storage of " +
                           std::to_string(t.storage.numel));
  }
  info->shape = t.shape;
  info->numel = numel;
  info->begin = storage.offset + uint64_t(t.offset) * elem;
  info->end = info->begin + numel * elem;
  return Status::Ok();
}

}  // namespace

Status ParseTorchCheckpoint(const std::byte* data, size_t size, const std::string& path,
                            std::vector<TensorInfo>* tensors) {
  const std::string pre = ErrPrefix(path);
  if (size >= 2 && data[0] == std::byte{0x80} && uint8_t(data[1]) <= 5) {
    return Status::Corrupt(pre +
                           "is in PyTorch's legacy (pre-1.6, non-zip) format, which orchid does "
                           "not read" +
                           kConvertHint);
  }
  if (size < 4 || ReadLe(data, 4) != 0x04034b50u) {
    return Status::Corrupt(pre + "not a zip archive (torch.save's format)");
  }
  std::map<std::string, ZipEntry> entries;
  ORCHID_RETURN_IF_ERROR(
      ReadStoredZip(data, size, pre, TorchCheckpointFile::kMaxEntries, &entries));
  // The archive's one folder: PREFIX/data.pkl.
  std::string prefix;
  for (const auto& [name, e] : entries) {
    const size_t slash = name.find('/');
    if (slash != std::string::npos && name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      if (!prefix.empty()) return Status::Corrupt(pre + "two data.pkl entries");
      prefix = name.substr(0, slash + 1);
    }
  }
  if (prefix.empty()) return Status::Corrupt(pre + "no data.pkl entry: not a torch.save archive");
  auto order = entries.find(prefix + "byteorder");
  if (order != entries.end() &&
      std::string_view(reinterpret_cast<const char*>(data + order->second.offset),
                       size_t(order->second.size)) != "little") {
    return Status::Corrupt(pre + "saved big-endian");
  }
  const ZipEntry& pkl = entries[prefix + "data.pkl"];
  if (pkl.size > TorchCheckpointFile::kMaxPickleBytes) {
    return Status::Corrupt(pre + "data.pkl is " + std::to_string(pkl.size) + " bytes, over " +
                           std::to_string(TorchCheckpointFile::kMaxPickleBytes));
  }
  Unpickler unpickler(data + pkl.offset, size_t(pkl.size), pre);
  ORCHID_ASSIGN_OR_RETURN(Value root, unpickler.Run());
  if (root.kind != Value::Kind::kDict) {
    return Status::Corrupt(pre + "holds " + KindName(root.kind) +
                           ", not a state dict (a dict of tensors)");
  }
  std::unordered_set<std::string> seen;
  const std::vector<Value>& kv = *root.items;
  for (size_t i = 0; i + 1 < kv.size(); i += 2) {
    if (kv[i].kind != Value::Kind::kStr) {
      return Status::Corrupt(pre + "a state dict key is " + KindName(kv[i].kind));
    }
    const std::string& name = kv[i].s;
    if (kv[i + 1].kind != Value::Kind::kTensor) {
      return Status::Corrupt(pre + "\"" + name + "\" is " + KindName(kv[i + 1].kind) +
                             ", not a tensor");
    }
    if (!seen.insert(name).second) return Status::Corrupt(pre + "\"" + name + "\" appears twice");
    const TensorRef& t = *kv[i + 1].tensor;
    auto entry = entries.find(prefix + "data/" + t.storage.key);
    if (entry == entries.end()) {
      return Status::Corrupt(pre + "tensor \"" + name + "\": no storage entry data/" +
                             t.storage.key);
    }
    TensorInfo info;
    ORCHID_RETURN_IF_ERROR(Place(name, t, entry->second, pre, &info));
    tensors->push_back(std::move(info));
  }
  return Status::Ok();
}

Result<std::unique_ptr<TorchCheckpointFile>> TorchCheckpointFile::Open(const std::string& path) {
  std::unique_ptr<TorchCheckpointFile> f(new TorchCheckpointFile());
  f->path_ = path;
  ORCHID_ASSIGN_OR_RETURN(f->file_, MappedFile::Open(path, ErrPrefix(path)));
  f->base_ = f->file_.data();
  ORCHID_RETURN_IF_ERROR(ParseTorchCheckpoint(f->base_, f->file_.size(), path, &f->tensors_));
  for (size_t i = 0; i < f->tensors_.size(); ++i) f->index_.emplace(f->tensors_[i].name, i);
  return f;
}

const TensorInfo* TorchCheckpointFile::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Result<Tensor> TorchCheckpointFile::ReadF32(std::string_view name) const {
  const TensorInfo* t = Find(name);
  return ReadTensorF32(t, t == nullptr ? nullptr : Bytes(*t), name, ErrPrefix(path_));
}

}  // namespace orchid
