//===- SimTestUtil.h - Hand-made pipeline costs for tests -------*- C++ -*-===//

#ifndef DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H
#define DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H

#include "lib/Schedule/Plan.h"

namespace distopt::sim::test {

/// Every virtual stage: F, BI and W seconds; sends take \p send seconds on
/// the network; no optimizer, no DP sync.
inline schedule::PipelineCosts uniform(unsigned pp, unsigned chunks, unsigned m,
                                       double f, double bi, double bw,
                                       double send = 0) {
  schedule::PipelineCosts c;
  c.pp = pp;
  c.chunks = chunks;
  c.microbatches = m;
  c.globalBatch = m;
  c.stages.resize(pp * chunks);
  for (unsigned vs = 0; vs < pp * chunks; ++vs) {
    schedule::StageCost &st = c.stages[vs];
    st.device = vs % pp;
    st.chunk = vs / pp;
    st.fwd = f;
    st.bwdInput = bi;
    st.bwdWeight = bw;
    st.activationBytes = 1;
    st.nextLevel = st.prevLevel = cluster::LinkLevel::Network;
    if (vs + 1 < pp * chunks)
      st.sendNextTime = send;
    if (vs > 0)
      st.sendPrevTime = send;
  }
  c.devices.resize(pp);
  return c;
}

} // namespace distopt::sim::test

#endif // DISTOPT_TEST_UNIT_SIM_SIMTESTUTIL_H
