// The families' loaders, for LoadFamily (family.cpp). One per FamilyKind.
#pragma once

#include <memory>

#include "checkpoint/safetensors.h"
#include "families/family.h"

namespace orchid {

Result<std::unique_ptr<Family>> LoadBert(const ModelSpec& spec, const SafetensorsFile& file,
                                         ops::Backend& backend);
Result<std::unique_ptr<Family>> LoadDecoder(const ModelSpec& spec, const SafetensorsFile& file,
                                          ops::Backend& backend);

}  // namespace orchid
