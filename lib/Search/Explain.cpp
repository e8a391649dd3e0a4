//===- Explain.cpp - Explanation and summary of a search --------*- C++ -*-===//
//
// Part of DistOpt. The --dist-explain table, why the winner wins, and the
// printed summary of a search.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/SearchImpl.h"
#include "lib/Sim/Report.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;
using namespace distopt;
using namespace distopt::search;
using distopt::search::detail::humanBytes;

std::string distopt::search::planLabel(const schedule::Plan &p,
                                      bool training) {
  std::string s = formatv("dp={0} tp={1} pp={2} mbs={3}", p.dp, p.tp, p.pp,
                          p.mbs)
                      .str();
  if (p.cp > 1)
    s += formatv(" cp={0}", p.cp).str();
  if (p.ep > 1)
    s += formatv(" ep={0}", p.ep).str();
  if (p.sp && p.tp > 1)
    s += " sp";
  if (!training)
    return s;
  if (p.replicated()) {
    s = "replicas=";
    for (unsigned i = 0; i < p.replicas.size(); ++i)
      s += (i ? "/" : "") + std::to_string(p.replicas[i]);
    s += formatv(" tp={0} pp={1} mbs={2}", p.tp, p.pp, p.mbs).str();
  }
  if (p.pp > 1)
    s += " " + schedule::scheduleName(p.schedule).str();
  if (p.chunks > 1)
    s += formatv("x{0}", p.chunks).str();
  if (p.recompute != cost::Recompute::None)
    s += " rc=" + cost::recomputeName(p.recompute).str();
  if (p.zero)
    s += formatv(" z{0}", p.zero).str();
  return s;
}

/// Short plan label for the table.
static std::string label(const Candidate &c, Mode mode) {
  return planLabel(c.sim.plan, mode != Mode::Infer);
}

static double timeOf(const Candidate &c) { return c.sim.result.iterationTime; }

/// How the winner compares with \p o on the objective the search ranks by
/// (and, on a tie, on the other one, which broke it).
static std::string objectiveComparison(const Candidate &w, const Candidate &o,
                                       const SearchResult &r) {
  std::string other = label(o, r.mode);
  if (r.mode == Mode::Train)
    return formatv("{0:F1}% faster than {1}",
                   100 * (timeOf(o) - timeOf(w)) / std::max(timeOf(o), 1e-30),
                   other)
        .str();
  double a = objectiveTime(w, r.mode, r.objective),
         b = objectiveTime(o, r.mode, r.objective);
  bool latency = r.objective == InferObjective::Latency;
  if (std::fabs(a - b) > 1e-9 * std::max(a, b))
    return latency ? formatv("{0:F1}% lower latency than {1} ({2:F5} s vs "
                             "{3:F5} s per batch)",
                             100 * (b - a) / b, other, a, b)
                         .str()
                   : formatv("{0:F1}% higher stream throughput than {1} "
                             "({2:F1} vs {3:F1} samples/s)",
                             100 * (a < b ? b / a - 1 : 0), other,
                             w.streamThroughput, o.streamThroughput)
                         .str();
  return latency
             ? formatv("the same latency as {0}, and {1:F1}% higher stream "
                       "throughput (the tie-break)",
                       other,
                       100 * (w.streamThroughput / o.streamThroughput - 1))
                   .str()
             : formatv("the same stream throughput as {0}, and {1:F1}% lower "
                       "latency (the tie-break)",
                       other, 100 * (o.latency - w.latency) / o.latency)
                   .str();
}

/// Why the winner beats \p other, from the largest differences.
static std::string reason(const Candidate &w, const Candidate &o,
                          const SearchResult &r) {
  std::string s = objectiveComparison(w, o, r);
  struct Part {
    const char *what;
    double delta;
  };
  const Breakdown &a = w.breakdown, &b = o.breakdown;
  Part parts[] = {
      {"compute on the busiest device", b.compute - a.compute},
      {"pipeline bubble and exposed communication", b.bubble - a.bubble},
      {"data-parallel gradient sync", b.dpSync - a.dpSync},
      {"stage-boundary transfers", b.p2p - a.p2p},
      {"waiting for input (data stall)", b.dataStall - a.dataStall}};
  std::sort(std::begin(parts), std::end(parts),
            [](const Part &x, const Part &y) {
              return std::fabs(x.delta) > std::fabs(y.delta);
            });
  s += ": ";
  unsigned shown = 0;
  for (const Part &p : parts) {
    if (shown == 2 || std::fabs(p.delta) < 1e-12)
      break;
    s += formatv("{0}{1} {2} ms {3}", shown ? ", " : "", p.what,
                 formatv("{0:F2}", std::fabs(p.delta) * 1e3).str(),
                 p.delta > 0 ? "less" : "more")
             .str();
    ++shown;
  }
  if (!shown)
    s += "the same cost split";
  return s;
}

std::string search::rankedBy(const SearchResult &r) {
  if (!r.rankedByOverride.empty())
    return r.rankedByOverride;
  if (r.mode != Mode::Infer)
    return "iteration time";
  return r.objective == InferObjective::Latency
             ? "latency (ties: stream throughput)"
             : "stream throughput (ties: latency)";
}

std::string search::whyBest(const SearchResult &r) {
  if (r.alternatives.empty())
    return "it is the only plan that fits";
  if (r.expectedSamplesPerSecond.size() > 1) {
    double a = r.expectedSamplesPerSecond[0], b = r.expectedSamplesPerSecond[1];
    return formatv("{0:F1}% more expected samples/s under preemptions than "
                   "{1} ({2:F2} vs {3:F2})",
                   100 * (a / b - 1), label(r.alternatives.front(), r.mode), a,
                   b)
        .str();
  }
  return reason(r.best, r.alternatives.front(), r);
}

void search::printExplain(const SearchResult &r, raw_ostream &os) {
  bool infer = r.mode == Mode::Infer;
  os << "explain: the best plans, ranked by " << rankedBy(r)
     << " (per iteration, on the busiest device)\n";
  os << formatv("  {0,-4} {1,-42} {2,11} {3,11} {4,10} {5,10} {6,10} {7,10} "
                "{8,21}\n",
                "rank", "plan", infer ? "latency s" : "iter s",
                infer ? "stream/s" : "samples/s", "compute", "comm",
                "dp-sync", "bubble", "memory/device");
  std::vector<const Candidate *> rows{&r.best};
  for (const Candidate &c : r.alternatives)
    rows.push_back(&c);
  for (auto [i, c] : llvm::enumerate(rows)) {
    const Breakdown &b = c->breakdown;
    double peak = 0, cap = 0;
    for (unsigned s = 0; s < c->sim.result.peakMemoryBytes.size(); ++s)
      if (c->sim.result.peakMemoryBytes[s] >= peak) {
        peak = c->sim.result.peakMemoryBytes[s];
        cap = s < c->sim.costs.devices.size()
                  ? c->sim.costs.devices[s].memoryCapacity
                  : 0;
      }
    os << formatv("  {0,-4} {1,-42} {2,11:F5} {3,11:F1} {4,10} {5,10} {6,10} "
                  "{7,10} {8,21}\n",
                  i + 1, label(*c, r.mode), timeOf(*c),
                  infer ? c->streamThroughput : c->sim.result.samplesPerSecond,
                  formatv("{0:F2}ms", b.compute * 1e3).str(),
                  formatv("{0:F2}ms", b.p2p * 1e3).str(),
                  formatv("{0:F2}ms", b.dpSync * 1e3).str(),
                  formatv("{0:F1}%", 100 * c->sim.result.bubbleFraction).str(),
                  (humanBytes(peak) + " / " + humanBytes(cap)));
  }
  const schedule::PipelineCosts &pc = r.best.sim.costs;
  os << "  stages of the winner:";
  const schedule::Plan &wp = r.best.sim.plan;
  for (const schedule::StageCost &st : pc.stages) {
    // Replicated plans: the stage's replicas and its first slot's device.
    unsigned list = wp.replicated() ? wp.firstSlot(st.device) : st.device;
    os << formatv(" [{0}: layers {1}-{2}{3} on {4}]", st.device, st.layerBegin,
                  st.layerEnd - 1,
                  wp.replicated()
                      ? formatv(" x{0} replicas", wp.replicasOf(st.device))
                            .str()
                      : std::string(),
                  list < pc.devices.size() ? pc.devices[list].deviceName
                                           : std::string("?"));
  }
  os << "\n";
  if (wp.replicated()) {
    os << "  replicas per stage:";
    for (unsigned rep : wp.replicas)
      os << " " << rep;
    os << " (micro-batch m runs on replica m mod r of each stage)\n";
  }
  for (auto [rank, shares] : llvm::enumerate(r.best.replicaMicrobatches)) {
    if (wp.replicated())
      break; // round-robin, described above
    if (shares.empty() ||
        llvm::all_of(shares, [&](unsigned k) { return k == shares.front(); }))
      continue;
    os << "  batch split of rank " << rank
       << " (micro-batches per data-parallel replica):";
    for (unsigned k : shares)
      os << " " << k;
    os << "\n";
  }
  if (const std::optional<sim::InputStall> &in = r.best.sim.result.input)
    os << formatv("  input of the winner: {0} data stall, {1:F2} ms per "
                  "iteration (preprocessing {2:F2} ms, fetch {3:F2} ms) on "
                  "{4:F2} ms of device time\n",
                  in->stalled() ? in->bound() : StringRef("no"),
                  in->stall() * 1e3, in->preprocessStall * 1e3,
                  in->fetchStall * 1e3, in->deviceTime * 1e3);
  os << "  why: " << whyBest(r) << "\n";
  const SearchStats &s = r.stats;
  os << formatv("  search: {0} candidates weighed, {1} dominated, {2} over "
                "memory, {3} cut by the lower bound, {4} partitions, {9} "
                "with per-stage replicas, {5} "
                "simulated, {6}, {7:F3} s ({8:F3} s CPU)\n",
                s.candidates, s.dominated, s.memoryPruned, s.boundPruned,
                s.partitions, s.simulated,
                s.exact ? std::string("exact (bound-proven)")
                        : formatv("bounded (simulation limit reached; "
                                  "within {0:F1}% of optimal)",
                                  100 * s.gap)
                              .str(),
                s.seconds, s.cpuSeconds, s.replicated);
}

void search::printSearchSummary(const SearchResult &r,
                                const cluster::Cluster &c, raw_ostream &os) {
  const Candidate &b = r.best;
  const schedule::Plan &p = b.sim.plan;
  os << "search: chose " << p.str() << " on " << c.name << " ("
     << c.numDevices() << " devices)";
  os << formatv(" from {0} candidates in {1:F3} s\n", r.stats.candidates,
                r.stats.seconds);
  printDevicesUsed(r, os);
  if (r.mode == Mode::Infer) {
    os << formatv("  latency          {0:F5} s per batch of {1}\n", b.latency,
                  p.globalBatch);
    os << formatv("  stream           {0:F2} samples/s\n", b.streamThroughput);
  } else {
    os << formatv("  iteration time   {0:F4} s\n", b.sim.result.iterationTime);
    os << formatv("  throughput       {0:F2} samples/s\n",
                  b.sim.result.samplesPerSecond);
    os << formatv("  TFLOP/s/device   {0:F1}\n", b.sim.result.tflopsPerDevice);
    os << formatv("  bubble           {0:F1}%\n",
                  100 * b.sim.result.bubbleFraction);
    if (b.sim.result.input)
      os << sim::describeInputStall(*b.sim.result.input);
  }
  for (unsigned s = 0; s < b.sim.result.peakMemoryBytes.size(); ++s)
    os << (p.replicated() ? "  slot " : "  stage ") << s << " peak memory "
       << humanBytes(b.sim.result.peakMemoryBytes[s]) << " ("
       << (s < b.sim.costs.devices.size() ? b.sim.costs.devices[s].deviceName
                                          : std::string("?"))
       << ")\n";
  sim::printOffload(p, b.sim.costs, os);
  printPinnedSides(r.pinned, os);
  printDeviceAdvice(r, os);
}

/// "0-3, 5-5" for layer ranges.
static std::string
layerRanges(llvm::ArrayRef<std::pair<unsigned, unsigned>> ranges) {
  std::string s;
  for (auto [first, last] : ranges)
    s += formatv("{0}{1}-{2}", s.empty() ? "" : ", ", first, last).str();
  return s.empty() ? "none" : s;
}

std::string search::describePinnedSide(const PinnedSide &s) {
  return "layers " + layerRanges(s.layers) + " run there (pinned " +
         layerRanges(s.pinned) + "); " + humanBytes(s.linkBytes) +
         " cross its link per iteration; peak memory " +
         humanBytes(s.peakMemory) + " of " + humanBytes(s.memoryCapacity);
}

void search::printPinnedSides(llvm::ArrayRef<PinnedSide> sides,
                              raw_ostream &os) {
  for (const PinnedSide &s : sides)
    os << "  pinned to " << s.kind << ": " << describePinnedSide(s) << "\n";
}
