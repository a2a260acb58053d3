// Embind surface of the wasm module: a flat, string-and-bytes boundary over
// api/onnxfold.h. The hand-written JS layer turns options into JSON and the
// report back into objects, so no Embind type leaks to users.
//
// Every export catches C++ exceptions and throws a JS Error with the message
// (Emscripten 3.1.6 would otherwise surface an opaque WebAssembly.Exception);
// the module stays usable after a failed call.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/onnxfold.h"

using emscripten::val;

namespace {

// Copies a JS Uint8Array into the wasm heap (one copy is unavoidable here).
onnxfold::Buffer bufferFromJs(const val& bytes) {
  const auto n = bytes["length"].as<size_t>();
  uint8_t* data = nullptr;
  onnxfold::Buffer b = onnxfold::Buffer::allocate(n, &data);
  // The view is made after allocation: memory growth detaches older views.
  val(emscripten::typed_memory_view(n, data)).call<void>("set", bytes);
  return b;
}

val bytesToJs(const std::string& s) {
  return val::global("Uint8Array")
      .new_(emscripten::typed_memory_view(s.size(), reinterpret_cast<const uint8_t*>(s.data())));
}

[[noreturn]] void throwJsError(const std::string& message) {
  val::global("Error").new_(val(message)).throw_();
  __builtin_unreachable();
}

onnxfold::Options optionsFromJson(const std::string& text) {
  onnxfold::Options o;
  if (text.empty()) return o;
  const nlohmann::json j = nlohmann::json::parse(text);
  if (j.contains("passes")) o.passes = j["passes"].get<std::vector<std::string>>();
  if (j.contains("preserve")) o.preserve = j["preserve"].get<std::vector<std::string>>();
  if (j.contains("sizeBudget")) o.size_budget = j["sizeBudget"].get<int64_t>();
  if (j.contains("constructorBudget")) o.constructor_budget = j["constructorBudget"].get<int64_t>();
  if (j.contains("foldDequantizeWeights"))
    o.fold_dequantize_weights = j["foldDequantizeWeights"].get<bool>();
  if (j.contains("maxIterations")) o.max_iterations = j["maxIterations"].get<int>();
  if (j.contains("verify")) o.verify_each = j["verify"].get<bool>();
  if (j.contains("externalDataThreshold"))
    o.external_data_threshold = j["externalDataThreshold"].get<int64_t>();
  if (j.contains("externalDataLocation"))
    o.external_data_location = j["externalDataLocation"].get<std::string>();
  if (j.contains("extra")) o.extra = j["extra"].get<std::map<std::string, std::string>>();
  return o;
}

// optimize(bytes: Uint8Array, optionsJson: string, onProgress: function|undefined)
//   -> { model: Uint8Array, report: string }
val optimize(val bytes, std::string options_json, val on_progress) {
  std::string message;
  try {
    onnxfold::Options options = optionsFromJson(options_json);
    if (on_progress.typeOf().as<std::string>() == "function") {
      options.on_progress = [&on_progress](const onnxfold::Progress& p) {
        on_progress(val(p.stage), val(p.pass), val(p.fraction));
      };
    }
    onnxfold::Buffer in = bufferFromJs(bytes);
    onnxfold::StringSink out;
    const onnxfold::Report report = onnxfold::optimize(in, out, options);
    val result = val::object();
    result.set("model", bytesToJs(out.out));
    result.set("report", val(report.toJson(-1)));
    return result;
  } catch (const std::exception& e) {
    message = e.what();
  }
  throwJsError(message);  // outside the catch block, so the C++ exception is finished
}

// inspect(bytes: Uint8Array) -> summary JSON string
std::string inspect(val bytes) {
  std::string message;
  try {
    return onnxfold::inspect(bufferFromJs(bytes)).toJson(-1);
  } catch (const std::exception& e) {
    message = e.what();
  }
  throwJsError(message);
}

std::string version() {
  return onnxfold::version();
}

// passes() -> JSON {"available": [...], "default": [...]}
std::string passes() {
  nlohmann::json j;
  j["available"] = onnxfold::availablePasses();
  j["default"] = onnxfold::defaultPasses();
  return j.dump();
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnxfold) {
  emscripten::function("optimize", &optimize);
  emscripten::function("inspect", &inspect);
  emscripten::function("version", &version);
  emscripten::function("passes", &passes);
}
