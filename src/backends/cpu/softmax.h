// Softmax over each row, in place, numerically stable (the row maximum is subtracted first).
#pragma once

namespace orchid {

// x: [rows, cols], rows ld floats apart. Runs on the calling thread (attention calls it per
// sequence and head, already in parallel).
void SoftmaxRows(float* x, int rows, int cols, int ld);

}  // namespace orchid
