// IR -> ModelProto bytes, streamed to a Sink.
//
// The model is laid out as a rope: small encoded pieces plus tensor Buffers, so
// a weight read from the input is written straight from the input buffer, and a
// weight that is a source range is copied by the sink from its source (the output
// is then a plan: encoded bytes plus ranges of the inputs), never gathered into
// one whole-model string. Output is deterministic:
// fields in field-number order, unknown fields after the known ones.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/sink.h"

namespace onnxfold {

// int32/int64 tensors smaller than kInlineIntegerBytes, and any smaller than kInlineBytes, stay
// inline whatever the threshold (writer.cpp shapeSized: runtimes read shapes, axes, scales and
// Range bounds at load and cannot read them from external data).
constexpr size_t kInlineIntegerBytes = 1024;
constexpr size_t kInlineBytes = 64;

struct WriteOptions {
  // Tensors of at least this many bytes go to an external-data file; < 0: none (small
  // tensors excepted: kInlineIntegerBytes, kInlineBytes).
  int64_t external_threshold = -1;
  // The external file's name, relative to the model's folder.
  std::string external_location;
  // Opens the sink for the external file (called once, only if a tensor goes there).
  std::function<std::unique_ptr<Sink>(const std::string& location)> open_external;
  // Every external tensor starts at a multiple of this (mmap-friendly, per ExternalData.md).
  size_t external_alignment = 4096;
  // Largest external-data file (0: no limit): tensors that would pass it start the next
  // file, "<location>.1", "<location>.2", ... (ORT-web and transformers.js load at most
  // 2 GB per file). One tensor larger than the limit gets a file of its own.
  uint64_t external_file_limit = 0;
  // What joins the location and the number of a further file: "." gives "<location>.1";
  // transformers.js looks for "<location>_1".
  std::string external_chunk_separator = ".";
  // A tensor that is an unchanged range of an input external-data file is written as a
  // reference to that file (same location and offset) instead of a copy: the output then
  // depends on the input's data file, beside it.
  bool reuse_input_data = false;
  // Called as bytes go out: (model bytes written, model bytes in all).
  std::function<void(uint64_t, uint64_t)> on_progress;
};

// Largest inline model protobuf readers accept (2 GiB - 1).
constexpr uint64_t kMaxProtoBytes = (uint64_t{1} << 31) - 1;

struct WriteStats {
  uint64_t model_bytes = 0;
  uint64_t external_bytes = 0;
  size_t external_tensors = 0;
  std::vector<std::string> external_files;  // locations, in the order written
  std::vector<std::string> reused_files;    // input data files the output refers to
};

WriteStats writeModel(const Model& model, Sink& sink, const WriteOptions& options = {});

// A threshold < 0 made automatic, as a front end asks by default: external (tensors of 1 KiB
// and more) when the model has external tensors or would pass kMaxProtoBytes inline. A file
// that is used and not named is "model.onnx.data": hosts that name files (the CLI) pass
// "<output>.data"; for bytes in memory the result's map of files says which name was used.
void chooseExternalData(const Model& model, WriteOptions& options);

// Convenience for tests and small models: the whole encoding in one string.
std::string writeModelToString(const Model& model);

// Bytes the model would take inline (all tensor data in the file).
uint64_t inlineModelSize(const Model& model);

}  // namespace onnxfold
