// FoldRecipe: a fold whose result is computed when its bytes are first needed.
//
// fold-constants turns a node with a large output (a transposed, rescaled or
// cast weight) into an initializer whose bytes are a range of a FoldRecipe: the
// node (a detached copy) and its input tensors. Nothing is computed until a pass
// or the writer reads the value; at most one recipe holds its result at a time,
// and inputs that were only read for it are released again, so writing a model
// whose every weight was rewritten holds one weight and its result, not all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/source.h"
#include "ir/tensor.h"

namespace onnxfold {

class FoldRecipe : public Source {
 public:
  // Output `output` of `node` (evaluated at `opset` on `inputs`), of the given type.
  FoldRecipe(const Node& node, int64_t opset, std::vector<std::optional<Tensor>> inputs,
             size_t output, DataType dtype, std::vector<int64_t> dims);
  ~FoldRecipe() override;

  uint64_t size() const override { return bytes_; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override;
  std::string describe() const override;
  // Equal for two recipes of the same op, attributes and inputs (which compute the same bytes).
  std::optional<uint64_t> identity() const override { return identity_; }

  // The tensor the fold leaves in the graph: this recipe's output as a source range.
  static Tensor deferred(std::shared_ptr<FoldRecipe> recipe);

 private:
  // Computes this recipe and, first, the recipes it reads that are not in memory.
  void compute() const;
  // Computes this recipe alone; the recipes it reads are in memory or read on demand.
  void computeOne() const;
  void drop() const { result_ = Buffer(); }

  std::unique_ptr<Graph> graph_;  // owns the detached copy of the node
  Node* node_ = nullptr;
  int64_t opset_;
  std::vector<std::optional<Tensor>> inputs_;
  size_t output_;
  DataType dtype_;
  std::vector<int64_t> dims_;
  uint64_t bytes_;
  uint64_t identity_;
  mutable Buffer result_;
};

}  // namespace onnxfold
