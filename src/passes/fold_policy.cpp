#include "passes/fold_policy.h"

#include <algorithm>

#include "ir/dtype.h"
#include "ir/tensor.h"

namespace onnxfold {

std::string foldGuard(const Node& n, const OpEntry* entry, const KnownValue& known,
                      const PassOptions& options) {
  if (entry != nullptr && (entry->flags & kOpNondeterministic)) return "nondeterministic";
  if (n.isOp("Dropout")) {
    // opset >= 12 takes training_mode as an input: training with a ratio above 0 is random.
    const Tensor* mode = known(n.input(2));
    const Tensor* ratio = known(n.input(1));
    const bool training = mode != nullptr && mode->numElements() == 1 && mode->at<uint8_t>(0) != 0;
    const bool zero_ratio = ratio != nullptr && ratio->numElements() == 1 &&
                            ((ratio->dtype() == DataType::kFloat && ratio->at<float>(0) == 0.0f) ||
                             (ratio->dtype() == DataType::kDouble && ratio->at<double>(0) == 0.0));
    if (training && !zero_ratio) return "nondeterministic (training-mode Dropout)";
    if (n.input(2) != nullptr && mode == nullptr) {
      return "nondeterministic unless training_mode is known (Dropout)";
    }
  }
  if (n.isOp("DequantizeLinear") && !options.fold_dequantize_weights) {
    const Value* x = n.input(0);
    if (x != nullptr && x->isConstant() && isInteger(x->initializer()->dtype())) {
      return "DequantizeLinear of an integer weight is kept for quantization";
    }
  }
  return "";
}

bool isConstructor(const Node& n) {
  for (const char* op : {"ConstantOfShape", "Expand", "Tile", "Range", "EyeLike"}) {
    if (n.isOp(op)) return true;
  }
  return false;
}

std::string overBudget(const Node& n, int64_t growth, const PassOptions& options) {
  const bool constructor = isConstructor(n);
  const int64_t budget = constructor ? options.constructor_budget : options.size_budget;
  if (growth <= budget) return "";
  return std::string("over the ") + (constructor ? "constructor " : "") +
         "size budget: folding would add " + std::to_string(growth) + " bytes (budget " +
         std::to_string(budget) + ")";
}

int64_t modelTensorBytes(const Model& model) {
  int64_t bytes = 0;
  for (const Value* v : model.graph->initializers())
    bytes += static_cast<int64_t>(v->initializer()->storedBytes());
  return bytes;
}

GrowthBudget::GrowthBudget(const Model& model, const PassOptions& options)
    : limit_(options.max_model_bytes) {
  if (limit_ >= 0) start_ = bytes_ = modelTensorBytes(model);
}

bool GrowthBudget::take(int64_t growth, const std::vector<Tensor>& results) {
  if (limit_ < 0) return false;
  uint64_t hash = 0;
  for (const Tensor& t : results)
    hash = hash * 1000003u ^ (t.isPlain() ? t.sampleHash() : 0);
  for (const auto& [h, before] : taken_) {
    if (h != hash || before.size() != results.size()) continue;
    bool same = true;
    for (size_t i = 0; i < results.size() && same; ++i)
      same = results[i].isPlain() && before[i].isPlain() && results[i].sameContent(before[i]);
    if (same) return true;  // merged with the earlier copy: adds nothing
  }
  if (bytes_ + growth > limit_) return false;
  bytes_ += growth;
  taken_.emplace_back(hash, results);
  return true;
}

std::string GrowthBudget::left() const {
  if (limit_ < 0) return "";
  return "; the model's growth budget has " +
         std::to_string(std::max<int64_t>(0, limit_ - bytes_)) + " bytes left";
}

std::vector<std::optional<Type>> inferredOutputTypes(const Node& n, int64_t opset,
                                                     const std::vector<const Tensor*>& inputs) {
  constexpr int64_t kMaxValueElements = 1 << 16;
  std::vector<std::optional<Type>> types(n.numOutputs());
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    if (n.output(i) != nullptr) types[i] = inferOutputType(n, opset, inputs, i, kMaxValueElements);
  }
  return types;
}

std::optional<int64_t> inferredOutputBytes(const Node& n,
                                           const std::vector<std::optional<Type>>& types) {
  int64_t total = 0;
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    if (n.output(i) == nullptr) continue;
    const std::optional<Type>& t = types[i];
    if (!t || t->elem_type == DataType::kString) return std::nullopt;
    std::vector<int64_t> dims;
    for (const Dim& d : t->shape->dims)
      dims.push_back(d.value);
    const int64_t count = checkedElementCount(dims);
    if (count < 0) return std::nullopt;
    if (static_cast<uint64_t>(count) > (UINT64_MAX - 7) / 64) return INT64_MAX / 2;  // huge
    const uint64_t bytes = rawByteSize64(t->elem_type, count);
    if (bytes > static_cast<uint64_t>(INT64_MAX / 2)) return INT64_MAX / 2;
    total += static_cast<int64_t>(bytes);
    if (total > INT64_MAX / 2) return INT64_MAX / 2;
  }
  return total;
}

}  // namespace onnxfold
