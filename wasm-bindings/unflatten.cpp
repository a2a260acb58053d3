// Embind surface for the unflatten features, on the same boundary as optimize
// (host.h): the model as an adopted heap block, external data and outputs
// through the host object.
//   moduleTree(modelSize, host) -> JSON string of the module tree
//   splitConstants(modelSize, optionsJson, host) -> SplitReport JSON; outputs "prep", "main"
// Every export catches C++ exceptions and throws a JS Error outside the catch block, so the
// module stays usable after a failed call.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "api/onnxfold.h"
#include "host.h"
#include "interop.h"

using emscripten::val;
using namespace onnxfold_wasm;

namespace {

// The options of the one table (api/options.cpp) that splitConstants takes.
onnxfold::Options splitOptions(const std::string& text) {
  onnxfold::Options o;
  const nlohmann::json j = parseOptions(text);
  if (j.is_null()) return o;
  std::string taken;
  for (const onnxfold::OptionSpec& s : onnxfold::optionSpecs()) {
    if (s.split_constants) taken += (taken.empty() ? "" : ", ") + s.name;
  }
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const onnxfold::OptionSpec& s : onnxfold::optionSpecs())
      ok = ok || (s.name == key && s.split_constants);
    if (!ok) {
      throw onnxfold::Error("option '" + key +
                            "' does not apply to splitConstants (its options: " + taken + ")");
    }
  }
  onnxfold::applyOptionsJson(text, o);
  return o;
}

// moduleTree(modelSize, host) -> JSON string.
std::string moduleTree(double model_size, val host) {
  return guarded(
      [&] { return onnxfold::moduleTreeJson(hostModel(host, model_size), hostIO(host)); });
}

// graph(modelSize, optionsJson, host) -> the main graph for display (api graphJson); options
// as graphOptionSchema() gives them (nodeLimit, modulesOnly).
std::string graph(double model_size, std::string options_json, val host) {
  return guarded([&] {
    onnxfold::GraphJsonOptions o;
    onnxfold::applyGraphOptionsJson(options_json, o);
    return onnxfold::graphJson(hostModel(host, model_size), o, hostIO(host));
  });
}

// graphOptionSchema() -> JSON [{name, flag, type, help, default}]: graph()'s options.
std::string graphOptionSchema() {
  return onnxfold::graphOptionSpecsJson();
}

// splitConstants(modelSize, optionsJson, host) -> SplitReport JSON; the two models go out
// through host.output as locations "prep" and "main".
std::string splitConstants(double model_size, std::string options_json, val host) {
  return guarded([&] {
    const onnxfold::ModelInput in = hostModel(host, model_size);
    const onnxfold::Options options = splitOptions(options_json);
    HostSink prep(host, "prep"), main(host, "main");
    const onnxfold::SplitReport report =
        onnxfold::splitConstants(in, prep, main, options, hostIO(host));
    prep.flush();
    main.flush();
    return report.toJson(-1);
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnxfold_unflatten) {
  emscripten::function("moduleTree", &moduleTree);
  emscripten::function("splitConstants", &splitConstants);
  emscripten::function("graph", &graph);
  emscripten::function("graphOptionSchema", &graphOptionSchema);
}
