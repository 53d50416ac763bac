#include "families/family.h"

#include "families/family_loaders.h"

namespace orchid {

Result<std::unique_ptr<Family>> LoadFamily(const ModelSpec& spec, ops::Backend& backend) {
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                          SafetensorsFile::Open(spec.weights_path));
  switch (spec.family) {
    case FamilyKind::kBert:
      return LoadBert(spec, *file, backend);
    case FamilyKind::kDecoder:
      return LoadDecoder(spec, *file, backend);
  }
  return Status::Internal("unknown family");
}

}  // namespace orchid
