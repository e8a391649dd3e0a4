//===- Families.h - Per-family graph builders (internal) --------*- C++ -*-===//
//
// Part of DistOpt. Each family appends its inputs, weights, nodes and outputs
// to a GraphBuilder. Options are validated before these run.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_MODELGEN_FAMILIES_H
#define DISTOPT_LIB_MODELGEN_FAMILIES_H

#include "GraphBuilder.h"

namespace distopt {
namespace modelgen {

void buildGpt(GraphBuilder &b);
void buildBert(GraphBuilder &b);
void buildLlama(GraphBuilder &b);
void buildMlp(GraphBuilder &b);
void buildResNet(GraphBuilder &b);
void buildVgg16(GraphBuilder &b);
void buildTrunkBranches(GraphBuilder &b);

/// Shared transformer pieces (Transformer.cpp).
namespace attention {
/// [B, S, heads*headDim] -> [B, heads, S, headDim] (or [B, heads, headDim, S]
/// when `transposed`, the layout keys take in Q @ K^T).
std::string splitHeads(GraphBuilder &b, const std::string &x, int64_t heads,
                       int64_t headDim, bool transposed = false);
/// softmax(Q K^T * scale + mask) V merged back to [B, S, hidden]. `causal` is
/// a bool [S, S] lower-triangular mask used with Where; `additive` a mask
/// added to the scores. Either may be empty.
std::string core(GraphBuilder &b, const std::string &q, const std::string &kT,
                 const std::string &v, int64_t headDim, int64_t hidden,
                 const std::string &causal, const std::string &additive);
/// The shared bool [S, S] lower-triangular causal mask (Trilu).
std::string causalMask(GraphBuilder &b, int64_t seq);
/// int64 [S] positions 0..S-1 (Range).
std::string positions(GraphBuilder &b, int64_t seq);
} // namespace attention

} // namespace modelgen
} // namespace distopt

#endif // DISTOPT_LIB_MODELGEN_FAMILIES_H
