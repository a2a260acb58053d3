// einsum op family: Einsum, any equation (ellipsis, diagonals, implicit
// output), as one loop over the output and the summed labels. See
// op_registry.h for the infer()/compute() contract.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/elementwise.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// Dims of a Shape with -1 for unknown dims.
std::vector<int64_t> dimsOrUnknown(const Shape& s) {
  std::vector<int64_t> v;
  for (const Dim& d : s.dims)
    v.push_back(d.isKnown() ? d.value : -1);
  return v;
}

struct EinsumSpec {
  std::vector<std::vector<int>> terms;  // labels per input axis
  std::vector<int> output;              // labels of the output axes
  std::map<int, int64_t> sizes;         // label -> size
  std::vector<int> labels;              // output labels first, then summed ones
};

// Labels: letters are their char codes; ellipsis dims are 1000 + k (right-aligned).
EinsumSpec parseEinsum(const OpContext& ctx, const std::vector<std::vector<int64_t>>& shapes) {
  std::string eq;
  for (char ch : ctx.attrString("equation", ""))
    if (ch != ' ') eq += ch;
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    ctx.fail("the equation has " + std::to_string(terms.size()) + " terms for " +
             std::to_string(shapes.size()) + " inputs");
  }
  EinsumSpec s;
  int64_t ell_rank = 0;
  std::map<int, int> counts;
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string& term = terms[t];
    const size_t dots = term.find("...");
    int64_t letters = 0;
    for (char ch : term)
      if (std::isalpha(static_cast<unsigned char>(ch))) ++letters;
    const auto rank = static_cast<int64_t>(shapes[t].size());
    const int64_t er = dots == std::string::npos ? 0 : rank - letters;
    if (er < 0 || (dots == std::string::npos && letters != rank)) {
      ctx.fail("term '" + term + "' does not match the rank of input " + std::to_string(t));
    }
    ell_rank = std::max(ell_rank, er);
    std::vector<int> labels;
    for (size_t i = 0; i < term.size();) {
      if (term.compare(i, 3, "...") == 0) {
        for (int64_t k = 0; k < er; ++k)
          labels.push_back(-static_cast<int>(er - k));  // resolved below
        i += 3;
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(term[i]))) {
        ctx.fail(std::string("invalid character '") + term[i] + "' in the equation");
      }
      labels.push_back(term[i]);
      ++i;
    }
    s.terms.push_back(labels);
  }
  // Ellipsis labels, right-aligned: -j (j-th from the end) -> 1000 + ell_rank - j.
  for (auto& labels : s.terms)
    for (int& l : labels)
      if (l < 0) l = 1000 + static_cast<int>(ell_rank) + l;
  for (size_t t = 0; t < s.terms.size(); ++t) {
    std::map<int, bool> seen;
    for (size_t a = 0; a < s.terms[t].size(); ++a) {
      const int l = s.terms[t][a];
      const int64_t d = shapes[t][a];
      auto it = s.sizes.find(l);
      if (it == s.sizes.end() || it->second == 1) {
        s.sizes[l] = d;
      } else if (d != 1 && d != it->second) {
        ctx.fail("dimension mismatch for label '" + std::string(1, static_cast<char>(l)) + "'");
      }
      if (l < 1000) ++counts[l];
    }
  }
  if (explicit_out) {
    for (size_t i = 0; i < rhs.size();) {
      if (rhs.compare(i, 3, "...") == 0) {
        for (int64_t k = 0; k < ell_rank; ++k)
          s.output.push_back(1000 + static_cast<int>(k));
        i += 3;
        continue;
      }
      if (!counts.count(rhs[i])) {
        ctx.fail(std::string("output label '") + rhs[i] + "' is not in the inputs");
      }
      s.output.push_back(rhs[i]);
      ++i;
    }
  } else {
    for (int64_t k = 0; k < ell_rank; ++k)
      s.output.push_back(1000 + static_cast<int>(k));
    for (const auto& [l, c] : counts)
      if (c == 1) s.output.push_back(l);
  }
  s.labels = s.output;
  for (const auto& [l, size] : s.sizes) {
    (void)size;
    if (std::find(s.output.begin(), s.output.end(), l) == s.output.end()) s.labels.push_back(l);
  }
  return s;
}

void inferEinsum(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  std::vector<std::vector<int64_t>> shapes;
  bool known = true;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Shape* s = ctx.inputShape(i);
    if (s == nullptr) {
      known = false;
      break;
    }
    shapes.push_back(dimsOrUnknown(*s));
  }
  if (!known) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  // Unknown dims: parse with 1 (broadcast-neutral) and mark the result unknown.
  std::vector<std::vector<int64_t>> probe = shapes;
  for (auto& s : probe)
    for (int64_t& d : s)
      if (d < 0) d = 1;
  const EinsumSpec spec = parseEinsum(ctx, probe);
  Shape out;
  for (int l : spec.output) {
    bool unknown = false;
    for (size_t t2 = 0; t2 < spec.terms.size(); ++t2)
      for (size_t a = 0; a < spec.terms[t2].size(); ++a)
        if (spec.terms[t2][a] == l && shapes[t2][a] < 0) unknown = true;
    const int64_t sz = spec.sizes.at(l);
    out.dims.push_back(unknown && sz == 1 ? unknownDim() : Dim::known(sz));
  }
  // Keep symbolic dims when an output axis comes straight from a symbolic input axis.
  for (size_t o = 0; o < spec.output.size(); ++o) {
    if (out.dims[o].isKnown()) continue;
    for (size_t t2 = 0; t2 < spec.terms.size() && !out.dims[o].isKnown(); ++t2)
      for (size_t a = 0; a < spec.terms[t2].size(); ++a)
        if (spec.terms[t2][a] == spec.output[o]) {
          out.dims[o] = ctx.inputShape(t2)->dims[a];
          break;
        }
  }
  ctx.setOutput(0, t, out);
}

void computeEinsum(ComputeContext& ctx) {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    shapes.push_back(ctx.input(i).dims());
  const EinsumSpec spec = parseEinsum(ctx, shapes);
  const size_t nl = spec.labels.size(), no = spec.output.size();
  std::vector<int64_t> sizes(nl);
  for (size_t i = 0; i < nl; ++i)
    sizes[i] = spec.sizes.at(spec.labels[i]);
  // Per input: stride of each label (sum over repeated axes = diagonal; 0 when broadcast).
  std::vector<std::vector<int64_t>> strides(shapes.size(), std::vector<int64_t>(nl, 0));
  for (size_t t = 0; t < shapes.size(); ++t) {
    int64_t st = 1;
    for (size_t a = shapes[t].size(); a-- > 0;) {
      const size_t li =
          std::find(spec.labels.begin(), spec.labels.end(), spec.terms[t][a]) - spec.labels.begin();
      // An empty input may have other dims whose product overflows: it is never read then.
      if (shapes[t][a] != 1) strides[t][li] = elementwise::wrapAdd(strides[t][li], st);
      st = elementwise::wrapMul(st, shapes[t][a]);
    }
  }
  Tensor& Y = ctx.output(0);
  const int64_t out_total = Y.numElements();
  int64_t sum_total = 1;
  for (size_t i = no; i < nl; ++i) {
    if (!checkedMul(sum_total, sizes[i], &sum_total))
      ctx.fail("the product of the summed dims overflows int64");
  }
  dispatchNumeric(Y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, T, double>;
    T* y = mutableDataAs<T>(Y);
    std::vector<const T*> in;
    for (size_t t = 0; t < shapes.size(); ++t)
      in.push_back(dataAs<T>(ctx.input(t)));
    std::vector<int64_t> idx(nl, 0), off(shapes.size(), 0);
    // Odometer step over the labels [lo, hi), the last fastest; the input offsets follow.
    const auto advance = [&](size_t lo, size_t hi) {
      for (size_t l = hi; l-- > lo;) {
        if (++idx[l] < sizes[l]) {
          for (size_t t = 0; t < in.size(); ++t)
            off[t] += strides[t][l];
          return;
        }
        for (size_t t = 0; t < in.size(); ++t)
          off[t] -= strides[t][l] * (sizes[l] - 1);
        idx[l] = 0;
      }
    };
    for (int64_t o = 0; o < out_total; ++o) {
      Acc acc = Acc(0);
      for (int64_t s = 0; s < sum_total; ++s) {
        Acc prod = Acc(1);
        for (size_t t = 0; t < in.size(); ++t) {
          if constexpr (std::is_same_v<Acc, double>) {
            prod *= toDouble(in[t][off[t]]);
          } else {
            prod = elementwise::wrapMul(prod, in[t][off[t]]);  // integers wrap
          }
        }
        acc = elementwise::wrapAdd(acc, prod);
        advance(no, nl);  // the summed labels
      }
      if constexpr (std::is_same_v<Acc, double>) {
        y[o] = fromDouble<T>(acc);
      } else {
        y[o] = acc;
      }
      advance(0, no);  // the output labels
    }
  });
}

}  // namespace
}  // namespace kernels

void registerEinsumOps(OpRegistry& r) {
  using namespace kernels;
  r.add({"", "Einsum", 12, inferEinsum, computeEinsum});
}

}  // namespace onnxfold
