// Embind surface for the unflatten features (see notes/js-api.md):
//   moduleTree(bytes: Uint8Array) -> JSON string of the module tree
//   splitConstants(bytes: Uint8Array, optionsJson: string)
//     -> { prep: Uint8Array, main: Uint8Array, report: string (SplitReport JSON) }
// Bytes are copied into the heap once (a view made after the allocation, since
// heap growth detaches views) and results copied out once. Every export catches
// C++ exceptions and throws a JS Error outside the catch block, so the module
// stays usable after a failed call.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "api/onnxfold.h"
#include "interop.h"

using emscripten::val;
using namespace onnxfold_wasm;

namespace {

onnxfold::Buffer bytesFrom(const val& bytes) {
  if (!bytes.instanceof (val::global("Uint8Array"))) {
    throw onnxfold::Error("bytes: expected a Uint8Array");
  }
  const size_t n = bytes["length"].as<size_t>();
  uint8_t* data = nullptr;
  onnxfold::Buffer b = onnxfold::Buffer::allocate(n, &data);
  if (n > 0) val(emscripten::typed_memory_view(n, data)).call<void>("set", bytes);
  return b;
}

val toUint8Array(const std::string& s) {
  return val::global("Uint8Array")
      .new_(emscripten::typed_memory_view(s.size(), reinterpret_cast<const uint8_t*>(s.data())));
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

std::string moduleTree(val bytes) {
  std::string message;
  try {
    return onnxfold::moduleTreeJson(bytesFrom(bytes));
  } catch (const std::bad_alloc&) {
    message = "out of memory: the WebAssembly heap is limited to 4 GB and this model needs more";
  } catch (const std::exception& e) {
    message = e.what();
  }
  throwJsError(message);
}

val splitConstants(val bytes, std::string options_json) {
  std::string message;
  try {
    const onnxfold::Options options = splitOptions(options_json);
    onnxfold::StringSink prep, main;
    onnxfold::SplitReport report;
    {
      const onnxfold::Buffer in = bytesFrom(bytes);
      report = onnxfold::splitConstants(in, prep, main, options);
    }
    val result = val::object();
    result.set("prep", toUint8Array(prep.out));
    result.set("main", toUint8Array(main.out));
    result.set("report", val(report.toJson(-1)));
    return result;
  } catch (const std::bad_alloc&) {
    message = "out of memory: the WebAssembly heap is limited to 4 GB and this model needs more";
  } catch (const std::exception& e) {
    message = e.what();
  }
  throwJsError(message);
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnxfold_unflatten) {
  emscripten::function("moduleTree", &moduleTree);
  emscripten::function("splitConstants", &splitConstants);
}
