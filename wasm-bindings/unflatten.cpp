// Embind surface for the unflatten features, on the same boundary as optimize
// (host.h): the model as an adopted heap block, external data and outputs
// through the host object.
//   moduleTree(ptr, len, host) -> JSON string of the module tree
//   splitConstants(ptr, len, optionsJson, host) -> SplitReport JSON; outputs "prep", "main" Every
//   export catches
// C++ exceptions and throws a JS Error outside the catch block, so the module
// stays usable after a failed call.
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

onnxfold::Buffer adoptBlock(uintptr_t ptr, size_t len) {
  auto* p = reinterpret_cast<uint8_t*>(ptr);
  return onnxfold::Buffer(p, len, std::shared_ptr<const void>(p, [](const void* q) {
                            std::free(const_cast<void*>(q));
                          }));
}

onnxfold::Options splitOptions(const std::string& text) {
  onnxfold::Options o;
  const nlohmann::json j = parseOptions(text);
  if (j.is_null()) return o;
  for (const auto& [key, value] : j.items()) {
    if (key != "foldDequantizeWeights") {
      throw onnxfold::Error(
          "option '" + key +
          "' does not apply to splitConstants (its only option is foldDequantizeWeights)");
    }
    if (!value.is_boolean())
      throw onnxfold::Error("option foldDequantizeWeights: expected a boolean");
    o.fold_dequantize_weights = value.get<bool>();
  }
  return o;
}

// moduleTree(ptr, len, host) -> JSON string. Takes ownership of the block.
std::string moduleTree(uintptr_t ptr, size_t len, val host) {
  std::string message;
  {
    const onnxfold::Buffer in = adoptBlock(ptr, len);
    try {
      return onnxfold::moduleTreeJson(in, hostIO(host));
    } catch (const std::bad_alloc&) {
      message = "out of memory: the WebAssembly heap is limited to 4 GB and this model needs more";
    } catch (const std::exception& e) {
      message = e.what();
    }
  }
  throwJsError(message);
}

// splitConstants(ptr, len, optionsJson, host) -> SplitReport JSON; the two models go out
// through host.output as locations "prep" and "main". Takes ownership of the block.
std::string splitConstants(uintptr_t ptr, size_t len, std::string options_json, val host) {
  std::string message;
  {
    const onnxfold::Buffer in = adoptBlock(ptr, len);
    try {
      const onnxfold::Options options = splitOptions(options_json);
      HostSink prep(host, "prep"), main(host, "main");
      const onnxfold::SplitReport report =
          onnxfold::splitConstants(in, prep, main, options, hostIO(host));
      prep.flush();
      main.flush();
      return report.toJson(-1);
    } catch (const std::bad_alloc&) {
      message = "out of memory: the WebAssembly heap is limited to 4 GB and this model needs more";
    } catch (const std::exception& e) {
      message = e.what();
    }
  }
  throwJsError(message);
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnxfold_unflatten) {
  emscripten::function("moduleTree", &moduleTree);
  emscripten::function("splitConstants", &splitConstants);
}
