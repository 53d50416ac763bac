// The families' loaders, for LoadFamily (family.cpp). One per FamilyKind.
#pragma once

#include <memory>
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/family.h"

namespace orchid {

// The reader of a family's tensors under whatever prefix precedes `anchor` ("", "bert.",
// "model.", ...); kCorrupt naming the file and the family when no tensor ends in `anchor`.
Result<WeightReader> FamilyWeights(const Checkpoint& file, const std::string& anchor,
                                   const char* family);

// A family F (with Status F::Load(spec, file, backend)) loaded onto the backend.
template <class F>
Result<std::unique_ptr<Family>> LoadAs(const ModelSpec& spec, const Checkpoint& file,
                                       ops::Backend& backend) {
  auto f = std::make_unique<F>();
  ORCHID_RETURN_IF_ERROR(f->Load(spec, file, backend));
  return std::unique_ptr<Family>(std::move(f));
}

Result<std::unique_ptr<Family>> LoadBert(const ModelSpec& spec, const Checkpoint& file,
                                         ops::Backend& backend);
Result<std::unique_ptr<Family>> LoadModernBert(const ModelSpec& spec, const Checkpoint& file,
                                               ops::Backend& backend);
Result<std::unique_ptr<Family>> LoadDeberta(const ModelSpec& spec, const Checkpoint& file,
                                            ops::Backend& backend);
Result<std::unique_ptr<Family>> LoadRopeEncoder(const ModelSpec& spec, const Checkpoint& file,
                                                ops::Backend& backend);
Result<std::unique_ptr<Family>> LoadDecoder(const ModelSpec& spec, const Checkpoint& file,
                                            ops::Backend& backend);
Result<std::unique_ptr<Family>> LoadDualEncoder(const ModelSpec& spec, const Checkpoint& file,
                                                ops::Backend& backend);
// Opens its own checkpoint: the table sits in the StaticEmbedding module's folder.
Result<std::unique_ptr<Family>> LoadStaticEmbedding(const ModelSpec& spec, ops::Backend& backend);

}  // namespace orchid
