//===- ScheduleTest.cpp - Generators and the verifier -----------*- C++ -*-===//

#include "lib/Schedule/Schedule.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::schedule;

namespace {

Schedule gen(ScheduleKind k, unsigned pp, unsigned chunks, unsigned m,
             ScheduleOptions o = {}) {
  auto s = generateSchedule(k, pp, chunks, m, o);
  EXPECT_TRUE(static_cast<bool>(s));
  return s ? std::move(*s) : Schedule();
}

/// Compute actions of rank \p r as "F0 F1 B0 ...".
std::string computeOrder(const Schedule &s, unsigned r) {
  std::string out;
  for (const Action &a : s.devices[r])
    if (isCompute(a.kind) && a.kind != ActionKind::OptimizerStep)
      out += (out.empty() ? "" : " ") + actionName(a.kind).str() +
             std::to_string(a.mb) +
             (s.chunks > 1 ? "." + std::to_string(a.chunk) : "");
  return out;
}

std::string verifyError(const Schedule &s, const PipelineCosts *c = nullptr,
                        double limit = 0) {
  llvm::Error e = verifySchedule(s, c, limit);
  EXPECT_TRUE(static_cast<bool>(e));
  return llvm::toString(std::move(e));
}

TEST(Generators, GPipeRunsAllForwardsFirst) {
  Schedule s = gen(ScheduleKind::GPipe, 3, 1, 4);
  EXPECT_EQ(computeOrder(s, 1), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(maxInFlight(s), (std::vector<unsigned>{4, 4, 4}));
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
}

TEST(Generators, OneFOneBWarmsUpThenAlternates) {
  Schedule s = gen(ScheduleKind::OneFOneB, 4, 1, 8);
  EXPECT_EQ(computeOrder(s, 0),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(computeOrder(s, 3),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  EXPECT_EQ(maxInFlight(s), (std::vector<unsigned>{4, 3, 2, 1}));
  // Communication: rank 1 receives before it computes, sends after.
  std::string r1;
  for (unsigned i = 0; i < 4; ++i)
    r1 += s.devices[1][i].str() + " ";
  EXPECT_EQ(r1, "recvA0.0>0 F0.0 sendA0.0>2 recvA1.0>0 ");
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
  // Fewer micro-batches than stages.
  Schedule few = gen(ScheduleKind::OneFOneB, 4, 1, 2);
  EXPECT_EQ(computeOrder(few, 0), "F0 F1 B0 B1");
  EXPECT_FALSE(static_cast<bool>(verifySchedule(few)));
}

TEST(Generators, InterleavedFollowsMegatron) {
  Schedule s = gen(ScheduleKind::Interleaved, 2, 2, 4);
  // Rank 0: (p - r - 1) * 2 + (v - 1) * p = 4 warm-up forwards.
  EXPECT_EQ(computeOrder(s, 0),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 "
            "B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(maxInFlight(s), (std::vector<unsigned>{5, 3}));
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
  // Virtual stage 1 (rank 1, chunk 0) sends to virtual stage 2 (rank 0).
  bool found = false;
  for (const Action &a : s.devices[1])
    found |=
        a.kind == ActionKind::SendActivation && a.chunk == 0 && a.peer == 0;
  EXPECT_TRUE(found);
}

TEST(Generators, InterleavedOnOneRankUsesLocalDependencies) {
  Schedule s = gen(ScheduleKind::Interleaved, 1, 3, 2);
  for (const Action &a : s.devices[0])
    EXPECT_FALSE(a.kind == ActionKind::SendActivation ||
                 a.kind == ActionKind::RecvActivation);
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
}

TEST(Generators, ZeroBubbleH1SplitsBackwardAndKeeps1F1BMemory) {
  Schedule s = gen(ScheduleKind::ZBH1, 4, 1, 8);
  // The last rank defers W until more than pp are pending, then keeps the
  // count there: F BI ... F BI W.
  EXPECT_EQ(computeOrder(s, 3).substr(0, 41),
            "F0 BI0 F1 BI1 F2 BI2 F3 BI3 F4 BI4 W0 F5 ");
  EXPECT_EQ(maxInFlight(s), (std::vector<unsigned>{4, 3, 2, 1}));
  // Rank 0 defers its W passes into the cool-down.
  std::string r0 = computeOrder(s, 0);
  EXPECT_EQ(r0.substr(0, 11), "F0 F1 F2 F3");
  EXPECT_EQ(r0.substr(r0.size() - 2), "W7");
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
}

TEST(Generators, PipeDreamStepsAfterEveryMicrobatch) {
  Schedule s = gen(ScheduleKind::PipeDream, 4, 1, 8, {true, 0, true});
  EXPECT_EQ(s.weightVersions, (std::vector<unsigned>{4, 3, 2, 1}));
  unsigned steps = 0, syncs = 0;
  for (const Action &a : s.devices[2]) {
    steps += a.kind == ActionKind::OptimizerStep;
    syncs += a.kind == ActionKind::AllReduce;
  }
  EXPECT_EQ(steps, 8u);
  EXPECT_EQ(syncs, 8u);
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
  Schedule bw = gen(ScheduleKind::PipeDream2BW, 4, 1, 8);
  EXPECT_EQ(bw.weightVersions, (std::vector<unsigned>{2, 2, 2, 2}));
  EXPECT_FALSE(static_cast<bool>(verifySchedule(bw)));
}

TEST(Generators, AsynchronousUpdatesUnderZeroShardEachMicrobatch) {
  // ZeRO-1 under PipeDream and PipeMare: each micro-batch's backward is
  // followed by its reduce-scatter, its update and the gather of the
  // weights the next forward reads (even with overlap_param_gather, which
  // has no next iteration to hide under here); 2BW keeps the synchronous
  // schedules' one sync per step.
  for (ScheduleKind k : {ScheduleKind::PipeDream, ScheduleKind::PipeMare}) {
    ScheduleOptions o{true, 1, true};
    o.overlapParamGather = true;
    Schedule s = gen(k, 2, 1, 4, o);
    EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
    for (const auto &list : s.devices) {
      unsigned updates = 0;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i].kind != ActionKind::Backward)
          continue;
        // (Past the send of the input gradient to the previous stage.)
        size_t j = i + 1;
        if (j < list.size() && list[j].kind == ActionKind::SendGrad)
          ++j;
        ASSERT_LT(j + 2, list.size());
        EXPECT_EQ(list[j].kind, ActionKind::ReduceScatter);
        EXPECT_EQ(list[j + 1].kind, ActionKind::OptimizerStep);
        EXPECT_EQ(list[j + 2].kind, ActionKind::AllGather);
        for (size_t d = j; d <= j + 2; ++d)
          EXPECT_EQ(list[d].mb, list[i].mb);
        ++updates;
      }
      EXPECT_EQ(updates, 4u);
    }
  }
  Schedule bw = gen(ScheduleKind::PipeDream2BW, 2, 1, 4, {true, 1, true});
  for (const auto &list : bw.devices) {
    unsigned scatters = 0, gathers = 0;
    for (const Action &a : list) {
      scatters += a.kind == ActionKind::ReduceScatter;
      gathers += a.kind == ActionKind::AllGather;
    }
    EXPECT_EQ(scatters, 1u);
    EXPECT_EQ(gathers, 1u);
  }
}

TEST(Generators, PipeMareRunsPipeDreamsOrderWithOneVersion) {
  // The same actions as PipeDream; one copy of the weights plus the
  // velocity where a delay is corrected (not on the last stage).
  Schedule pd = gen(ScheduleKind::PipeDream, 4, 1, 8, {true, 0, true});
  Schedule pm = gen(ScheduleKind::PipeMare, 4, 1, 8, {true, 0, true});
  for (unsigned r = 0; r < 4; ++r) {
    ASSERT_EQ(pm.devices[r].size(), pd.devices[r].size());
    for (size_t i = 0; i < pm.devices[r].size(); ++i) {
      EXPECT_EQ(pm.devices[r][i].kind, pd.devices[r][i].kind);
      EXPECT_EQ(pm.devices[r][i].mb, pd.devices[r][i].mb);
    }
  }
  EXPECT_EQ(pm.weightVersions, (std::vector<unsigned>{2, 2, 2, 1}));
  EXPECT_FALSE(static_cast<bool>(verifySchedule(pm)));
  ScheduleOptions plain;
  plain.pipemareCorrection = false;
  EXPECT_EQ(gen(ScheduleKind::PipeMare, 4, 1, 8, plain).weightVersions,
            (std::vector<unsigned>{1, 1, 1, 1}));
  // The delay: 1F1B's warm-up forwards, at most the micro-batches.
  EXPECT_EQ(pipelineDelay(4, 0, 8), 3u);
  EXPECT_EQ(pipelineDelay(4, 0, 2), 2u);
  EXPECT_EQ(pipelineDelay(4, 2, 8), 1u);
  EXPECT_EQ(pipelineDelay(4, 3, 8), 0u);
  EXPECT_EQ(pipelineDelay(1, 0, 8), 0u);
}

TEST(Generators, CollectivesAndZero) {
  Schedule s = gen(ScheduleKind::Interleaved, 2, 2, 4, {true, 0, true});
  // One all-reduce per chunk, each right after that chunk's last backward.
  const auto &l = s.devices[0];
  auto pos = [&](ActionKind k, int chunk) {
    for (unsigned i = 0; i < l.size(); ++i)
      if (l[i].kind == k && l[i].chunk == chunk)
        return static_cast<int>(i);
    return -1;
  };
  EXPECT_GE(pos(ActionKind::AllReduce, 1), 0);
  EXPECT_LT(pos(ActionKind::AllReduce, 1), pos(ActionKind::AllReduce, 0));
  EXPECT_EQ(l.back().kind, ActionKind::OptimizerStep);
  Schedule late = gen(ScheduleKind::OneFOneB, 2, 1, 4, {true, 0, false});
  EXPECT_EQ(late.devices[0][late.devices[0].size() - 2].kind,
            ActionKind::AllReduce);
  Schedule z = gen(ScheduleKind::OneFOneB, 2, 1, 4, {true, 1, true});
  EXPECT_EQ(z.devices[0].back().kind, ActionKind::AllGather);
  EXPECT_FALSE(static_cast<bool>(verifySchedule(z)));
}

TEST(Generators, RejectImpossibleShapes) {
  for (auto [k, pp, v, m] : {std::tuple{ScheduleKind::Interleaved, 4u, 2u, 6u},
                             std::tuple{ScheduleKind::OneFOneB, 4u, 2u, 8u},
                             std::tuple{ScheduleKind::GPipe, 0u, 1u, 8u},
                             std::tuple{ScheduleKind::GPipe, 2u, 1u, 0u}}) {
    auto s = generateSchedule(k, pp, v, m);
    ASSERT_FALSE(static_cast<bool>(s));
    EXPECT_NE(llvm::toString(s.takeError()).find("schedule"),
              std::string::npos);
  }
}

TEST(Generators, EveryKindVerifiesOnManyShapes) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                         ScheduleKind::ZBH1, ScheduleKind::PipeDream,
                         ScheduleKind::PipeDream2BW, ScheduleKind::PipeMare})
    for (unsigned pp : {1u, 2u, 3u, 5u})
      for (unsigned m : {1u, 2u, 7u, 12u}) {
        Schedule s = gen(k, pp, 1, m, {pp % 2 == 1, pp % 3, m % 2 == 0});
        EXPECT_FALSE(static_cast<bool>(verifySchedule(s)))
            << scheduleName(k).str() << " pp=" << pp << " m=" << m;
      }
  for (unsigned pp : {1u, 2u, 4u})
    for (unsigned v : {2u, 3u})
      for (unsigned mult : {1u, 3u}) {
        Schedule s = gen(ScheduleKind::Interleaved, pp, v, pp * mult);
        EXPECT_FALSE(static_cast<bool>(verifySchedule(s)))
            << "pp=" << pp << " v=" << v;
      }
}

//===----------------------------------------------------------------------===//
// The verifier: one test per rule.
//===----------------------------------------------------------------------===//

void erase(Schedule &s, unsigned r, ActionKind k, int mb) {
  auto &l = s.devices[r];
  for (auto it = l.begin(); it != l.end(); ++it)
    if (it->kind == k && it->mb == mb) {
      l.erase(it);
      return;
    }
  ADD_FAILURE() << "no such action";
}

TEST(Verifier, MissingReceive) {
  Schedule s = gen(ScheduleKind::OneFOneB, 2, 1, 2);
  erase(s, 1, ActionKind::RecvActivation, 1);
  EXPECT_NE(verifyError(s).find("input activation not received; put "
                                "recvA1.0>0 before it"),
            std::string::npos);
}

TEST(Verifier, BackwardBeforeForward) {
  Schedule s = gen(ScheduleKind::GPipe, 1, 1, 2);
  std::swap(s.devices[0][0], s.devices[0][2]); // B0 first
  EXPECT_NE(verifyError(s).find("backward before its forward"),
            std::string::npos);
}

TEST(Verifier, WeightGradBeforeInputGrad) {
  Schedule s = gen(ScheduleKind::ZBH1, 1, 1, 1);
  // F0 BI0 W0 OPT -> F0 W0 BI0 OPT
  std::swap(s.devices[0][1], s.devices[0][2]);
  EXPECT_NE(verifyError(s).find("weight gradient before its input gradient"),
            std::string::npos);
}

TEST(Verifier, DuplicateAndMissingCompute) {
  Schedule s = gen(ScheduleKind::GPipe, 1, 1, 2);
  s.devices[0].insert(s.devices[0].begin(), Action(ActionKind::Forward, 0));
  EXPECT_NE(verifyError(s).find("forward appears twice"), std::string::npos);
  Schedule t = gen(ScheduleKind::GPipe, 1, 1, 2);
  erase(t, 0, ActionKind::Backward, 1);
  EXPECT_NE(verifyError(t).find("micro-batch 1 chunk 0 needs one F"),
            std::string::npos);
}

TEST(Verifier, WrongPeerAndEarlySend) {
  Schedule s = gen(ScheduleKind::OneFOneB, 3, 1, 1);
  for (Action &a : s.devices[0])
    if (a.kind == ActionKind::SendActivation)
      a.peer = 2;
  EXPECT_NE(verifyError(s).find("activation must go to rank 1"),
            std::string::npos);
  Schedule t = gen(ScheduleKind::OneFOneB, 2, 1, 1);
  std::swap(t.devices[0][0], t.devices[0][1]); // sendA before F
  EXPECT_NE(verifyError(t).find("sends an activation before its forward"),
            std::string::npos);
}

TEST(Verifier, Deadlock) {
  // Rank 0 waits for the gradient before sending the activation that rank 1
  // needs to produce it.
  Schedule s = gen(ScheduleKind::OneFOneB, 2, 1, 1);
  auto &l = s.devices[0]; // F0 sendA0 recvG0 B0 OPT
  ASSERT_EQ(l[1].kind, ActionKind::SendActivation);
  std::swap(l[1], l[2]);
  EXPECT_NE(verifyError(s).find("schedule deadlocks: rank 0 waits at action 1 "
                                "(recvG0.0>1); rank 1 waits at action 0"),
            std::string::npos);
  // A receive with no send at all.
  Schedule t = gen(ScheduleKind::OneFOneB, 2, 1, 1);
  erase(t, 0, ActionKind::SendActivation, 0);
  EXPECT_NE(verifyError(t).find("deadlocks"), std::string::npos);
}

TEST(Verifier, MemoryLimit) {
  Schedule s = gen(ScheduleKind::GPipe, 2, 1, 8);
  PipelineCosts c;
  c.pp = 2;
  c.microbatches = 8;
  c.stages.resize(2);
  for (unsigned i = 0; i < 2; ++i) {
    c.stages[i].device = i;
    c.stages[i].activationBytes = 1e9;
  }
  c.devices.resize(2);
  c.devices[0].deviceName = "gpu";
  c.devices[0].memoryCapacity = c.devices[1].memoryCapacity = 16e9;
  c.devices[0].staticMemory.weights = 2e9;
  // GPipe holds all 8 micro-batches: 2 + 8 GB.
  EXPECT_EQ(peakMemory(s, c)[0], 10e9);
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s, &c)));
  EXPECT_NE(verifyError(s, &c, 9e9)
                .find("rank 0 (gpu) needs 10.00 GB at its "
                      "peak but has 9.00 GB"),
            std::string::npos);
  // 1F1B holds at most pp: fits in 9 GB.
  Schedule f = gen(ScheduleKind::OneFOneB, 2, 1, 8);
  EXPECT_EQ(peakMemory(f, c)[0], 4e9);
  EXPECT_FALSE(static_cast<bool>(verifySchedule(f, &c, 9e9)));
  // ZB-H1 keeps W stashes between B and W.
  Schedule z = gen(ScheduleKind::ZBH1, 2, 1, 8);
  c.stages[0].stashBytes = 0.5e9;
  EXPECT_LE(peakMemory(z, c)[0], 2e9 + 2 * 1e9 + 2 * 0.5e9);
}

TEST(Schedule, PrintsOneLinePerRank) {
  Schedule s = gen(ScheduleKind::OneFOneB, 2, 1, 1);
  std::string out;
  llvm::raw_string_ostream os(out);
  s.print(os);
  EXPECT_EQ(out, "rank 0: F0.0 sendA0.0>1 recvG0.0>1 B0.0 OPT\n"
                 "rank 1: recvA0.0>0 F0.0 B0.0 sendG0.0>0 OPT\n");
}

} // namespace

namespace {
TEST(Schedule, ActionsForAGlobalRank) {
  Plan p = llvm::cantFail(parsePlan("dp=2,tp=2,pp=2"));
  Schedule s = gen(ScheduleKind::OneFOneB, 2, 1, 2);
  // Rank 6 = (stage 1, d 1, t 0): receives from rank 2 = (stage 0, d 1, t 0).
  std::vector<RankAction> l = actionsForRank(s, p, 6);
  ASSERT_EQ(l.size(), s.devices[1].size());
  EXPECT_EQ(l[0].action.kind, ActionKind::RecvActivation);
  EXPECT_EQ(l[0].peerRank, 2);
  EXPECT_EQ(l[1].action.kind, ActionKind::Forward);
  EXPECT_EQ(l[1].peerRank, -1);
  std::vector<RankAction> r3 = actionsForRank(s, p, 3);
  EXPECT_EQ(r3[1].action.kind, ActionKind::SendActivation);
  EXPECT_EQ(r3[1].peerRank, 7);
  EXPECT_TRUE(actionsForRank(s, p, 8).empty());
}
} // namespace
