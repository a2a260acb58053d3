// The exceptions onnxfold throws for bad input or failed operations: Error and the kinds
// below, which callers tell apart (a resource limit ends the run; an unsupported fold is left
// as it is). Messages say what is wrong and where (message, field, node name).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace onnxfold {

// `text` made fit for one error line: valid UTF-8 (bad bytes become U+FFFD), control
// characters as spaces, at most kMaxErrorBytes bytes (the middle cut out and counted). Names
// in a hostile model can be any bytes, and the line goes to terminals and JSON.
constexpr size_t kMaxErrorBytes = 1000;
std::string errorText(std::string_view text);
// True when `text` is valid UTF-8 (RFC 3629).
bool isValidUtf8(std::string_view text);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(errorText(what)) {}
};

// The run cannot go on whatever pass is running: a memory limit was reached, or an
// input source could not be read. The pass manager does not undo and continue on it.
class ResourceError : public Error {
 public:
  explicit ResourceError(const std::string& what) : Error(what) {}
};

// The model breaks a rule of ONNX (passes/validate.h): a schema, a type constraint, a shape
// inference finds contradictory. `where` names the node or field.
class ValidationError : public Error {
 public:
  ValidationError(const std::string& where, const std::string& problem)
      : Error(where.empty() ? problem : where + ": " + problem) {}
};

// Something onnxfold does not handle (a mode, an element type a kernel lacks) in a model that
// may well be valid: never a reason to refuse the model, only not to fold.
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(const std::string& what) : Error(what) {}
};

// Malformed or unsupported model bytes. `where` is the path to the offending
// field, e.g. "graph 'main' > node 'conv1' (Conv) > attribute 'kernel_shape'".
class ParseError : public Error {
 public:
  ParseError(std::string where, std::string problem)
      : Error(compose(where, problem)), where_(std::move(where)), problem_(std::move(problem)) {}
  const std::string& where() const { return where_; }
  const std::string& problem() const { return problem_; }
  // The same error one level further out: "<outer> > <where>".
  ParseError within(const std::string& outer) const {
    return ParseError(where_.empty() ? outer : outer + " > " + where_, problem_);
  }

 private:
  static std::string compose(const std::string& where, const std::string& problem) {
    return where.empty() ? problem : where + ": " + problem;
  }
  std::string where_;
  std::string problem_;
};

}  // namespace onnxfold
