// graphJson's shape on a tiny model: what the web page's graph view relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "api/onnxfold.h"
#include "onnx/writer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

std::string tinyModel() {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 4});
  Value* w = b.initializer("w", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Value* y = b.op("MatMul", {x, w}, {}, "/enc/linear/MatMul");
  std::vector<Attribute> axis;
  axis.push_back(Attribute::makeInt("axis", -1));
  Value* z = b.op("Softmax", {y}, std::move(axis), "/enc/Softmax");
  Value* r = b.op("Reshape", {z, b.initializer("shape", {1}, {2})}, {});
  b.output(r);
  return writeModelToString(b.model());
}

TEST(GraphJson, NodesValuesAndModules) {
  const auto j = nlohmann::json::parse(graphJson(test::bufferOf(tinyModel())));
  EXPECT_EQ(j["level"], "nodes");
  EXPECT_EQ(j["nodes_total"], 3);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["type"], "float32[1,4]");
  ASSERT_EQ(j["nodes"].size(), 3u);
  const auto& mm = j["nodes"][0];
  EXPECT_EQ(mm["id"], "/enc/linear/MatMul");
  EXPECT_EQ(mm["op"], "MatMul");
  EXPECT_EQ(mm["inputs"], nlohmann::json::array({"x", "w"}));
  EXPECT_EQ(mm["module"], "/enc/linear");
  EXPECT_EQ(j["nodes"][1]["attributes"]["axis"], "-1");
  // An unnamed node is keyed by its op and first output.
  EXPECT_EQ(j["nodes"][2]["id"].get<std::string>().rfind("Reshape:", 0), 0u);
  EXPECT_EQ(j["values"]["w"], "float32[4,2]");
  EXPECT_NE(std::find(j["initializers"].begin(), j["initializers"].end(), "w"),
            j["initializers"].end());
  bool found = false;
  for (const auto& m : j["modules"])
    found = found || m["path"] == "/enc/linear";
  EXPECT_TRUE(found);
}

TEST(GraphJson, ModulesOnlyAboveTheLimit) {
  GraphJsonOptions o;
  o.node_limit = 2;
  const auto j = nlohmann::json::parse(graphJson(test::bufferOf(tinyModel()), o));
  EXPECT_EQ(j["level"], "modules");
  EXPECT_FALSE(j.contains("nodes"));
  EXPECT_EQ(j["modules"][0]["path"], "");
  EXPECT_EQ(j["modules"][0]["nodes"], 3);
}

}  // namespace
}  // namespace onnxfold
