// The model file as a Source, without its weights: readSkeleton() streams the
// ModelProto from a Source and copies everything but the payloads of large
// TensorProto.raw_data fields (initializers, Constant attributes, functions,
// subgraphs, sparse tensors), which it records instead. readModel() then builds
// the graph from the small skeleton, and those tensors become ranges of the
// model file: read only when a pass needs them, copied by the host when written.
// So an inline model needs memory for its graph, not its weights.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "ir/buffer.h"
#include "ir/source.h"

namespace onnxfold {

struct Skeleton {
  std::shared_ptr<const Source> source;  // the model file
  Buffer bytes;                          // the ModelProto with large raw_data fields emptied
  // Offset in `bytes` of an emptied raw_data payload -> its offset and length in `source`.
  std::unordered_map<size_t, std::pair<uint64_t, uint64_t>> elided;
};

// Payloads of at least `threshold` bytes are left in the file. Malformed framing (a length
// past its message, a bad key, nesting too deep) is a ParseError naming the message.
Skeleton readSkeleton(std::shared_ptr<const Source> model, uint64_t threshold = 16 << 10);

}  // namespace onnxfold
