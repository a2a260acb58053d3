// ModelProto bytes -> IR.
//
// Zero-copy: tensor bytes (raw_data, external data) become Buffers pointing into
// the input (or the mapped external file); the input must therefore stay alive,
// which the Buffer's owner guarantees. Nodes are put in topological order
// (ONNX requires it, some exporters do not honour it); a cycle is an error.
// Every problem is a ParseError naming the message, field and node.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ir/buffer.h"
#include "ir/graph.h"
#include "onnx/skeleton.h"

namespace onnxfold {

struct ReadOptions {
  // The external-data file at `location` as written in the model (already checked
  // to be a plain relative path): a Source its tensors become ranges of, read only
  // when needed. Unset: external tensors stay unloaded and are written back as
  // references.
  std::function<std::shared_ptr<const Source>(const std::string& location)> open_external;
  // When the bytes are a skeleton (onnx/skeleton.h): the raw_data payloads it left in the
  // model file, which become ranges of that file.
  const Skeleton* skeleton = nullptr;
};

std::unique_ptr<Model> readModel(const Buffer& bytes, const ReadOptions& options = {});

// A standalone TensorProto (the ONNX test data files input_K.pb / output_K.pb).
Tensor readTensorProto(const Buffer& bytes);

// Throws a ParseError unless `location` is a relative path inside the model's
// folder: not absolute, no "..", no backslash or drive letter, not empty.
void checkExternalLocation(const std::string& location, const std::string& where);

}  // namespace onnxfold
