//===- ReplicatedTest.cpp - Per-stage replicas: plans and schedules -*- C++ -*-//

#include "lib/Schedule/Schedule.h"
#include "lib/Schedule/Updates.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace distopt;
using namespace distopt::schedule;

namespace {

Schedule genRep(ScheduleKind k, std::vector<unsigned> reps, unsigned m) {
  ScheduleOptions o;
  o.replicas = reps;
  auto s = generateSchedule(k, reps.size(), 1, m, o);
  EXPECT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  return s ? std::move(*s) : Schedule();
}

std::string computeOrder(const Schedule &s, unsigned l) {
  std::string out;
  for (const Action &a : s.devices[l])
    if (a.kind == ActionKind::Forward || a.kind == ActionKind::Backward)
      out += (out.empty() ? "" : " ") + actionName(a.kind).str() +
             std::to_string(a.mb);
  return out;
}

std::string planError(llvm::StringRef spec) {
  auto p = parsePlan(spec);
  EXPECT_FALSE(static_cast<bool>(p)) << spec.str();
  return p ? "" : llvm::toString(p.takeError());
}

TEST(ReplicatedPlan, ParsesPrintsAndCountsDevices) {
  Plan p = llvm::cantFail(parsePlan("pp=2,replicas=15/1,mbs=64,schedule=1f1b"));
  EXPECT_EQ(p.replicas, (std::vector<unsigned>{15, 1}));
  EXPECT_EQ(p.numDevices(), 16u);
  EXPECT_EQ(p.numSlots(), 16u);
  EXPECT_EQ(p.replicasOf(0), 15u);
  EXPECT_EQ(p.firstSlot(1), 15u);
  EXPECT_NE(p.str().find(",replicas=15/1"), std::string::npos);
  Plan q = llvm::cantFail(parsePlan(p.str()));
  EXPECT_EQ(q.str(), p.str());
  // pp follows from the replica list when not given.
  EXPECT_EQ(llvm::cantFail(parsePlan("replicas=3/1/2,tp=2")).pp, 3u);
  EXPECT_EQ(llvm::cantFail(parsePlan("replicas=3/1/2,tp=2")).numDevices(),
            12u);
  // Without replicas nothing changes: dp everywhere.
  Plan d = llvm::cantFail(parsePlan("dp=4,pp=2"));
  EXPECT_EQ(d.str().find("replicas"), std::string::npos);
  EXPECT_EQ(d.firstSlot(1), 4u);
  EXPECT_EQ(d.numDevices(), 8u);
}

TEST(ReplicatedPlan, ParseErrors) {
  EXPECT_NE(planError("pp=3,replicas=2/1").find("lists 2 counts but pp=3"),
            std::string::npos);
  EXPECT_NE(planError("replicas=0/1").find("from 1 to 32767"),
            std::string::npos);
  EXPECT_NE(planError("replicas=x/1").find("replica count 'x'"),
            std::string::npos);
  EXPECT_NE(planError("dp=2,replicas=2/1").find("dp and replicas both given"),
            std::string::npos);
  EXPECT_NE(planError("chunks=2,replicas=2/1").find("needs chunks=1"),
            std::string::npos);
}

TEST(ReplicatedPlan, RanksAreStageMajorSlots) {
  Plan p = llvm::cantFail(parsePlan("tp=2,replicas=3/1"));
  // slot(s, k) = sum_{s'<s} r_s' + k; rank = t + tp * slot.
  EXPECT_EQ(p.globalRank(0, 2, 1), 5u);
  EXPECT_EQ(p.globalRank(1, 0, 0), 6u);
  EXPECT_EQ(p.globalRank(1, 0, 1), 7u);
}

TEST(ReplicatedSchedule, AllOnesIsPlainOneFOneB) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                         ScheduleKind::PipeDream}) {
    Schedule plain = llvm::cantFail(generateSchedule(k, 4, 1, 7));
    Schedule rep = genRep(k, {1, 1, 1, 1}, 7);
    ASSERT_EQ(plain.devices.size(), rep.devices.size());
    for (unsigned r = 0; r < 4; ++r)
      EXPECT_EQ(plain.devices[r], rep.devices[r]) << scheduleName(k).str() << r;
    EXPECT_EQ(plain.weightVersions, rep.weightVersions);
  }
}

TEST(ReplicatedSchedule, FifteenOneRoundRobin) {
  Schedule s = genRep(ScheduleKind::OneFOneB, {15, 1}, 30);
  ASSERT_EQ(s.devices.size(), 16u);
  // Slot k of stage 0 runs k and k + 15, two in flight (PipeDream's NOAM,
  // ceil(16 / 15)); the single last-stage slot alternates.
  EXPECT_EQ(computeOrder(s, 0), "F0 F15 B0 B15");
  EXPECT_EQ(computeOrder(s, 14), "F14 F29 B14 B29");
  EXPECT_EQ(computeOrder(s, 15).substr(0, 17), "F0 B0 F1 B1 F2 B2");
  EXPECT_EQ(maxInFlight(s)[3], 2u);
  EXPECT_EQ(maxInFlight(s)[15], 1u);
  // Peers: activations of micro-batch 17 come from slot 2, gradients of
  // micro-batch 3 go to slot 3.
  bool recv17 = false, send3 = false;
  for (const Action &a : s.devices[15]) {
    recv17 |= a.kind == ActionKind::RecvActivation && a.mb == 17 && a.peer == 2;
    send3 |= a.kind == ActionKind::SendGrad && a.mb == 3 && a.peer == 3;
  }
  EXPECT_TRUE(recv17);
  EXPECT_TRUE(send3);
  // Stage 0 syncs over its 15 replicas; stage 1 has nobody to sync with.
  auto ar = [&](unsigned l) {
    return llvm::count_if(s.devices[l], [](const Action &a) {
      return a.kind == ActionKind::AllReduce;
    });
  };
  EXPECT_EQ(ar(0), 1);
  EXPECT_EQ(ar(15), 0);
  EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
  std::string text;
  llvm::raw_string_ostream os(text);
  s.print(os);
  EXPECT_NE(text.find("slot 15 (stage 1 replica 0): recvA0.0>0 F0.0"),
            std::string::npos);
}

TEST(ReplicatedSchedule, EveryShapeVerifiesWithoutDeadlock) {
  std::vector<std::vector<unsigned>> shapes = {
      {2, 1},    {1, 2},       {3, 1},    {15, 1},   {1, 3, 1},
      {2, 3, 1}, {4, 2, 2, 1}, {1, 1, 4}, {3, 2, 3}, {5, 1, 2, 3}};
  for (ScheduleKind k :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::PipeDream,
        ScheduleKind::PipeDream2BW, ScheduleKind::PipeMare})
    for (const auto &reps : shapes)
      for (unsigned m : {15u, 30u, 31u, 60u}) {
        bool even = true;
        for (unsigned r : reps)
          even &= m % r == 0 && r <= m;
        ScheduleOptions o;
        o.replicas = reps;
        auto s = generateSchedule(k, reps.size(), 1, m, o);
        if (isAsync(k) && !even) {
          // Per-micro-batch syncs need equal shares.
          ASSERT_FALSE(static_cast<bool>(s));
          EXPECT_NE(llvm::toString(s.takeError()).find("do not split evenly"),
                    std::string::npos);
          continue;
        }
        ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
        llvm::Error e = verifySchedule(*s);
        EXPECT_FALSE(static_cast<bool>(e))
            << scheduleName(k).str() << " m=" << m << " " << reps.size() << ": "
            << llvm::toString(std::move(e));
        // Every (stage, micro-batch) is computed exactly once overall.
        std::vector<unsigned> fwd(reps.size() * m, 0);
        for (unsigned l = 0; l < s->devices.size(); ++l)
          for (const Action &a : s->devices[l])
            if (a.kind == ActionKind::Forward)
              ++fwd[s->stageOfList(l) * m + a.mb];
        EXPECT_EQ(std::count(fwd.begin(), fwd.end(), 1u),
                  static_cast<long>(fwd.size()));
      }
}

TEST(ReplicatedSchedule, AsyncUpdatesOncePerRound) {
  // replicas=2/1, 4 micro-batches: rounds of lcm(2, 1) = 2. Each replica
  // of stage 0 syncs and updates after each of its backwards (one per
  // round), the lone stage-1 list after micro-batches 1 and 3.
  for (ScheduleKind k : {ScheduleKind::PipeDream, ScheduleKind::PipeMare}) {
    Schedule s = genRep(k, {2, 1}, 4);
    EXPECT_EQ(updateRound(s), 2u);
    auto updates = [&](unsigned l) {
      std::string out;
      for (const Action &a : s.devices[l])
        if (a.kind == ActionKind::AllReduce ||
            a.kind == ActionKind::OptimizerStep)
          out += (out.empty() ? "" : " ") + a.str();
      return out;
    };
    EXPECT_EQ(updates(0), "AR0.0 OPT0.0 AR2.0 OPT2.0");
    EXPECT_EQ(updates(1), "AR1.0 OPT1.0 AR3.0 OPT3.0");
    EXPECT_EQ(updates(2), "OPT1.0 OPT3.0");
    // Stage 0's second round computes before the first round's update.
    EXPECT_EQ(updateDelay(s, 0), 1u);
    EXPECT_EQ(updateDelay(s, 1), 1u);
    EXPECT_EQ(updateDelay(s, 2), 0u);
    EXPECT_FALSE(static_cast<bool>(verifySchedule(s)));
  }
  // PipeMare keeps the velocity beside the weights of a delayed list.
  EXPECT_EQ(genRep(ScheduleKind::PipeMare, {2, 1}, 4).weightVersions,
            (std::vector<unsigned>{2, 2, 1}));
  // Rounds are the lcm of the counts; 2BW and the synchronous schedules
  // update once per step.
  EXPECT_EQ(updateRound(genRep(ScheduleKind::PipeDream, {2, 3}, 6)), 6u);
  EXPECT_EQ(updateRound(genRep(ScheduleKind::PipeDream2BW, {2, 3}, 6)), 1u);
  // Without replicas the delay is 1F1B's warm-up, min(pp - s - 1, m - 1).
  Schedule plain =
      llvm::cantFail(generateSchedule(ScheduleKind::PipeDream, 4, 1, 2));
  EXPECT_EQ(updateRound(plain), 1u);
  for (unsigned r = 0; r < 4; ++r)
    EXPECT_EQ(updateDelay(plain, r), std::min(3u - r, 1u)) << r;
}

TEST(ReplicatedSchedule, GenerationErrors) {
  ScheduleOptions o;
  o.replicas = {4, 1};
  auto few = generateSchedule(ScheduleKind::OneFOneB, 2, 1, 3, o);
  ASSERT_FALSE(static_cast<bool>(few));
  EXPECT_NE(llvm::toString(few.takeError()).find("stage 0 has 4 replicas"),
            std::string::npos);
  auto zb = generateSchedule(ScheduleKind::ZBH1, 2, 1, 8, o);
  ASSERT_FALSE(static_cast<bool>(zb));
  EXPECT_NE(llvm::toString(zb.takeError()).find("gpipe, 1f1b"),
            std::string::npos);
  auto count = generateSchedule(ScheduleKind::OneFOneB, 3, 1, 8, o);
  ASSERT_FALSE(static_cast<bool>(count));
  EXPECT_NE(llvm::toString(count.takeError()).find("2 replica counts for pp=3"),
            std::string::npos);
}

TEST(ReplicatedVerifier, CatchesWrongSlotsPeersAndDeadlocks) {
  Schedule good = genRep(ScheduleKind::OneFOneB, {2, 1}, 4);
  auto err = [](const Schedule &s) {
    llvm::Error e = verifySchedule(s);
    EXPECT_TRUE(static_cast<bool>(e));
    return llvm::toString(std::move(e));
  };
  // A micro-batch on the wrong replica.
  Schedule wrong = good;
  for (Action &a : wrong.devices[0])
    if (a.mb == 0)
      a.mb = 1;
  EXPECT_NE(err(wrong).find("belongs to list 1 of stage 0"), std::string::npos);
  // A send to the wrong peer slot.
  Schedule peer = good;
  for (Action &a : peer.devices[2])
    if (a.kind == ActionKind::SendGrad && a.mb == 1)
      a.peer = 0;
  EXPECT_NE(err(peer).find("gradient must go to rank 1"), std::string::npos);
  // Receiving a gradient before sending the activation it depends on.
  Schedule dead = good;
  auto &l0 = dead.devices[0];
  auto f = std::find_if(l0.begin(), l0.end(), [](const Action &a) {
    return a.kind == ActionKind::SendActivation;
  });
  auto g = std::find_if(l0.begin(), l0.end(), [](const Action &a) {
    return a.kind == ActionKind::RecvGrad;
  });
  ASSERT_TRUE(f != l0.end() && g != l0.end());
  Action send = *f;
  l0.erase(f);
  g = std::find_if(l0.begin(), l0.end(), [](const Action &a) {
    return a.kind == ActionKind::RecvGrad;
  });
  l0.insert(g + 2, send); // after recvG and B
  EXPECT_NE(err(dead).find("deadlocks"), std::string::npos);
  // A collective is a rendezvous of the stage's replicas: slot 0 syncing
  // before its first forward waits for slot 1's sync, which follows slot
  // 1's backwards, which need slot 0's activations.
  Schedule early = good;
  auto &e0 = early.devices[0];
  auto ar = std::find_if(e0.begin(), e0.end(), [](const Action &a) {
    return a.kind == ActionKind::AllReduce;
  });
  ASSERT_TRUE(ar != e0.end());
  Action sync0 = *ar;
  e0.erase(ar);
  e0.insert(e0.begin(), sync0);
  std::string msg = err(early);
  EXPECT_NE(msg.find("deadlocks: rank 0 waits at action 0 (AR.0)"),
            std::string::npos)
      << msg;
  // Replicas of a stage must sync equally often.
  Schedule sync = good;
  sync.devices[1].push_back({ActionKind::AllReduce, -1, 0, -1});
  EXPECT_NE(err(sync).find("must sync equally often"), std::string::npos);
  // Broken slot tables.
  Schedule tables = good;
  tables.listStage[2] = 0;
  EXPECT_NE(err(tables).find("wrong stage"), std::string::npos);
}

TEST(ReplicatedSchedule, ActionsForRankMapsSlots) {
  Plan p = llvm::cantFail(parsePlan("tp=2,replicas=3/1,schedule=1f1b"));
  Schedule s = genRep(ScheduleKind::OneFOneB, {3, 1}, 6);
  // Rank 5 = tensor rank 1 of slot 2 (stage 0, replica 2): micro-batches
  // 2 and 5, sent to rank 1 + 2 * 3 = 7.
  std::vector<RankAction> l = actionsForRank(s, p, 5);
  ASSERT_FALSE(l.empty());
  bool sawSend = false;
  for (const RankAction &ra : l) {
    if (ra.action.kind == ActionKind::Forward) {
      EXPECT_EQ(ra.action.mb % 3, 2);
    }
    if (ra.action.kind == ActionKind::SendActivation) {
      EXPECT_EQ(ra.peerRank, 7);
      sawSend = true;
    }
  }
  EXPECT_TRUE(sawSend);
  // Rank 6 (slot 3, the last stage) receives from ranks 0, 2, 4.
  std::vector<int> from;
  for (const RankAction &ra : actionsForRank(s, p, 6))
    if (ra.action.kind == ActionKind::RecvActivation)
      from.push_back(ra.peerRank);
  EXPECT_EQ(from, (std::vector<int>{0, 2, 4, 0, 2, 4}));
  EXPECT_TRUE(actionsForRank(s, p, 8).empty());
}

} // namespace
