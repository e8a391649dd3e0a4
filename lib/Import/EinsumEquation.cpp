//===- EinsumEquation.cpp - ONNX Einsum equations ---------------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "EinsumEquation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace distopt::import;
using llvm::StringRef;

std::string EinsumEquation::name(int label) {
  return label >= kEllipsis ? std::string("...") : std::string(1, (char)label);
}

std::vector<int64_t> EinsumEquation::shapeOf(llvm::ArrayRef<int> labels) const {
  std::vector<int64_t> shape;
  for (int l : labels) {
    auto it = sizes.find(l);
    shape.push_back(it == sizes.end() ? 1 : it->second);
  }
  return shape;
}

/// The labels of one term; `rank` is its operand's (-1 for the output,
/// whose ellipsis has `ellipsis` dimensions, the broadcast's).
static bool parseTerm(StringRef term, int64_t rank, int64_t ellipsis,
                      const std::string &what, std::vector<int> &labels,
                      std::string &error) {
  size_t dots = term.find("...");
  if (term.count("...") > 1 ||
      (dots == StringRef::npos && term.contains('.')) ||
      (dots != StringRef::npos && (term.take_front(dots).contains('.') ||
                                   term.drop_front(dots + 3).contains('.')))) {
    error = what + " '" + term.str() +
            "' has a '.' outside one '...'; an ellipsis is written '...' at "
            "most once a term";
    return false;
  }
  for (char c : term)
    if (c != '.' && !llvm::isAlpha(c)) {
      error = what + " '" + term.str() + "' has the character '" +
              std::string(1, c) + "'; labels are letters a-z and A-Z";
      return false;
    }
  int64_t letters = (int64_t)term.size() - (dots == StringRef::npos ? 0 : 3);
  int64_t own = ellipsis;
  if (rank >= 0) {
    if (dots == StringRef::npos ? letters != rank : letters > rank) {
      error = what + " '" + term.str() + "' names " + std::to_string(letters) +
              " dimension(s) but the input has rank " + std::to_string(rank) +
              "; give one label per dimension (or '...' for the rest)";
      return false;
    }
    own = rank - letters;
  }
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      // Right-aligned: an operand with fewer ellipsis dimensions has the
      // last ones.
      for (int64_t k = 0; k < own; ++k)
        labels.push_back(EinsumEquation::kEllipsis + (int)(ellipsis - own + k));
      i += 2;
      continue;
    }
    labels.push_back((unsigned char)term[i]);
  }
  return true;
}

bool EinsumEquation::parse(StringRef equation,
                           llvm::ArrayRef<std::vector<int64_t>> shapes,
                           std::string &error) {
  std::string eq;
  for (char c : equation)
    if (!llvm::isSpace(c))
      eq += c;
  StringRef lhs = eq, rhs;
  bool explicitOutput = false;
  if (size_t arrow = lhs.find("->"); arrow != StringRef::npos) {
    rhs = lhs.drop_front(arrow + 2);
    lhs = lhs.take_front(arrow);
    explicitOutput = true;
  }
  llvm::SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != shapes.size()) {
    error = "it has " + std::to_string(terms.size()) +
            " input term(s) but the node has " + std::to_string(shapes.size()) +
            " input(s); give one term per input";
    return false;
  }
  ellipsis = 0;
  for (auto [term, shape] : llvm::zip(terms, shapes)) {
    int64_t letters =
        llvm::count_if(term, [](char c) { return llvm::isAlpha(c); });
    if (term.contains("...") && (int64_t)shape.size() > letters)
      ellipsis = std::max(ellipsis, (int64_t)shape.size() - letters);
  }
  inputs.assign(terms.size(), {});
  sizes.clear();
  for (auto [k, term, shape] : llvm::enumerate(terms, shapes)) {
    if (!parseTerm(term, shape.size(), ellipsis,
                   "input term " + std::to_string(k), inputs[k], error))
      return false;
    for (auto [l, d] : llvm::zip(inputs[k], shape)) {
      auto [it, fresh] = sizes.try_emplace(l, d);
      if (fresh || it->second == d)
        continue;
      // Ellipsis dimensions broadcast; letters must agree.
      if (l >= kEllipsis && (it->second == 1 || d == 1)) {
        it->second = std::max(it->second, d);
        continue;
      }
      error = "label '" + name(l) + "' has size " + std::to_string(d) +
              " in input " + std::to_string(k) + " but size " +
              std::to_string(it->second) +
              " elsewhere in the inputs; each label has one size";
      return false;
    }
  }
  output.clear();
  if (explicitOutput) {
    if (!parseTerm(rhs, -1, ellipsis, "the output term", output, error))
      return false;
    for (int l : output) {
      if (l < kEllipsis && !sizes.count(l)) {
        error = "the output has label '" + name(l) +
                "', which no input has; an output label must be one of the "
                "inputs'";
        return false;
      }
      if (llvm::count(output, l) > 1) {
        error = "the output has label '" + name(l) +
                "' twice; an output label comes once";
        return false;
      }
    }
    if (!rhs.contains("..."))
      for (int64_t k = 0; k < ellipsis; ++k)
        if (sizes[kEllipsis + (int)k] != 1) {
          error = "the inputs' '...' dimensions are not in the output; write "
                  "'...' in the output term";
          return false;
        }
    return true;
  }
  // Implicit output: the ellipsis, then the letters used once, in
  // alphabetical (ASCII) order.
  for (int64_t k = 0; k < ellipsis; ++k)
    output.push_back(kEllipsis + (int)k);
  std::map<int, int> uses;
  for (const std::vector<int> &labels : inputs)
    for (int l : labels)
      if (l < kEllipsis)
        ++uses[l];
  for (auto [l, n] : uses)
    if (n == 1)
      output.push_back(l);
  return true;
}
