#include "description/lora_adapters.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>

#include "description/json_file.h"

namespace orchid {
namespace {

constexpr const char* kJinaTasks[] = {"retrieval.query", "retrieval.passage", "separation",
                                      "classification", "text-matching"};

size_t JinaOrder(const std::string& task) {
  const auto* it = std::find(std::begin(kJinaTasks), std::end(kJinaTasks), task);
  return size_t(it - std::begin(kJinaTasks));
}

// A field that must be absent, null, false, empty or equal to `ok`.
Status RequireUnset(const JsonFile& f, const char* field, std::string_view ok = {}) {
  simdjson::dom::element v;
  if (f.root()[field].get(v)) return Status::Ok();
  switch (v.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return Status::Ok();
    case simdjson::dom::element_type::BOOL: {
      bool b = true;
      if (!v.get_bool().get(b) && !b) return Status::Ok();
      break;
    }
    case simdjson::dom::element_type::OBJECT:
      if (simdjson::dom::object(v).size() == 0) return Status::Ok();
      break;
    case simdjson::dom::element_type::ARRAY:
      if (simdjson::dom::array(v).size() == 0) return Status::Ok();
      break;
    case simdjson::dom::element_type::STRING:
      if (!ok.empty() && std::string_view(v) == ok) return Status::Ok();
      break;
    default:
      break;
  }
  return f.FieldError(field,
                      "is set; orchid serves plain LoRA adapters only (no DoRA, bias, "
                      "rank or alpha patterns, modules_to_save or fan_in_fan_out)");
}

}  // namespace

double LoraAdapterConfig::scale() const {
  return rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank);
}

std::string TaskOfAdapterFolder(std::string_view folder) {
  if (folder == "retrieval_query") return "retrieval.query";
  if (folder == "retrieval_passage") return "retrieval.passage";
  if (folder == "text_matching") return "text-matching";
  return std::string(folder);
}

Result<LoraAdapterConfig> ReadLoraAdapterConfig(const std::string& path,
                                                const std::string& folder) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  LoraAdapterConfig c;
  c.folder = folder;
  c.task = TaskOfAdapterFolder(folder);
  const Result<std::string> type = f.String("peft_type", "LORA");
  if (!type.ok()) return type.status();
  if (type.value() != "LORA") {
    return f.FieldError("peft_type", "is \"" + type.value() + "\"; only LoRA adapters are served");
  }
  ORCHID_RETURN_IF_ERROR(f.Size("r", 1 << 16, &c.rank));
  ORCHID_ASSIGN_OR_RETURN(c.alpha, f.Number("lora_alpha", 8.0));  // LoraConfig's default
  if (!std::isfinite(c.alpha)) return f.FieldError("lora_alpha", "must be a finite number");
  ORCHID_ASSIGN_OR_RETURN(c.rslora, f.Bool("use_rslora", false));
  for (const char* field : {"use_dora", "fan_in_fan_out", "rank_pattern", "alpha_pattern",
                            "modules_to_save", "lora_bias", "trainable_token_indices"}) {
    ORCHID_RETURN_IF_ERROR(RequireUnset(f, field));
  }
  ORCHID_RETURN_IF_ERROR(RequireUnset(f, "bias", "none"));
  simdjson::dom::element targets;
  if (!f.root()["target_modules"].get(targets)) {
    simdjson::dom::array list;
    std::string_view one;
    if (!targets.get_array().get(list)) {
      for (simdjson::dom::element e : list) {
        if (e.get_string().get(one)) {
          return f.FieldError("target_modules", "must be a string or a list of strings");
        }
        c.target_modules.emplace_back(one);
      }
    } else if (!targets.get_string().get(one)) {
      c.target_modules.emplace_back(one);
    } else if (!targets.is_null()) {
      return f.FieldError("target_modules", "must be a string or a list of strings");
    }
  }
  return c;
}

Result<std::vector<LoraAdapterConfig>> ReadLoraAdapters(const std::string& dir) {
  std::vector<LoraAdapterConfig> out;
  std::error_code ec;
  std::vector<std::string> folders;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code e2;
    if (!entry.is_directory(e2)) continue;
    if (!std::filesystem::is_regular_file(entry.path() / "adapter_config.json", e2)) continue;
    folders.push_back(entry.path().filename().string());
  }
  if (ec) return Status::Internal(dir + ": cannot list the directory: " + ec.message());
  for (const std::string& folder : folders) {
    const std::string sub = dir + "/" + folder;
    ORCHID_ASSIGN_OR_RETURN(LoraAdapterConfig c,
                            ReadLoraAdapterConfig(sub + "/adapter_config.json", folder));
    c.dir = sub;
    std::error_code e2;
    if (!std::filesystem::is_regular_file(sub + "/adapter_model.safetensors", e2)) {
      return Status::NotFound(sub +
                              ": an adapter_config.json without adapter_model.safetensors "
                              "(adapter_model.bin is not read: re-save it as safetensors)");
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const LoraAdapterConfig& a, const LoraAdapterConfig& b) {
    const size_t oa = JinaOrder(a.task), ob = JinaOrder(b.task);
    return oa != ob ? oa < ob : a.task < b.task;
  });
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].task == out[i - 1].task) {
      return Status::Corrupt(dir + ": adapters " + out[i - 1].folder + " and " + out[i].folder +
                             " both name the task " + out[i].task);
    }
  }
  return out;
}

}  // namespace orchid
