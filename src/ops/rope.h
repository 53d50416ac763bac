// Rotary embeddings' frequencies, as Hugging Face transformers computes them
// (modeling_rope_utils.py, 5.25): the default 1 / theta^(2i/d) and the scaled types a config's
// rope_parameters (rope_scaling before transformers 5) names. Pure functions: the families fill
// RopeScaling from config.json at load time; the backends turn it into inverse frequencies.
//
// Every step rounds to fp32 where torch does (fp32 tensors meeting Python doubles), so that the
// frequencies land within an ulp of the reference's (its pow is not correctly rounded either).
#pragma once

#include <vector>

#include "description/rope_scaling.h"

namespace orchid::ops {

// The inverse frequencies [dim / 2] of theta and scaling for a sequence of seq_len positions
// (only kDynamic depends on it), and the factor cos and sin are multiplied by (1 but for yarn).
void RopeInverseFrequencies(double theta, int dim, const RopeScaling& scaling, int seq_len,
                            std::vector<float>* inv_freq, float* attention_scaling);

}  // namespace orchid::ops
