//===- TiedExchange.cpp - Tied weights' gradients between ranks -*- C++ -*-===//
//
// Part of DistOpt. tiedExchange: the once-a-step messages of weights read
// on several pipeline ranks (TiedExchange.h).
//
//===----------------------------------------------------------------------===//
#include "lib/Schedule/TiedExchange.h"

using namespace distopt;
using namespace distopt::schedule;

TiedExchange schedule::tiedExchange(const Plan &p, const cost::ModelDesc &model,
                                    const cluster::Cluster &c,
                                    double elemBytes) {
  const unsigned numLayers = model.layers.size();
  const unsigned V = p.numVirtualStages();
  TiedExchange out;
  out.copies.resize(V);
  out.sentBytes.assign(p.pp, 0);
  out.time.assign(p.pp, 0);
  if (isAsync(p.schedule))
    return out;
  std::vector<unsigned> stageOfLayer(numLayers, 0);
  for (unsigned vs = 0; vs < V; ++vs) {
    auto [begin, end] = p.stageLayers(vs, numLayers);
    for (unsigned l = begin; l < end && l < numLayers; ++l)
      stageOfLayer[l] = vs;
  }
  for (unsigned vs = 0; vs < V; ++vs) {
    auto [begin, end] = p.stageLayers(vs, numLayers);
    const unsigned reader = p.rankOf(vs);
    for (unsigned l = begin; l < end && l < numLayers; ++l)
      for (const cost::OpDesc &op : model.layers[l].ops) {
        if (op.tiedLayer < 0 || unsigned(op.tiedLayer) >= numLayers)
          continue;
        const unsigned owner = p.rankOf(stageOfLayer[op.tiedLayer]);
        if (owner == reader)
          continue; // one list holds both uses: no message
        cost::ParamSplit part = cost::paramSplit(op, p.tp, p.cp, p.ep);
        out.copies[vs] += part;
        // The part one way, the updated weight the other, over the link
        // between the two ranks' devices of the same replica and tensor
        // rank.
        const double bytes = part.total() * elemBytes;
        const unsigned a = p.globalRank(reader, 0, 0),
                       b = p.globalRank(owner, 0, 0);
        const double t = cost::CostModel::p2pTime(bytes, c.linkBetween(a, b));
        for (unsigned r : {reader, owner}) {
          out.sentBytes[r] += bytes;
          out.time[r] += 2 * t;
        }
      }
  }
  return out;
}
