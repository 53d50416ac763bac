// Softmax over each row, in place, numerically stable (the row maximum is subtracted first).
#pragma once

#include <cstdint>

namespace orchid {

// x: [rows, cols], rows ld floats apart. Runs on the calling thread (attention calls it per
// sequence and head, already in parallel).
void SoftmaxRows(float* x, int rows, int cols, int ld);

// The probabilities of softmax(x * scale) row by row, rounded to bfloat16 into out (rows
// ld_out apart; ld_out even, a zero after an odd cols), as the P operand of attention's P V:
// the same bits as multiplying x by scale, SoftmaxRows and ConvertRowsBf16 (packed_gemm.h)
// one after another, in one pass fewer over the row. x is clobbered.
void SoftmaxRowsToBf16(float* x, int rows, int cols, int ld, float scale, uint16_t* out,
                       int ld_out);

}  // namespace orchid
