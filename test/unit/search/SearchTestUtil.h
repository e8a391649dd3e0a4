//===- SearchTestUtil.h - Models shared by the search tests -----*- C++ -*-===//

#ifndef DISTOPT_TEST_UNIT_SEARCH_SEARCHTESTUTIL_H
#define DISTOPT_TEST_UNIT_SEARCH_SEARCHTESTUTIL_H

#include "lib/Cost/ModelDesc.h"

namespace distopt::search::test {

/// A GPT of \p layers blocks of width \p hidden, 16 heads, sequence 1024.
inline cost::ModelDesc smallGpt(unsigned layers, double hidden) {
  cost::GptConfig g;
  g.layers = layers;
  g.hidden = hidden;
  g.heads = 16;
  g.seqLen = 1024;
  g.vocab = 32000;
  return cost::buildGpt(g);
}

} // namespace distopt::search::test

#endif // DISTOPT_TEST_UNIT_SEARCH_SEARCHTESTUTIL_H
