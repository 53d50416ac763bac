// L2 normalisation of rows: x / max(||x||, 1e-12), as torch.nn.functional.normalize.
#pragma once

#include <cstdint>

namespace orchid {

// x: [rows, dim]; row r is normalised when mask is null or mask[r] != 0.
void L2Normalize(float* x, int rows, int dim, const uint8_t* mask);

}  // namespace orchid
