// ONNX backend node tests (shared/onnx-tests/node) as the conformance suite of
// the evaluator: every graph input becomes a known constant, every node is
// evaluated with the op registry, and the graph outputs must equal the
// expected output_K.pb (exact for integers, bool and strings; floats within
// rtol 1e-3, atol 1e-7 as ONNX's backend runner; NaN equals NaN).
//
// tests/conformance/node_expected_failures.txt names each test expected to
// fail, with the reason. The test fails when an unlisted test fails and when a
// listed one passes, so the list only shrinks.
//
// Environment:
//   ONNXFOLD_CONFORMANCE_FILTER=substr   run only tests whose name contains substr
//   ONNXFOLD_CONFORMANCE_WRITE=path      write the current failures in list format
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "api/file_io.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "onnx/reader.h"
#include "test_util.h"

namespace onnxfold {
namespace {

namespace fs = std::filesystem;

std::string listPath() {
  return std::string(ONNXFOLD_SOURCE_DIR) + "/tests/conformance/node_expected_failures.txt";
}

std::map<std::string, std::string> readExpectedFailures() {
  std::map<std::string, std::string> out;
  std::ifstream in(listPath());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sep = line.find(' ');
    const std::string name = line.substr(0, sep);
    std::string reason = sep == std::string::npos ? "" : line.substr(sep + 1);
    const size_t hash = reason.find("# ");
    if (hash != std::string::npos) reason = reason.substr(hash + 2);
    out[name] = reason;
  }
  return out;
}

// Compares one output; returns "" when equal, else what differs.
std::string compareTensors(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) {
    return "dtype " + std::string(dataTypeName(got.dtype())) + ", expected " +
           std::string(dataTypeName(want.dtype()));
  }
  if (got.dims() != want.dims()) {
    auto str = [](const std::vector<int64_t>& d) {
      std::string s = "[";
      for (size_t i = 0; i < d.size(); ++i)
        s += (i ? "," : "") + std::to_string(d[i]);
      return s + "]";
    };
    return "shape " + str(got.dims()) + ", expected " + str(want.dims());
  }
  if (got.dtype() == DataType::kString)
    return got.strings() == want.strings() ? "" : "strings differ";
  const auto n = static_cast<size_t>(got.numElements());
  std::string problem;
  const bool numeric = kernels::dispatchNumeric(got.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < n && problem.empty(); ++i) {
      const T a = got.at<T>(i);
      const T b = want.at<T>(i);
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, kernels::Half> ||
                    std::is_same_v<T, kernels::BFloat16>) {
        const double x = kernels::toDouble(a), y = kernels::toDouble(b);
        if (std::isnan(x) && std::isnan(y)) continue;
        if (std::isinf(x) || std::isinf(y) ? x == y
                                           : std::fabs(x - y) <= 1e-7 + 1e-3 * std::fabs(y)) {
          continue;
        }
        std::ostringstream os;
        os << "element " << i << " is " << x << ", expected " << y;
        problem = os.str();
      } else {
        if (std::memcmp(&a, &b, sizeof(T)) == 0) continue;
        std::ostringstream os;
        os << "element " << i << " is " << kernels::toDouble(a) << ", expected "
           << kernels::toDouble(b);
        problem = os.str();
      }
    }
  });
  if (!numeric) {
    // Other types (float8, 4-bit, complex): compare bytes.
    if (got.byteSize() != want.byteSize() ||
        std::memcmp(got.bytes(), want.bytes(), got.byteSize()) != 0) {
      return "bytes differ";
    }
  }
  return problem;
}

// Runs one test folder; returns "" on success, else the first problem.
std::string runNodeTest(const fs::path& dir) {
  std::unique_ptr<Model> model;
  try {
    model = readModel(readFileBuffer((dir / "model.onnx").string()));
  } catch (const std::exception& e) {
    return std::string("cannot read model: ") + e.what();
  }
  Graph& g = *model->graph;
  std::vector<Value*> inputs;
  for (Value* v : g.inputs()) {
    if (!v->isInitializer()) inputs.push_back(v);
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test data";
  for (const fs::path& set : sets) {
    std::map<const Value*, Tensor> env;
    for (const Value* v : g.initializers())
      env[v] = *v->initializer();
    try {
      for (size_t k = 0; k < inputs.size(); ++k) {
        const fs::path f = set / ("input_" + std::to_string(k) + ".pb");
        if (!fs::exists(f)) continue;  // an omitted optional input
        env[inputs[k]] = readTensorProto(readFileBuffer(f.string()));
      }
    } catch (const std::exception& e) {
      return std::string("input data is not a plain tensor (sequence/optional): ") + e.what();
    }
    for (const Node* n : g.nodes()) {
      if (n->hasSubgraphs()) return "control flow op " + n->op_type + " is not evaluated yet";
      std::vector<const Tensor*> ins;
      for (const Value* v : n->inputs()) {
        if (v == nullptr) {
          ins.push_back(nullptr);
          continue;
        }
        auto it = env.find(v);
        if (it == env.end()) return "input '" + v->name() + "' of " + n->op_type + " is unknown";
        ins.push_back(&it->second);
      }
      std::vector<Tensor> outs;
      try {
        const int64_t opset = model->opsetVersion(n->domain);
        outs = evaluateNode(*n, opset < 0 ? 1 : opset, ins);
      } catch (const std::exception& e) {
        return e.what();
      }
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        if (n->output(i) != nullptr) env[n->output(i)] = std::move(outs[i]);
      }
    }
    for (size_t k = 0; k < g.outputs().size(); ++k) {
      const fs::path f = set / ("output_" + std::to_string(k) + ".pb");
      Tensor want;
      try {
        want = readTensorProto(readFileBuffer(f.string()));
      } catch (const std::exception& e) {
        return std::string("expected output is not a plain tensor (sequence/optional)");
      }
      auto it = env.find(g.outputs()[k]);
      if (it == env.end()) return "output " + std::to_string(k) + " was not computed";
      const std::string diff = compareTensors(it->second, want);
      if (!diff.empty()) {
        return "output " + std::to_string(k) + " '" + g.outputs()[k]->name() + "': " + diff;
      }
    }
  }
  return "";
}

TEST(NodeConformance, MatchesExpectedFailureList) {
  ONNXFOLD_REQUIRE_SHARED();
  const std::string root = test::sharedPath("onnx-tests/node");
  if (root.empty()) GTEST_SKIP() << "shared/onnx-tests/node is missing";
  const char* filter = std::getenv("ONNXFOLD_CONFORMANCE_FILTER");
  const std::map<std::string, std::string> expected = readExpectedFailures();

  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());

  size_t passed = 0, failed = 0, unexpected = 0, fixed = 0;
  std::ostringstream failures_list;
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    if (filter != nullptr && name.find(filter) == std::string::npos) continue;
    const std::string problem = runNodeTest(dir);
    const bool listed = expected.count(name) > 0;
    if (problem.empty()) {
      ++passed;
      if (listed) {
        ++fixed;
        ADD_FAILURE() << name << " passes now: remove it from " << listPath();
      }
    } else {
      ++failed;
      std::string oneline = problem.substr(0, 200);
      std::replace(oneline.begin(), oneline.end(), '\n', ' ');
      failures_list << name << " # " << oneline << "\n";
      if (!listed) {
        ++unexpected;
        ADD_FAILURE() << name << " fails: " << problem;
      }
    }
  }
  std::printf(
      "node conformance: %zu passed, %zu failed (%zu not in the expected list, %zu listed "
      "but passing), %zu tests\n",
      passed, failed, unexpected, fixed, passed + failed);
  if (const char* out = std::getenv("ONNXFOLD_CONFORMANCE_WRITE")) {
    std::ofstream f(out);
    f << "# ONNX node tests expected to fail, with the reason (regenerate with\n"
      << "# ONNXFOLD_CONFORMANCE_WRITE=<this file> onnxfold_tests "
         "--gtest_filter=NodeConformance.*)\n"
      << failures_list.str();
  }
}

}  // namespace
}  // namespace onnxfold
