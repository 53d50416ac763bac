// transformers' rotary-embedding settings in a config.json, in the layouts of transformers 4.x
// (a top-level "rope_theta", "rope_scaling": {"type" or "rope_type", "factor", ...}) and 5.x
// ("rope_parameters": {"rope_type", "rope_theta", ...}; per layer type for Gemma 3 / ModernBERT).
#pragma once

#include <simdjson.h>

#include <string>

#include "core/status.h"
#include "description/json_file.h"
#include "description/rope_scaling.h"

namespace orchid {

// One rotary parameter object (`field` names it in errors): *theta where it has "rope_theta";
// its "rope_type" ("type" in transformers 4.x; "rope_type" wins, as in 5.x) and that type's
// fields into *scaling. scaling == nullptr: only "default" is accepted (families whose other
// types orchid does not implement), anything else is an error naming the field.
// max_positions: config.json max_position_embeddings, the default of llama3 / yarn's
// original_max_position_embeddings (transformers' standardize_rope_params).
Status ReadRopeParameters(const JsonFile& f, simdjson::dom::object params, const std::string& field,
                          int max_positions, double* theta, RopeScaling* scaling = nullptr);

// A Llama-style decoder's rotary settings, with transformers 5.25's precedence
// (RotaryEmbeddingConfigMixin.convert_rope_params_to_dict): a "rope_scaling" object wins over
// "rope_parameters"; the object's "rope_theta" wins over the top-level "rope_theta", which wins
// over default_theta. *theta and *scaling are set; unknown types are errors.
Status ReadRotary(const JsonFile& f, double default_theta, int max_positions, double* theta,
                  RopeScaling* scaling);

}  // namespace orchid
