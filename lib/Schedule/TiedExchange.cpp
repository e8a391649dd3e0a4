//===- TiedExchange.cpp - Tied weights' gradients between ranks -*- C++ -*-===//
//
// Part of DistOpt. tiedExchange: the once-a-step messages of weights read
// on several pipeline ranks (TiedExchange.h).
//
//===----------------------------------------------------------------------===//
#include "lib/Schedule/TiedExchange.h"

using namespace distopt;
using namespace distopt::schedule;

double TiedExchange::sent(unsigned list) const {
  double total = 0;
  for (double b : sentBytes[list])
    total += b;
  return total;
}

TiedExchange schedule::tiedExchange(const Plan &p, const cost::ModelDesc &model,
                                    const cluster::Cluster &c,
                                    const cost::CostModel &cm,
                                    double elemBytes) {
  const unsigned numLayers = model.layers.size();
  const unsigned V = p.numVirtualStages();
  const unsigned lists = p.replicated() ? p.numSlots() : p.pp;
  TiedExchange out;
  out.copies.resize(V);
  out.sentBytes.assign(lists, {});
  out.time.assign(lists, 0);
  if (isAsync(p.schedule))
    return out;
  std::vector<unsigned> stageOfLayer(numLayers, 0);
  for (unsigned vs = 0; vs < V; ++vs) {
    auto [begin, end] = p.stageLayers(vs, numLayers);
    for (unsigned l = begin; l < end && l < numLayers; ++l)
      stageOfLayer[l] = vs;
  }
  // The list of replica d of pipeline rank s: the rank itself (its lists'
  // replicas behave alike), or the slot under per-stage replicas.
  auto listOf = [&](unsigned s, unsigned d) {
    return p.replicated() ? p.firstSlot(s) + d : s;
  };
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
        cost::ParamSplit part = cost::paramSplit(op, p.tp, p.ep);
        out.copies[vs] += part;
        const double bytes = part.total() * elemBytes;
        // Each replica of the reading rank exchanges with its own replica
        // of the owner; under per-stage replicas all with the owner's
        // first. The part one way, the updated weight the other, over the
        // link between the two lists' devices of the same tensor rank.
        const unsigned readers = p.replicated() ? p.replicasOf(reader) : 1;
        for (unsigned d = 0; d < readers; ++d) {
          const unsigned a = p.globalRank(reader, d, 0),
                         b = p.globalRank(owner, p.replicated() ? 0 : d, 0);
          const double t = cost::CostModel::p2pTime(bytes, c.linkBetween(a, b));
          const unsigned level = static_cast<unsigned>(c.levelBetween(a, b));
          for (unsigned list : {listOf(reader, d), listOf(owner, 0)}) {
            out.sentBytes[list][level] += bytes;
            out.time[list] += 2 * t;
          }
          // The LM head reads the table transposed: its part is summed in
          // the head's layout and transposed to the table's once a step
          // (read and written once).
          if (op.cls == cluster::OpClass::MatMul)
            out.time[listOf(reader, d)] += cm.computeTime(
                {0, bytes, bytes}, cluster::OpClass::DataMovement,
                cluster::DType::F32, c.deviceOf(a));
        }
      }
  }
  return out;
}
