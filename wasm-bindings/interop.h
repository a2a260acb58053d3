// Helpers shared by the Embind files: JS errors and the options-JSON boundary.
#pragma once

#include <emscripten/val.h>

#include <functional>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/error.h"

namespace onnxfold_wasm {

// Throws a JS Error (with `name`, e.g. "AbortError", when given). Call it outside any C++
// catch block, so the C++ exception is finished and the module stays usable.
[[noreturn]] inline void throwJsError(const std::string& message, const char* name = nullptr) {
  emscripten::val error = emscripten::val::global("Error").new_(emscripten::val(message));
  if (name != nullptr) error.set("name", emscripten::val(name));
  error.throw_();
  __builtin_unreachable();
}

// Runs an export's body: its result, or its C++ exception as a JS Error thrown once the C++
// exception is finished, so the module stays usable. When `cancelled()` says so, the error is
// an AbortError instead.
template <class F>
std::string guarded(F&& body, const std::function<bool()>& cancelled = {}) {
  std::string message;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    message = "out of memory: the WebAssembly heap is limited to 4 GB and this model needs more";
  } catch (const std::exception& e) {
    message = e.what();
  }
  if (cancelled && cancelled()) throwJsError("optimize was cancelled", "AbortError");
  throwJsError(message);
}

// The options object sent as JSON by js/options.js; null for "" or "null".
inline nlohmann::json parseOptions(const std::string& text) {
  if (text.empty()) return nullptr;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw onnxfold::Error(std::string("options are not valid JSON: ") + e.what());
  }
  if (!j.is_null() && !j.is_object()) throw onnxfold::Error("options must be an object");
  return j;
}

}  // namespace onnxfold_wasm
