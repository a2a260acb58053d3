// FoldRecipe: a fold whose result is computed when its bytes are first needed.
//
// fold-constants turns a node with a large output (a transposed, rescaled or
// cast weight) into an initializer whose bytes are a range of a FoldRecipe: the
// node (a detached copy) and its input tensors. The freezing patterns do the same
// with the weights they rewrite (Conv + BatchNormalization scales every output
// channel of W). Nothing is computed until a pass or the writer reads the value;
// at most one recipe holds its result at a time, and inputs that were only read for
// it are released again, so writing a model whose every weight was rewritten holds
// one weight and its result, not all. Each recipe is also one bounded call of its
// loop, which lets the wasm engine tier that loop up between weights.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/hash.h"
#include "ir/source.h"
#include "ir/tensor.h"

namespace onnxfold {

class FoldRecipe : public Source {
 public:
  // What a recipe computes from its inputs. It must not fail on inputs it was planned with
  // (a recipe computed while writing would fail the run).
  class Step {
   public:
    virtual ~Step() = default;
    virtual Tensor compute(const std::vector<const Tensor*>& inputs) const = 0;
    // Hashes what is computed (not the inputs): equal for steps that compute the same bytes.
    virtual void hash(Fnv1a& h) const = 0;
    virtual std::string describe() const = 0;
  };

  // Results at least this large are deferred (smaller ones cost less than a recipe).
  static constexpr uint64_t kDeferBytes = 64 << 10;

  // Output `output` of `node` (evaluated at `opset` on `inputs`), of the given type.
  FoldRecipe(const Node& node, int64_t opset, std::vector<std::optional<Tensor>> inputs,
             size_t output, DataType dtype, std::vector<int64_t> dims);
  // `step` applied to `inputs`, giving a tensor of the given type.
  FoldRecipe(std::unique_ptr<Step> step, std::vector<std::optional<Tensor>> inputs, DataType dtype,
             std::vector<int64_t> dims);
  ~FoldRecipe() override;

  uint64_t size() const override { return bytes_; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override;
  std::string describe() const override;
  // Equal for two recipes of the same step and inputs (which compute the same bytes).
  std::optional<uint64_t> identity() const override { return identity_; }

  // The tensor the fold leaves in the graph: this recipe's output as a source range.
  static Tensor deferred(std::shared_ptr<FoldRecipe> recipe);
  // `step` applied to `input`: computed now when the result is under kDeferBytes, else
  // deferred (the patterns' weight rewrites).
  static Tensor computeOrDefer(std::unique_ptr<Step> step, const Tensor& input, DataType dtype,
                               std::vector<int64_t> dims);
  // Hashes a tensor by where its bytes come from (source and offset) or, when they are in
  // memory only, by its content: for Step::hash of tensors a step holds.
  static void hashTensor(Fnv1a& h, const Tensor& t);

 private:
  // Computes this recipe and, first, the recipes it reads that are not in memory.
  void compute() const;
  // Computes this recipe alone; the recipes it reads are in memory or read on demand.
  void computeOne() const;
  void drop() const { result_ = Buffer(); }
  void init();  // size and identity

  std::unique_ptr<Step> step_;
  std::vector<std::optional<Tensor>> inputs_;
  DataType dtype_;
  std::vector<int64_t> dims_;
  uint64_t bytes_;
  uint64_t identity_;
  mutable Buffer result_;
};

}  // namespace onnxfold
