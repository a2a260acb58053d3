// A readable text form of the IR, for tests (IR in, expected text out),
// debugging and `--print-ir`. Tensors print as dtype, dims and a content hash
// (or their values when small), so two printouts are equal exactly when the
// models are equal in everything the writer emits.
#pragma once

#include <ostream>
#include <string>

#include "ir/graph.h"

namespace onnxfold {

struct PrintOptions {
  size_t max_inline_elements = 8;  // larger tensors print as a hash
  bool metadata = true;            // doc strings, metadata_props, unknown-field bytes
};

void print(std::ostream& os, const Model& model, const PrintOptions& options = {});
void print(std::ostream& os, const Graph& graph, const PrintOptions& options = {});
std::string toString(const Model& model, const PrintOptions& options = {});
std::string toString(const Graph& graph, const PrintOptions& options = {});
std::string toString(const Type& type);
std::string toString(const Tensor& tensor, size_t max_inline_elements = 8);

}  // namespace onnxfold
