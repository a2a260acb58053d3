// Embind surface of the wasm module: a flat, pointers-and-strings boundary over
// api/onnxfold.h, used by the hand-written JS layer in js/index.js (which turns
// options into JSON, the report back into objects and copies bytes in and out),
// so no Embind type leaks to users.
//
// Bytes cross the boundary as (pointer, length) pairs in the wasm heap: the JS
// layer allocates with alloc(), writes the input straight into the heap (from a
// Uint8Array, a Blob's stream or, in node, fs.readSync), and hands ownership to
// optimize()/inspect(), which free it. The output goes to JS as the writer
// produces it (JsSink): tensor bytes straight from where they are, so JS copies
// them once into a Uint8Array of the announced size, or writes them to a file
// from the heap. Nothing is zero-filled that is about to be overwritten (on the
// machines we run on, first-touched memory costs ~3 ms/MB).
//
// Every export catches C++ exceptions and throws a JS Error with the message
// (Emscripten 3.1.6 would otherwise surface an opaque WebAssembly.Exception);
// the module stays usable after a failed call.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/onnxfold.h"
#include "interop.h"

using emscripten::val;
using namespace onnxfold_wasm;

namespace {

constexpr size_t kAlignment = 64;  // as onnxfold::Buffer::allocate: kernels may rely on it

std::string outOfMemoryMessage(uint64_t bytes) {
  // emscripten's malloc grows the heap by less than 2 GB per step, so one block of 2 GB or
  // more (a model or an external-data file) cannot be placed even below the 4 GB limit.
  return "out of memory allocating " + std::to_string(bytes) +
         " bytes: the WebAssembly heap is limited to 4 GB (model, weights and results together)" +
         (bytes >= (uint64_t{1} << 31) ? ", and one file or block must stay under 2 GB" : "");
}

void* heapAlloc(uint64_t size) {
  // aligned_alloc wants a multiple of the alignment; 0 bytes still get a distinct block.
  const uint64_t padded =
      size == 0 ? kAlignment : (size + kAlignment - 1) / kAlignment * kAlignment;
  if (padded > 0xffffffffull - kAlignment) return nullptr;
  void* p = std::aligned_alloc(kAlignment, static_cast<size_t>(padded));
  return p;
}

// alloc(size) -> pointer: storage the JS layer fills and then passes to optimize/inspect.
// No zero-fill: the caller overwrites every byte.
uintptr_t alloc(double size) {
  if (!(size >= 0) || size > 4294967295.0) {
    val::global("Error").new_(val(outOfMemoryMessage(static_cast<uint64_t>(size)))).throw_();
  }
  void* p = heapAlloc(static_cast<uint64_t>(size));
  if (p == nullptr) {
    val::global("Error").new_(val(outOfMemoryMessage(static_cast<uint64_t>(size)))).throw_();
  }
  return reinterpret_cast<uintptr_t>(p);
}

void release(uintptr_t ptr) {
  std::free(reinterpret_cast<void*>(ptr));
}

// Takes ownership of heap bytes allocated by alloc().
onnxfold::Buffer adopt(uintptr_t ptr, size_t len) {
  auto* p = reinterpret_cast<uint8_t*>(ptr);
  return onnxfold::Buffer(p, len, std::shared_ptr<const void>(p, [](const void* q) {
                            std::free(const_cast<void*>(q));
                          }));
}

// external: { [location]: { ptr, len } } (heap blocks from alloc(), adopted here at once so
// they are freed whatever happens, including locations the model never opens), or a function
// (see inputIO), or undefined.
std::map<std::string, onnxfold::Buffer> adoptExternal(const val& external) {
  std::map<std::string, onnxfold::Buffer> files;
  if (external.typeOf().as<std::string>() != "object" || external.isNull()) return files;
  const val keys = val::global("Object").call<val>("keys", external);
  const auto n = keys["length"].as<size_t>();
  for (size_t i = 0; i < n; ++i) {
    const auto name = keys[i].as<std::string>();
    const val entry = external[name];
    files.emplace(name, adopt(entry["ptr"].as<uintptr_t>(), entry["len"].as<size_t>()));
  }
  return files;
}

// io.open: looks the location up in the supplied files, or (when `external` is a function, as
// node's optimizeFile passes) asks JS synchronously for { ptr, len } (a block it allocated) or
// undefined when there is no such file.
onnxfold::ExternalDataIO inputIO(std::map<std::string, onnxfold::Buffer>& files,
                                 const val& external) {
  onnxfold::ExternalDataIO io;
  const bool ask = external.typeOf().as<std::string>() == "function";
  io.open = [&files, &external, ask](const std::string& location) -> onnxfold::Buffer {
    auto it = files.find(location);
    if (it != files.end()) return it->second;
    if (ask) {
      const val block = external(val(location));
      if (!block.isUndefined() && !block.isNull()) {
        onnxfold::Buffer b = adopt(block["ptr"].as<uintptr_t>(), block["len"].as<size_t>());
        files.emplace(location, b);
        return b;
      }
      throw onnxfold::Error("the model refers to external data '" + location +
                            "', which cannot be read beside the model");
    }
    std::string given;
    for (const auto& [name, buf] : files)
      given += (given.empty() ? "'" : ", '") + name + "'";
    throw onnxfold::Error("the model refers to external data '" + location +
                          "', which was not supplied (externalData has " +
                          (given.empty() ? std::string("no files") : given) + ")");
  };
  return io;
}

// Forwards the writer's output to JS as it is produced: output(location, kind, ptr, len) with
// kind 0 = "len bytes are coming" (the writer announces the exact total first) and kind 1 = "bytes
// at [ptr, ptr+len) of the heap". JS copies them into one exactly-sized Uint8Array, or writes them
// to a file from the heap, so the output never needs a second buffer in the wasm heap. Small
// pieces (the rope's encoded headers) are staged and go out in 256 KiB batches; tensor bytes go
// out directly from where they are. The callback returns false when it failed (it keeps the
// error and rethrows it once optimize returns).
class JsSink : public onnxfold::Sink {
 public:
  JsSink(const val& output, std::string location)
      : output_(output), location_(std::move(location)) {}
  JsSink(const JsSink&) = delete;
  JsSink& operator=(const JsSink&) = delete;
  // A failure here was recorded by the JS callback, which rethrows it after the call.
  ~JsSink() override {
    try {
      flush();
    } catch (...) {
    }
  }

  void reserve(uint64_t total) override { call(0, 0, static_cast<double>(total)); }
  void write(const uint8_t* data, size_t size) override {
    if (size >= kStage) {
      flush();
      call(1, reinterpret_cast<uintptr_t>(data), static_cast<double>(size));
      return;
    }
    if (stage_.size() + size > kStage) flush();
    if (stage_.capacity() == 0) stage_.reserve(kStage);
    stage_.insert(stage_.end(), data, data + size);
  }
  void flush() {
    if (stage_.empty()) return;
    call(1, reinterpret_cast<uintptr_t>(stage_.data()), static_cast<double>(stage_.size()));
    stage_.clear();
  }

 private:
  static constexpr size_t kStage = 256 * 1024;
  void call(int kind, uintptr_t ptr, double len) {
    if (!output_(val(location_), val(kind), val(ptr), val(len)).as<bool>()) {
      throw onnxfold::Error(
          "writing '" + (location_.empty() ? std::string("the model") : location_) + "' failed");
    }
  }
  val output_;
  std::string location_;
  std::vector<uint8_t> stage_;
};

onnxfold::Options optionsFromJson(const std::string& text) {
  onnxfold::Options o;
  const nlohmann::json j = parseOptions(text);
  if (j.is_null()) return o;
  static const char* const kKnown[] = {
      "passes", "preserve",      "sizeBudget", "constructorBudget",     "foldDequantizeWeights",
      "quant",  "maxIterations", "verify",     "externalDataThreshold", "externalDataLocation",
      "extra"};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kKnown)
      known = known || key == k;
    if (!known) throw onnxfold::Error("unknown option '" + key + "'");
  }
  using Strings = std::vector<std::string>;
  if (j.contains("passes")) o.passes = optionAs<Strings>(j, "passes", "an array of pass names");
  if (j.contains("preserve")) o.preserve = optionAs<Strings>(j, "preserve", "an array of strings");
  if (j.contains("sizeBudget")) o.size_budget = optionAs<int64_t>(j, "sizeBudget", "an integer");
  if (j.contains("constructorBudget"))
    o.constructor_budget = optionAs<int64_t>(j, "constructorBudget", "an integer");
  if (j.contains("foldDequantizeWeights"))
    o.fold_dequantize_weights = optionAs<bool>(j, "foldDequantizeWeights", "a boolean");
  if (j.contains("quant")) o.quant = optionAs<std::string>(j, "quant", "a string");
  if (j.contains("maxIterations"))
    o.max_iterations = optionAs<int>(j, "maxIterations", "an integer");
  if (j.contains("verify")) o.verify_each = optionAs<bool>(j, "verify", "a boolean");
  if (j.contains("externalDataThreshold"))
    o.external_data_threshold = optionAs<int64_t>(j, "externalDataThreshold", "an integer");
  if (j.contains("externalDataLocation"))
    o.external_data_location = optionAs<std::string>(j, "externalDataLocation", "a string");
  if (j.contains("extra")) {
    o.extra = optionAs<std::map<std::string, std::string>>(j, "extra", "an object of strings");
  }
  return o;
}

// Thrown (as a JS Error with name "AbortError") when the cancelled callback said so.
constexpr const char* kAbortName = "AbortError";

// optimize(ptr, len, optionsJson, onProgress|undefined, cancelled|undefined,
//          external: object|function|undefined, output: function) -> report JSON string
// Takes ownership of the input block and of every external block; the model (location "") and
// its external-data files go out through `output` (see JsSink).
std::string optimize(uintptr_t ptr, size_t len, std::string options_json, val on_progress,
                     val cancelled, val external, val output) {
  std::string message;
  const char* name = nullptr;
  bool was_cancelled = false;
  {
    // Adopt first, so the blocks are freed even if the options are bad.
    onnxfold::Buffer in = adopt(ptr, len);
    try {
      std::map<std::string, onnxfold::Buffer> files = adoptExternal(external);
      onnxfold::Options options = optionsFromJson(options_json);
      if (on_progress.typeOf().as<std::string>() == "function") {
        options.on_progress = [&on_progress](const onnxfold::Progress& p) {
          on_progress(val(p.stage), val(p.pass), val(p.fraction));
        };
      }
      if (cancelled.typeOf().as<std::string>() == "function") {
        options.cancelled = [&cancelled, &was_cancelled]() {
          was_cancelled = was_cancelled || cancelled().as<bool>();
          return was_cancelled;
        };
      }
      onnxfold::ExternalDataIO io = inputIO(files, external);
      // The writer drops an external file's sink once it is written; JsSink flushes then.
      io.create = [&output](const std::string& location) -> std::unique_ptr<onnxfold::Sink> {
        return std::make_unique<JsSink>(output, location);
      };
      JsSink out(output, "");
      const onnxfold::Report report = onnxfold::optimize(in, out, options, io);
      out.flush();
      return report.toJson(-1);
    } catch (const std::bad_alloc&) {
      message = "out of memory: the WebAssembly heap is limited to 4 GB and this model needs more";
    } catch (const std::exception& e) {
      message = e.what();
    }
  }
  if (was_cancelled) {
    message = "optimize was cancelled";
    name = kAbortName;
  }
  throwJsError(message, name);  // outside the catch block, so the C++ exception is finished
}

// inspect(ptr, len, external|undefined) -> summary JSON string. Takes ownership like optimize.
std::string inspect(uintptr_t ptr, size_t len, val external) {
  std::string message;
  {
    onnxfold::Buffer in = adopt(ptr, len);
    try {
      std::map<std::string, onnxfold::Buffer> files = adoptExternal(external);
      return onnxfold::inspect(in, inputIO(files, external)).toJson(-1);
    } catch (const std::bad_alloc&) {
      message = "out of memory: the WebAssembly heap is limited to 4 GB and this model needs more";
    } catch (const std::exception& e) {
      message = e.what();
    }
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
  emscripten::function("alloc", &alloc);
  emscripten::function("release", &release);
  emscripten::function("optimize", &optimize);
  emscripten::function("inspect", &inspect);
  emscripten::function("version", &version);
  emscripten::function("passes", &passes);
}
