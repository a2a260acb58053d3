// The registry's since-versions against the generated schema (src/schema, from the ONNX spec):
// an entry applies until the next one of its op, so a schema version the registry does not
// list would silently run the older kernel, whose meaning may have changed (an op version
// exists because something changed). So every version is listed, by the op family's file,
// which says why when one kernel computes several.
#include "kernels/op_registry.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "ir/error.h"
#include "schema/op_schema.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using OpKey = std::pair<std::string, std::string>;  // (domain, op_type)
using test::ModelBuilder;

std::map<OpKey, std::set<int>> registeredVersions() {
  std::map<OpKey, std::set<int>> out;
  for (const OpEntry& e : OpRegistry::instance().entries())
    out[{std::string(e.domain), std::string(e.op_type)}].insert(e.since_version);
  return out;
}

std::string name(const OpKey& k, int v) {
  return (k.first.empty() ? "" : k.first + ".") + k.second + "-" + std::to_string(v);
}

TEST(OpRegistry, EveryEntryIsASchemaVersion) {
  const OpSchemas& schemas = OpSchemas::instance();
  std::string wrong;
  for (const auto& [key, versions] : registeredVersions()) {
    if (!schemas.knowsDomain(key.first)) continue;  // com.microsoft: no generated schema
    for (int v : versions) {
      const OpSchema* s = schemas.find(key.first, key.second, v);
      if (s == nullptr || s->since_version != v) wrong += " " + name(key, v);
    }
  }
  EXPECT_EQ(wrong, "") << "registry entries at versions the ONNX spec does not have";
}

TEST(OpRegistry, EverySchemaVersionOfARegisteredOpIsListed) {
  const std::map<OpKey, std::set<int>> registered = registeredVersions();
  std::string missing;
  for (const OpSchema& s : OpSchemas::instance().all()) {
    auto it = registered.find({s.domain, s.op_type});
    if (it == registered.end() || s.since_version < *it->second.begin()) continue;
    // A deprecated version (Upsample-10, Scatter-11, GroupNormalization-18) is the old op kept
    // for old models: the entry before it computes it, as runtimes do.
    if (s.deprecated) continue;
    if (it->second.count(s.since_version) == 0) missing += " " + name(it->first, s.since_version);
  }
  EXPECT_EQ(missing, "") << "schema versions the registry runs with an older entry";
}

// The no-literal reads: the node's attribute, else the schema's default at the context's opset,
// else a failure naming the op, the attribute and the opset (never a silent 0).
std::string failure(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no failure)";
}

std::vector<Attribute> attrs(Attribute a) {
  std::vector<Attribute> v;
  v.push_back(std::move(a));
  return v;
}

TEST(OpContextDefaults, AbsentAttributesReadTheSchemasDefault) {
  ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {2, 4});
  Value* scale = b.input("scale", DataType::kFloat, {4});
  const Node* ln = b.node("LayerNormalization", {x, scale});
  const OpContext ctx(*ln, 17);
  EXPECT_EQ(ctx.attrFloat("epsilon"), 1e-5f);
  EXPECT_EQ(ctx.attrInt("axis"), -1);
  EXPECT_EQ(ctx.attrInt("stash_type"), 1);

  const Node* resize = b.node("Resize", {x});
  EXPECT_EQ(OpContext(*resize, 17).attrString("mode"), "nearest");
  EXPECT_EQ(OpContext(*resize, 17).attrString("nearest_mode"), "round_prefer_floor");

  // Per version: Softmax's axis is 1 before opset 13, -1 from it.
  const Node* softmax = b.node("Softmax", {x});
  EXPECT_EQ(OpContext(*softmax, 11).attrInt("axis"), 1);
  EXPECT_EQ(OpContext(*softmax, 13).attrInt("axis"), -1);
}

TEST(OpContextDefaults, PresentAttributesWin) {
  ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {2, 4});
  const Node* n = b.node("Gather", {x, x}, 1, attrs(Attribute::makeInt("axis", 1)));
  EXPECT_EQ(OpContext(*n, 13).attrInt("axis"), 1);
  const Node* wrong = b.node("Gather", {x, x}, 1, attrs(Attribute::makeFloat("axis", 1.0f)));
  const std::string msg = failure([&] { OpContext(*wrong, 13).attrInt("axis"); });
  EXPECT_NE(msg.find("attribute 'axis' is of type FLOAT, not INT"), std::string::npos) << msg;
}

TEST(OpContextDefaults, AnAttributeWithoutDefaultFailsClearly) {
  ModelBuilder b(14);
  Value* x = b.input("x", DataType::kFloat, {1, 1, 2});
  // LSTM's hidden_size is optional without a default.
  const Node* lstm = b.node("LSTM", {x, x, x}, 1, {}, "rnn0");
  std::string msg = failure([&] { OpContext(*lstm, 14).attrInt("hidden_size"); });
  EXPECT_NE(msg.find("LSTM 'rnn0': attribute 'hidden_size' is absent and LSTM-14 (opset 14 of "
                     "ai.onnx) gives it no default"),
            std::string::npos)
      << msg;

  // A required one.
  const Node* einsum = b.node("Einsum", {x});
  msg = failure([&] { OpContext(*einsum, 12).attrString("equation"); });
  EXPECT_NE(msg.find("attribute 'equation' is absent and Einsum-12 (opset 12 of ai.onnx) "
                     "requires it"),
            std::string::npos)
      << msg;

  // One the op does not have.
  msg = failure([&] { OpContext(*einsum, 12).attrInt("axis"); });
  EXPECT_NE(msg.find("Einsum-12 (opset 12 of ai.onnx) has no such attribute"), std::string::npos)
      << msg;

  // A contrib op has no schema: its kernels keep their literals.
  b.importDomain("com.microsoft", 1);
  Node* contrib = b.node("SkipLayerNormalization", {x, x, x});
  contrib->domain = "com.microsoft";
  msg = failure([&] { OpContext(*contrib, 1).attrFloat("epsilon"); });
  EXPECT_NE(msg.find("SkipLayerNormalization: attribute 'epsilon' is absent and the op has no "
                     "schema at opset 1 of com.microsoft"),
            std::string::npos)
      << msg;

  // Read with another type than the schema's.
  const Node* gather = b.node("Gather", {x, x});
  msg = failure([&] { OpContext(*gather, 13).attrFloat("axis"); });
  EXPECT_NE(
      msg.find("its default in Gather-13 (opset 13 of ai.onnx) is of type INT, read as FLOAT"),
      std::string::npos)
      << msg;
}

}  // namespace
}  // namespace onnxfold
