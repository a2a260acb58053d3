// The one boundary between the JS layer (js/host.js: one call's host object) and the wasm module.
//
// Every export takes the model's size and a `host` object through which
// everything goes (the model is source 0, read through it like the rest):
//   host.external(location) -> { id, size } | undefined   an input file by location
//   host.read(id, offset, n, ptr) -> bool                  copy a range of it into the heap
//   host.output(location, kind, a, b, c) -> bool           the output plan, as written:
//       kind 0: a file of `a` bytes begins; 1: heap bytes [a, a+b);
//       2: `c` bytes of input source `a` from offset `b` (the host copies them itself)
//   host.progress(stage, pass, fraction), host.cancelled() -> bool  (optional)
// A false return means the host failed; it keeps its error and rethrows it after the
// call. Weights in sources are never copied into the heap unless a pass needs their
// values; unchanged ones leave as kind-2 ranges, so the heap holds the graph only.
#pragma once

#include <emscripten/val.h>

#include <map>
#include <memory>
#include <string>

#include "api/onnxfold.h"
#include "ir/source.h"

namespace onnxfold_wasm {

// A file the host can read from synchronously (fs.readSync, FileReaderSync, a Uint8Array).
class HostSource : public onnxfold::Source {
 public:
  HostSource(emscripten::val host, int id, uint64_t size, std::string label)
      : host_(std::move(host)), id_(id), size_(size), label_(std::move(label)) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    const bool ok = host_.call<bool>("read", id_, static_cast<double>(offset),
                                     static_cast<double>(n), reinterpret_cast<uintptr_t>(dst));
    if (!ok) throw onnxfold::ResourceError("cannot read " + describe());
  }
  int hostId() const override { return id_; }
  std::string describe() const override { return label_; }
  std::string location() const override { return location_; }
  void setLocation(std::string location) { location_ = std::move(location); }

 private:
  emscripten::val host_;
  int id_;
  uint64_t size_;
  std::string label_;
  std::string location_;
};

// The model file: host source 0 (its inline weights stay in it, see onnx/skeleton.h).
inline onnxfold::ModelInput hostModel(const emscripten::val& host, double size) {
  return onnxfold::ModelInput(std::shared_ptr<const onnxfold::Source>(
      std::make_shared<HostSource>(host, 0, static_cast<uint64_t>(size), "the model")));
}

// Sends a written file to host.output: small encoded pieces staged in 256 KiB batches,
// heap bytes from where they are, and source ranges as kind-2 plan entries.
class HostSink : public onnxfold::Sink {
 public:
  HostSink(emscripten::val host, std::string location)
      : host_(std::move(host)), location_(std::move(location)) {}
  HostSink(const HostSink&) = delete;
  HostSink& operator=(const HostSink&) = delete;
  // A failure here was recorded by the host, which rethrows it after the call.
  ~HostSink() override {
    try {
      flush();
    } catch (...) {
    }
  }

  void reserve(uint64_t total) override { call(0, static_cast<double>(total), 0, 0); }
  void write(const uint8_t* data, size_t size) override {
    if (size >= kStage) {
      flush();
      call(1, static_cast<double>(reinterpret_cast<uintptr_t>(data)), static_cast<double>(size), 0);
      return;
    }
    if (stage_.size() + size > kStage) flush();
    if (stage_.capacity() == 0) stage_.reserve(kStage);
    stage_.insert(stage_.end(), data, data + size);
  }
  void writeBuffer(const onnxfold::Buffer& b) override {
    const auto& src = b.source();
    if (src == nullptr || src->hostId() < 0) {
      onnxfold::Sink::writeBuffer(b);
      return;
    }
    flush();
    call(2, src->hostId(), static_cast<double>(b.sourceOffset()), static_cast<double>(b.size()));
  }
  void flush() {
    if (stage_.empty()) return;
    call(1, static_cast<double>(reinterpret_cast<uintptr_t>(stage_.data())),
         static_cast<double>(stage_.size()), 0);
    stage_.clear();
  }

 private:
  static constexpr size_t kStage = 256 * 1024;
  void call(int kind, double a, double b, double c) {
    if (!host_.call<bool>("output", location_, kind, a, b, c)) {
      throw onnxfold::Error(
          "writing '" + (location_.empty() ? std::string("the model") : location_) + "' failed");
    }
  }
  emscripten::val host_;
  std::string location_;
  std::vector<uint8_t> stage_;
};

// The input side of `host`: external-data locations opened as HostSources (once each),
// and output files created as HostSinks.
inline onnxfold::ExternalDataIO hostIO(const emscripten::val& host) {
  onnxfold::ExternalDataIO io;
  auto opened = std::make_shared<std::map<std::string, std::shared_ptr<const onnxfold::Source>>>();
  io.open = [host, opened](const std::string& location) -> std::shared_ptr<const onnxfold::Source> {
    auto it = opened->find(location);
    if (it != opened->end()) return it->second;
    const emscripten::val f = host.call<emscripten::val>("external", location);
    if (f.isUndefined() || f.isNull()) {
      throw onnxfold::Error("the model refers to external data '" + location +
                            "', which was not supplied");
    }
    const auto size = static_cast<uint64_t>(f["size"].as<double>());
    auto source = std::make_shared<HostSource>(host, f["id"].as<int>(), size,
                                               "external data '" + location + "'");
    source->setLocation(location);
    opened->emplace(location, source);
    return source;
  };
  io.create = [host](const std::string& location) -> std::unique_ptr<onnxfold::Sink> {
    return std::make_unique<HostSink>(host, location);
  };
  return io;
}

}  // namespace onnxfold_wasm
