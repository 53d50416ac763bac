#include "description/rope_config.h"

#include <fmt/format.h>

#include <cmath>

namespace orchid {
namespace {

// A number field of a rope parameter object; absent or null leaves *out.
Status NumberOf(const JsonFile& f, simdjson::dom::object o, const std::string& field,
                const char* key, double* out) {
  simdjson::dom::element e;
  if (o[key].get(e) || e.is_null()) return Status::Ok();
  double v = 0;
  if (e.get_double().get(v)) {
    int64_t i = 0;
    if (e.get_int64().get(i)) return f.FieldError(field + "." + key, "must be a number");
    v = double(i);
  }
  if (!std::isfinite(v)) return f.FieldError(field + "." + key, "must be finite");
  *out = v;
  return Status::Ok();
}

Status PositiveOf(const JsonFile& f, simdjson::dom::object o, const std::string& field,
                  const char* key, bool required, double* out) {
  simdjson::dom::element e;
  if (required && (o[key].get(e) || e.is_null())) {
    return f.FieldError(field + "." + key, "is required for this rope_type");
  }
  ORCHID_RETURN_IF_ERROR(NumberOf(f, o, field, key, out));
  if (!(*out > 0) || *out > 1e9) return f.FieldError(field + "." + key, "must be positive");
  return Status::Ok();
}

}  // namespace

Status ReadRopeParameters(const JsonFile& f, simdjson::dom::object params, const std::string& field,
                          int max_positions, double* theta, RopeScaling* scaling) {
  // standardize_rope_params: rope_parameters.setdefault("rope_type", .get("type", "default")).
  std::string_view kind = "default";
  for (const char* key : {"type", "rope_type"}) {
    simdjson::dom::element t;
    if (!params[key].get(t) && !t.is_null() && t.get_string().get(kind)) {
      return f.FieldError(field + "." + key, "must be a string");
    }
  }
  ORCHID_RETURN_IF_ERROR(NumberOf(f, params, field, "rope_theta", theta));
  if (kind == "default") {
    if (scaling != nullptr) *scaling = RopeScaling{};
    return Status::Ok();
  }
  const char* known = "supported: default, linear, dynamic, llama3, yarn";
  if (scaling == nullptr) {
    return f.FieldError(field + ".rope_type",
                        fmt::format("is \"{}\"; only \"default\" rotary embeddings are supported "
                                    "for this architecture",
                                    kind));
  }
  RopeScaling s;
  s.max_positions = max_positions;
  s.original_max_positions = max_positions;
  if (kind == "linear") {
    s.type = RopeType::kLinear;
  } else if (kind == "dynamic") {
    s.type = RopeType::kDynamic;
  } else if (kind == "llama3") {
    s.type = RopeType::kLlama3;
  } else if (kind == "yarn") {
    s.type = RopeType::kYarn;
  } else {
    return f.FieldError(field + ".rope_type",
                        fmt::format("is \"{}\"; unknown rotary scaling ({})", kind, known));
  }
  ORCHID_RETURN_IF_ERROR(PositiveOf(f, params, field, "factor", true, &s.factor));
  double original = max_positions;
  ORCHID_RETURN_IF_ERROR(
      PositiveOf(f, params, field, "original_max_position_embeddings", false, &original));
  if (original != double(int(original))) {
    return f.FieldError(field + ".original_max_position_embeddings", "must be an integer");
  }
  s.original_max_positions = int(original);
  if (s.type == RopeType::kLlama3) {
    ORCHID_RETURN_IF_ERROR(
        PositiveOf(f, params, field, "low_freq_factor", true, &s.low_freq_factor));
    ORCHID_RETURN_IF_ERROR(
        PositiveOf(f, params, field, "high_freq_factor", true, &s.high_freq_factor));
    if (!(s.high_freq_factor > s.low_freq_factor)) {
      return f.FieldError(field + ".high_freq_factor", "must be greater than low_freq_factor");
    }
  }
  if (s.type == RopeType::kYarn) {
    // transformers: beta_fast / beta_slow "or" their defaults (0 and null give 32 and 1).
    s.beta_fast = s.beta_slow = 0;
    ORCHID_RETURN_IF_ERROR(NumberOf(f, params, field, "beta_fast", &s.beta_fast));
    ORCHID_RETURN_IF_ERROR(NumberOf(f, params, field, "beta_slow", &s.beta_slow));
    ORCHID_RETURN_IF_ERROR(NumberOf(f, params, field, "attention_factor", &s.attention_factor));
    ORCHID_RETURN_IF_ERROR(NumberOf(f, params, field, "mscale", &s.mscale));
    ORCHID_RETURN_IF_ERROR(NumberOf(f, params, field, "mscale_all_dim", &s.mscale_all_dim));
    simdjson::dom::element t;
    if (!params["truncate"].get(t) && !t.is_null() && t.get_bool().get(s.truncate)) {
      return f.FieldError(field + ".truncate", "must be true or false");
    }
    if (s.attention_factor < 0) {
      return f.FieldError(field + ".attention_factor", "must not be negative");
    }
  }
  *scaling = s;
  return Status::Ok();
}

Status ReadRotary(const JsonFile& f, double default_theta, int max_positions, double* theta,
                  RopeScaling* scaling) {
  // rope_theta = kwargs.pop("rope_theta", default); rope_parameters.setdefault("rope_theta", it).
  ORCHID_ASSIGN_OR_RETURN(*theta, f.Number("rope_theta", default_theta));
  *scaling = RopeScaling{};
  // self.rope_parameters = rope_scaling or self.rope_parameters.
  for (const char* field : {"rope_scaling", "rope_parameters"}) {
    simdjson::dom::element e;
    if (f.root()[field].get(e) || e.is_null()) continue;
    simdjson::dom::object params;
    if (e.get_object().get(params)) return f.FieldError(field, "must be an object or null");
    return ReadRopeParameters(f, params, field, max_positions, theta, scaling);
  }
  return Status::Ok();
}

}  // namespace orchid
