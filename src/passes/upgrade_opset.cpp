// Raising a model's default-domain opset (--target-opset), so that fusions into newer ops
// (LayerNormalization 17, Gelu 20, RMSNormalization 23) may apply.
//
// Only where the conversion is simple: every default-domain node's op must compute the same
// at the target version as at the model's, given the same inputs and attributes. Each schema
// version between the two must be on the list below (a version that only adds types, or
// attributes/inputs whose defaults keep the old behaviour), or be the Reduce* version 18,
// whose `axes` attribute becomes a constant input. Anything else (a changed default, a
// renamed mode, an op the target removed) is refused with an error naming the op and the
// version. Local functions that import the default domain are upgraded the same way.
#include "passes/upgrade_opset.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ir/error.h"
#include "passes/rewrite.h"
#include "passes/validate.h"
#include "schema/op_schema.h"

namespace onnxfold {

namespace {

// Schema versions (op, since_version) that compute the same as the version before them for
// everything the earlier one accepts: new element types, or new attributes/inputs whose
// defaults are the old behaviour (ONNX's Changelog.md).
struct Compatible {
  const char* ops;  // space-separated
  int version;
};
const Compatible kCompatible[] = {
    // 14: uint8/int8/int16 types; Reshape allowzero = 0; RNN layout = 0; BN training_mode = 0.
    {" Add Sub Mul Div Relu Identity Reshape CumSum BatchNormalization GRU LSTM RNN ", 14},
    // 15: bfloat16; Shape start/end default to the whole shape; BN's type split.
    {" Pow Shape BatchNormalization ", 15},
    // 16: bfloat16 / optional types; Scatter* reduction = none.
    {" GreaterOrEqual LessOrEqual Identity If Loop Scan LeakyRelu PRelu ScatterElements "
     "ScatterND Where ",
     16},
    // 18: Split num_outputs, Pad axes, Resize antialias/axes/policy, Scatter* max/min.
    {" Split Pad Resize ScatterElements ScatterND OptionalGetElement OptionalHasElement ", 18},
    // 19: float8 types, Cast saturate, Pad wrap, Resize half_pixel_symmetric, pool dilations.
    {" Cast CastLike Constant DequantizeLinear QuantizeLinear Equal Identity If Loop Scan Pad "
     "Reshape Resize Shape Size AveragePool ",
     19},
    // 20: types (ConstantOfShape, IsInf, IsNaN, ReduceMax/Min of bool).
    {" ConstantOfShape IsInf IsNaN ReduceMax ReduceMin ", 20},
    // 21: int4/uint4 types; blocked quantization with block_size = 0 by default.
    {" Cast CastLike Constant ConstantOfShape DequantizeLinear Flatten Identity If Loop Pad "
     "QLinearMatMul QuantizeLinear Reshape Scan Shape Size Squeeze Transpose Unsqueeze ",
     21},
    // 22: bfloat16.
    {" Acos Acosh Asin Asinh Atan Atanh AveragePool Bernoulli Conv ConvTranspose Cos Cosh Det "
     "Dropout Elu EyeLike GlobalAveragePool GlobalLpPool GlobalMaxPool GRU HardSigmoid HardSwish "
     "InstanceNormalization LpNormalization LpPool LSTM MaxPool MaxRoiPool MaxUnpool Mish "
     "Multinomial RandomNormal RandomNormalLike RandomUniform RandomUniformLike RNN Round Selu "
     "Sin Sinh Softplus Softsign Tan ThresholdedRelu ",
     22},
    // 23: float4 types.
    {" Cast CastLike Constant ConstantOfShape DequantizeLinear Flatten Identity If Loop Pad "
     "QuantizeLinear Reshape Scan Shape Size Squeeze Transpose Unsqueeze ",
     23},
};

bool compatible(const std::string& op, int version) {
  const std::string key = " " + op + " ";
  for (const Compatible& c : kCompatible) {
    if (c.version == version && std::string(c.ops).find(key) != std::string::npos) return true;
  }
  return false;
}

// The Reduce ops whose axes became an input at 18 (ReduceSum did at 13).
bool axesBecomeInput(const std::string& op, int version) {
  static const char kOps[] =
      " ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd "
      "ReduceSumSquare ";
  return version == 18 && std::string(kOps).find(" " + op + " ") != std::string::npos;
}

// Throws unless `n` can move from opset `from` to `to`; says whether its axes must move.
bool checkNode(const Node& n, int64_t from, int64_t to) {
  const OpSchemas& schemas = OpSchemas::instance();
  const OpSchema* old_s = schemas.find("", n.op_type, from);
  const OpSchema* new_s = schemas.find("", n.op_type, to);
  const std::string who = "node " + n.displayName() + " (" + n.op_type + ")";
  if (old_s == nullptr) throw Error(who + ": not an op of opset " + std::to_string(from));
  if (new_s == nullptr || new_s->deprecated)
    throw Error("target opset " + std::to_string(to) + ": " + who + " is not in that opset");
  bool move_axes = false;
  for (const OpSchema* s = new_s; s != nullptr && s->since_version > old_s->since_version;
       s = schemas.find("", n.op_type, s->since_version - 1)) {
    if (axesBecomeInput(n.op_type, s->since_version)) {
      move_axes = true;
      continue;
    }
    if (!compatible(n.op_type, s->since_version))
      throw Error("target opset " + std::to_string(to) + ": " + who + " changes at version " +
                  std::to_string(s->since_version) + " in a way onnxfold does not convert");
  }
  return move_axes;
}

void upgradeGraph(Model& model, Graph& graph, const Function* function, int64_t from, int64_t to) {
  // Check every node first, then change: a refusal leaves the graph as it was.
  std::vector<Node*> move_axes;
  for (Node* n : graph.nodes()) {
    if (n->isDefaultDomain() && checkNode(*n, from, to)) move_axes.push_back(n);
    n->forEachSubgraph([&](Graph& g) {
      if (n->isDefaultDomain()) upgradeGraph(model, g, function, from, to);
    });
  }
  Rewriter rw(model, graph, false, function);
  for (Node* n : move_axes) {
    const Attribute* axes = n->attr("axes");
    if (axes == nullptr) continue;  // all axes: the same without the input
    Tensor t(DataType::kInt64, {static_cast<int64_t>(axes->ints.size())});
    for (size_t i = 0; i < axes->ints.size(); ++i)
      std::memcpy(t.mutableBytes() + i * 8, &axes->ints[i], 8);
    Value* v = rw.constant(std::move(t), n->displayName() + "_axes");
    rw.removeAttr(n, "axes");
    if (n->numInputs() < 2)
      rw.addInput(n, v);
    else
      rw.setInput(n, 1, v);
  }
}

// The IR version ONNX releases stamp on models of a default-domain opset (onnx.helper's
// VERSION_TABLE: 1.12 wrote IR 8 with opset 17, ... 1.20 IR 13 with opset 25).
int64_t irVersionFor(int64_t opset) {
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  if (opset <= 25) return opset - 12;
  return kNewestIrVersion;
}

}  // namespace

bool upgradeOpset(std::unique_ptr<Model>& model, int64_t target) {
  const int64_t from = model->opsetVersion("");
  if (from < 0 || target <= from) return false;
  const int newest = OpSchemas::instance().newestOpset("");
  if (target > newest)
    throw Error("target opset " + std::to_string(target) + ": the newest default-domain opset " +
                "onnxfold knows is " + std::to_string(newest));
  // Check everything before changing anything (the checks throw).
  if (!model->training_info.empty())
    throw Error("target opset " + std::to_string(target) +
                ": the model has training graphs, which onnxfold does not upgrade");
  std::unique_ptr<Model> trial = model->clone();
  upgradeGraph(*trial, *trial->graph, nullptr, from, target);
  for (Function& f : trial->functions) {
    for (OpsetId& o : f.opset_import) {
      if (isDefaultDomain(o.domain) && o.version < target) {
        upgradeGraph(*trial, *f.body, &f, o.version, target);
        o.version = target;
      }
    }
  }
  for (OpsetId& o : trial->opset_import) {
    if (isDefaultDomain(o.domain)) o.version = target;
  }
  // A reader may refuse a newer opset under an older IR version.
  trial->ir_version = std::max(trial->ir_version, irVersionFor(target));
  model = std::move(trial);
  return true;
}

}  // namespace onnxfold
