//===- HtmlReport.cpp - A plan's report as one HTML page --------*- C++ -*-===//
//
// Part of DistOpt. Writes a Report (lib/Search/Report.h) as a page that
// needs nothing else: CSS and SVG inline, no scripts, no fonts, no links
// out. Every figure on it is one of the Report's; every name from the model
// or the cluster is escaped.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/Report.h"
#include "lib/Search/SearchImpl.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <set>

using namespace llvm;
using namespace distopt;
using namespace distopt::search;
using distopt::search::detail::humanBytes;

std::string search::escapeHtml(StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

namespace {
/// The parts of a peak, in the order the bars stack them.
struct MemoryPart {
  const char *name, *colour;
  double schedule::PeakMemory::*field = nullptr;
  double cost::MemoryBreakdown::*fixed = nullptr;
  double of(const schedule::PeakMemory &m) const {
    return field ? m.*field : m.fixed.*fixed;
  }
};
const MemoryPart kParts[] = {
    {"weights", "#4e79a7", nullptr, &cost::MemoryBreakdown::weights},
    {"gradients", "#f28e2b", nullptr, &cost::MemoryBreakdown::grads},
    {"optimizer state", "#59a14f", nullptr, &cost::MemoryBreakdown::optimizer},
    {"stashed weight versions", "#b07aa1", nullptr,
     &cost::MemoryBreakdown::weightStash},
    {"ZeRO-3 gather buffers", "#76b7b2", nullptr,
     &cost::MemoryBreakdown::gatherBuffers},
    {"activations", "#e15759", &schedule::PeakMemory::activations, nullptr},
    {"activation stash (B to W)", "#ff9da7",
     &schedule::PeakMemory::activationStash, nullptr},
    {"backward working set", "#9c755f", &schedule::PeakMemory::working,
     nullptr},
};

std::string ms(double seconds) {
  return formatv("{0:F3} ms", seconds * 1e3).str();
}

/// The page's writer: the Report and the stream.
class Page {
public:
  Page(const Report &r, const sim::SimResult *timeline, raw_ostream &os)
      : r(r), c(r.chosen), p(r.chosen.sim.plan), timeline(timeline), os(os) {}

  void write() {
    head();
    summary();
    planSection();
    stagesSection();
    predictionSection();
    timelineSection();
    memorySection();
    kindsSection();
    if (r.searched)
      searchSections();
    if (r.baseline)
      baselineSection();
    os << "<footer>Written by dist-opt --dist-report-html. Figures are the "
          "cost model's and the simulator's predictions "
          "(docs/report-format.md).</footer>\n</body>\n</html>\n";
  }

private:
  const Report &r;
  const CandidateReport &c;
  const schedule::Plan &p;
  const sim::SimResult *timeline;
  raw_ostream &os;

  bool infer() const { return c.mode == Mode::Infer; }

  void row(StringRef key, StringRef value) {
    os << "<tr><th>" << escapeHtml(key) << "</th><td>" << escapeHtml(value)
       << "</td></tr>\n";
  }

  void head() {
    os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
          "charset=\"utf-8\">\n<title>DistOpt plan: "
       << escapeHtml(r.model) << "</title>\n";
    os << R"(<style>
body{font-family:sans-serif;margin:24px;color:#222;max-width:1500px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:13px;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{width:230px}code{background:#f4f4f4;padding:1px 4px}
.warn{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px}
.why{background:#eef6ee;border:1px solid #9c9;padding:6px 10px}
.scroll{overflow-x:auto}.swatch{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle;border:1px solid #999}
tr.best td{font-weight:bold}footer{margin-top:32px;color:#777;font-size:12px}
</style>
</head>
<body>
)";
  }

  void summary() {
    os << "<h1>DistOpt plan: " << escapeHtml(r.model) << "</h1>\n<p>";
    os << (infer() ? "Inference (" +
                         std::string(schedule::objectiveName(r.objective)) + ")"
                   : std::string("Training"))
       << " on <b>" << escapeHtml(r.cluster) << "</b> (" << r.clusterDevices
       << " devices";
    if (p.numDevices() < r.clusterDevices)
      os << ", " << p.numDevices() << " used, "
         << r.clusterDevices - p.numDevices() << " idle";
    os << "). ";
    if (r.searched)
      os << formatv("Chosen by search (--dist-search) from {0} candidates "
                    "in {1:F3} s.",
                    r.stats.candidates, r.stats.seconds);
    else
      os << "A given plan (--dist-plan), simulated.";
    os << "</p>\n<p>Plan: <code>" << escapeHtml(p.str()) << "</code></p>\n";
    if (!c.sim.fitsMemory)
      os << "<p class=\"warn\">The plan does not fit in device memory: "
         << escapeHtml(c.sim.memoryProblem) << "</p>\n";
  }

  void planSection() {
    os << "<h2 id=\"plan\">Plan</h2>\n<table class=\"kv\">\n";
    row("data-parallel degree (dp)", std::to_string(p.dp));
    row("tensor-parallel degree (tp)", std::to_string(p.tp));
    row("pipeline stages (pp)", std::to_string(p.pp));
    row("context-parallel degree (cp)", std::to_string(p.cp));
    row("expert-parallel degree (ep)", std::to_string(p.ep));
    row("sequence parallelism", p.sp && p.tp > 1 ? "on" : "off");
    if (p.replicated()) {
      std::string reps;
      for (unsigned k : p.replicas)
        reps += (reps.empty() ? "" : " / ") + std::to_string(k);
      row("replicas per stage", reps);
    }
    row("devices", std::to_string(p.numDevices()));
    row("micro-batch size (mbs)", std::to_string(p.mbs));
    row("micro-batches per iteration", std::to_string(p.numMicrobatches));
    row("global batch", std::to_string(p.globalBatch) + " samples");
    if (infer()) {
      row("schedule", "forward stream");
    } else {
      row("schedule", schedule::scheduleName(p.schedule));
      row("chunks per pipeline rank", std::to_string(p.chunks));
      row("recomputation", cost::recomputeName(p.recompute));
      row("ZeRO stage", std::to_string(p.zero));
      row("optimizer (memory)", cost::optimizerName(p.optimizer));
    }
    if (!p.offload.any()) {
      row("offload", "none (weights, gradients, optimizer state and "
                     "activations stay in device memory)");
    } else {
      // The tiers of the rank that offloads the most.
      std::array<double, cluster::kNumTiers> most{};
      for (const sim::ListReport &l : c.sim.lists) {
        std::array<double, cluster::kNumTiers> t = l.tierBytes();
        if (t[0] + t[1] + t[2] > most[0] + most[1] + most[2])
          most = t;
      }
      row("offload",
          formatv("{0} (per device: host {1:F2} GB, nvme {2:F2} GB, hdd "
                  "{3:F2} GB)",
                  p.offload.str(), most[0] / 1e9, most[1] / 1e9, most[2] / 1e9)
              .str());
    }
    row("compute type", cluster::dtypeName(p.dtype));
    row("matmul precision", c.sim.matmulDtype);
    row("fused attention", p.fusedAttention ? "yes" : "no");
    if (p.tp > 1)
      row("TP communication overlap", p.tpOverlap ? "on" : "off");
    if (p.zero > 0)
      row("ZeRO all-gather overlap", p.overlapParamGather ? "on" : "off");
    if (p.ep > 1)
      row("expert imbalance", formatv("{0:F2}", p.expertImbalance).str());
    os << "</table>\n";
  }

  /// The device kinds of \p ranks, with counts ("a100-80gb x4").
  std::string kindsOf(ArrayRef<unsigned> ranks) const {
    std::map<std::string, unsigned> n;
    for (unsigned rank : ranks)
      if (rank < r.deviceKinds.size())
        ++n[r.deviceKinds[rank]];
    std::string s;
    for (auto &[kind, k] : n)
      s += (s.empty() ? "" : ", ") + kind + " x" + std::to_string(k);
    return s;
  }

  void stagesSection() {
    os << "<h2 id=\"stages\">Stages and placement</h2>\n<table>\n<tr><th>"
          "stage</th><th>pipeline rank</th><th>chunk</th><th>layers</th>"
          "<th>ops</th><th>replicas</th><th>devices (global ranks)</th>"
          "<th>device kind</th></tr>\n";
    for (const sim::StageReport &s : c.sim.stages) {
      std::string layers =
          s.layerEnd > s.layerBegin
              ? formatv("{0}-{1}", s.layerBegin, s.layerEnd - 1).str()
              : std::string("none");
      if (s.layerNames)
        layers +=
            " (" + s.layerNames->first + " .. " + s.layerNames->second + ")";
      std::string ops =
          s.opRange ? s.opRange->first + " .. " + s.opRange->second : "";
      os << "<tr><td>stage " << s.stage << "</td><td class=\"num\">"
         << s.pipelineRank << "</td><td class=\"num\">" << s.chunk
         << "</td><td>" << escapeHtml(layers) << "</td><td>" << escapeHtml(ops)
         << "</td><td class=\"num\">" << s.replicas << "</td><td>"
         << escapeHtml(sim::numberRuns(s.devices)) << "</td><td>"
         << escapeHtml(kindsOf(s.devices)) << "</td></tr>\n";
    }
    os << "</table>\n";
    if (p.replicated()) {
      os << "<p>Micro-batch m runs on replica m mod r of each stage:</p>\n"
            "<table>\n<tr><th>slot</th><th>stage</th><th>replica</th>"
            "<th>device kind</th><th>micro-batches</th></tr>\n";
      for (auto [l, list] : llvm::enumerate(c.sim.lists))
        os << "<tr><td class=\"num\">" << l << "</td><td class=\"num\">"
           << list.stage << "</td><td class=\"num\">" << list.replica
           << "</td><td>" << escapeHtml(list.deviceKind)
           << "</td><td class=\"num\">" << list.microbatches << "</td></tr>\n";
      os << "</table>\n";
    }
    if (!c.replicaMicrobatches.empty()) {
      os << "<p>Batch split (micro-batches per data-parallel replica; "
            "faster device kinds take more):</p>\n<table>\n";
      for (auto [rank, shares] : llvm::enumerate(c.replicaMicrobatches)) {
        std::string s;
        for (unsigned k : shares)
          s += (s.empty() ? "" : " / ") + std::to_string(k);
        row("pipeline rank " + std::to_string(rank), s);
      }
      os << "</table>\n";
    }
  }

  void predictionSection() {
    const sim::PlanReport &e = c.sim;
    os << "<h2 id=\"prediction\">Prediction</h2>\n<table class=\"kv\">\n";
    if (infer()) {
      row("latency",
          formatv("{0:F5} s per batch of {1}", c.latency, p.globalBatch).str());
      row("stream throughput",
          formatv("{0:F2} samples/s", c.streamThroughput).str());
    } else {
      row("iteration time", formatv("{0:F5} s", e.iterationTime).str() +
                                (e.steadyState ? " (steady state)" : ""));
      row("throughput", formatv("{0:F2} samples/s", e.samplesPerSecond).str());
      row("TFLOP/s per device",
          formatv("{0:F1} (model {1:F1})", e.tflopsPerDevice,
                  e.modelTflopsPerDevice)
              .str());
    }
    row("bubble", formatv("{0:F1}%", 100 * e.bubbleFraction).str());
    row("peak memory (largest device)", humanBytes(e.maxPeakMemory));
    if (!infer()) {
      std::string inFlight;
      for (unsigned n : e.inFlight)
        inFlight += (inFlight.empty() ? "" : " / ") + std::to_string(n);
      row("micro-batches in flight per rank", inFlight);
      for (const auto &[level, bytes] : e.bytesPerLevel)
        row("traffic on " + level, humanBytes(bytes) + " per iteration");
      for (const PinnedSide &s : r.pinned)
        row("pinned to " + s.kind, describePinnedSide(s));
    }
    const Breakdown &b = c.breakdown;
    row("compute (busiest device)", ms(b.compute));
    if (!infer()) {
      row("stage-boundary transfers", ms(b.p2p));
      row("data-parallel gradient sync", ms(b.dpSync));
      row("bubble time", ms(b.bubble));
      row("proven lower bound", ms(c.lowerBound));
    }
    os << "</table>\n";
  }

  void timelineSection() {
    os << "<h2 id=\"timeline\">Timeline</h2>\n";
    if (!timeline) {
      os << "<p>Inference plans are estimated in closed form: there is no "
            "schedule to draw.</p>\n";
      return;
    }
    os << "<p>One lane per pipeline rank (per slot of a replicated stage), "
          "time left to right; idle time (the bubble) is grey.</p>\n<div "
          "class=\"scroll\">\n";
    sim::writeSvgTimeline(*timeline, c.sim.lists.size(), os, 1200);
    os << "</div>\n";
  }

  /// "stage 1 (ranks 4-7, v100-sxm2-32gb)" for list \p l.
  std::string listName(unsigned l) const {
    const sim::ListReport &list = c.sim.lists[l];
    std::vector<unsigned> ranks;
    if (p.replicated()) {
      for (unsigned t = 0; t < p.tp; ++t)
        ranks.push_back(t + p.tp * l);
    } else {
      for (const sim::StageReport &s : c.sim.stages)
        if (s.pipelineRank == l)
          ranks = s.devices;
    }
    std::string name = "stage " + std::to_string(list.stage);
    if (p.replicated())
      name += " replica " + std::to_string(list.replica);
    return name + " (ranks " + sim::numberRuns(ranks) + ", " + list.deviceKind +
           ")";
  }

  void memorySection() {
    const std::vector<sim::ListReport> &lists = c.sim.lists;
    os << "<h2 id=\"memory\">Memory per stage and device</h2>\n<p>Peak "
          "memory of each device of a "
       << (p.replicated() ? "slot" : "pipeline rank")
       << ", by what holds it at the peak"
       << (infer() ? " (inference: weights and two micro-batches' largest "
                     "activation)"
                   : "")
       << ". Every device of a stage group holds the same.</p>\n";
    double scale = 0;
    for (const sim::ListReport &l : lists)
      scale = std::max(scale, l.peakMemory);
    if (scale <= 0)
      scale = 1;
    const double labelW = 330, barW = 700, rowH = 26;
    double height = lists.size() * rowH + 30;
    os << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                  "height=\"{1}\" font-family=\"sans-serif\" "
                  "font-size=\"12\">\n",
                  labelW + barW + 160, height);
    for (unsigned l = 0; l < lists.size(); ++l) {
      const sim::ListReport &list = lists[l];
      double y = 10 + l * rowH, x = labelW;
      os << formatv("<text x=\"0\" y=\"{0}\">{1}</text>\n", y + 14,
                    escapeHtml(listName(l)));
      for (const MemoryPart &part : kParts) {
        double bytes = part.of(list.memory);
        if (bytes <= 0)
          continue;
        double w = bytes / scale * barW;
        os << formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                      "height=\"18\" fill=\"{3}\"><title>{4}: {5} "
                      "({6})</title></rect>\n",
                      x, y, w, part.colour, part.name, humanBytes(bytes),
                      escapeHtml(listName(l)));
        x += w;
      }
      os << formatv("<text x=\"{0:F2}\" y=\"{1}\">{2} of {3}</text>\n", x + 6,
                    y + 14, humanBytes(list.peakMemory),
                    humanBytes(list.memoryCapacity));
    }
    os << "</svg>\n<p>";
    for (const MemoryPart &part : kParts)
      os << "<span class=\"swatch\" style=\"background:" << part.colour
         << "\"></span>" << part.name;
    os << "</p>\n<table>\n<tr><th>stage / device</th>";
    for (const MemoryPart &part : kParts)
      os << "<th>" << part.name << "</th>";
    os << "<th>peak</th><th>capacity</th></tr>\n";
    for (unsigned l = 0; l < lists.size(); ++l) {
      const sim::ListReport &list = lists[l];
      os << "<tr><td>" << escapeHtml(listName(l)) << "</td>";
      for (const MemoryPart &part : kParts)
        os << "<td class=\"num\">" << humanBytes(part.of(list.memory))
           << "</td>";
      os << "<td class=\"num\"><b>" << humanBytes(list.peakMemory)
         << "</b></td><td class=\"num\">" << humanBytes(list.memoryCapacity)
         << "</td></tr>\n";
    }
    os << "</table>\n";
  }

  void kindsSection() {
    // Per device kind: the stages and ranks it runs.
    std::map<std::string, std::pair<std::set<unsigned>, std::vector<unsigned>>>
        kinds;
    for (const sim::StageReport &s : c.sim.stages)
      for (unsigned rank : s.devices)
        if (rank < r.deviceKinds.size()) {
          auto &[stages, ranks] = kinds[r.deviceKinds[rank]];
          stages.insert(s.stage);
          ranks.push_back(rank);
        }
    os << "<h2 id=\"kinds\">Device kinds</h2>\n";
    if (kinds.size() > 1)
      os << "<p>A heterogeneous cluster: which device kind runs what.</p>\n";
    os << "<table>\n<tr><th>device kind</th><th>devices</th><th>global "
          "ranks</th><th>stages (layers)</th></tr>\n";
    for (auto &[kind, what] : kinds) {
      auto &[stages, ranks] = what;
      std::sort(ranks.begin(), ranks.end());
      ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
      std::string s;
      for (unsigned st : stages) {
        const sim::StageReport &sr = c.sim.stages[st];
        s += (s.empty() ? "" : ", ") +
             formatv("stage {0} (layers {1}-{2})", st, sr.layerBegin,
                     sr.layerEnd ? sr.layerEnd - 1 : 0)
                 .str();
      }
      os << "<tr><td>" << escapeHtml(kind) << "</td><td class=\"num\">"
         << ranks.size() << "</td><td>" << escapeHtml(sim::numberRuns(ranks))
         << "</td><td>" << escapeHtml(s) << "</td></tr>\n";
    }
    os << "</table>\n";
  }

  /// The largest peak of \p cand and the capacity of its device.
  static std::pair<double, double> worstMemory(const CandidateReport &cand) {
    double peak = 0, cap = 0;
    for (const sim::ListReport &l : cand.sim.lists)
      if (l.peakMemory >= peak) {
        peak = l.peakMemory;
        cap = l.memoryCapacity;
      }
    return {peak, cap};
  }

  void candidateRow(unsigned rank, const CandidateReport &cand, bool best) {
    auto [peak, cap] = worstMemory(cand);
    os << "<tr" << (best ? " class=\"best\"" : "") << "><td class=\"num\">"
       << rank << "</td><td>" << escapeHtml(cand.label) << "</td><td><code>"
       << escapeHtml(cand.sim.plan.str()) << "</code></td>";
    if (infer())
      os << formatv("<td class=\"num\">{0:F5} s</td><td "
                    "class=\"num\">{1:F1}</td>",
                    cand.latency, cand.streamThroughput);
    else
      os << formatv("<td class=\"num\">{0:F5} s</td><td "
                    "class=\"num\">{1:F1}</td>",
                    cand.sim.iterationTime, cand.sim.samplesPerSecond);
    const Breakdown &b = cand.breakdown;
    os << "<td class=\"num\">" << ms(b.compute) << "</td><td class=\"num\">"
       << ms(b.p2p) << "</td><td class=\"num\">" << ms(b.dpSync)
       << "</td><td class=\"num\">"
       << formatv("{0:F1}%", 100 * cand.sim.bubbleFraction)
       << "</td><td class=\"num\">" << humanBytes(peak) << " / "
       << humanBytes(cap) << "</td></tr>\n";
  }

  void searchSections() {
    os << "<h2 id=\"alternatives\">The best plans and the runners-up</h2>\n"
       << "<p>Ranked by " << escapeHtml(r.rankedBy)
       << " (per iteration, on the busiest device; rank 1 is the chosen "
          "plan).</p>\n<table>\n<tr><th>rank</th><th>plan</th><th>spec</th>"
       << (infer() ? "<th>latency</th><th>stream samples/s</th>"
                   : "<th>iteration</th><th>samples/s</th>")
       << "<th>compute</th><th>comm</th><th>dp-sync</th><th>bubble</th>"
          "<th>memory / device</th></tr>\n";
    candidateRow(1, c, true);
    for (auto [i, alt] : llvm::enumerate(r.alternatives))
      candidateRow(i + 2, alt, false);
    os << "</table>\n";
    if (r.alternatives.empty())
      os << "<p>No runner-up: no other plan was kept.</p>\n";
    os << "<h2 id=\"why\">Why this plan</h2>\n<p class=\"why\">"
       << escapeHtml(r.why) << "</p>\n";
    const SearchStats &s = r.stats;
    os << "<h2 id=\"search\">Search</h2>\n<table class=\"kv\">\n";
    row("candidates weighed", std::to_string(s.candidates));
    row("dominated", std::to_string(s.dominated));
    row("over memory", std::to_string(s.memoryPruned));
    row("cut by the lower bound", std::to_string(s.boundPruned));
    row("partitions", std::to_string(s.partitions));
    row("with per-stage replicas", std::to_string(s.replicated));
    row("simulated", std::to_string(s.simulated));
    row("result",
        s.exact ? std::string("exact (bound-proven)")
                : formatv("bounded (within {0:F1}% of optimal)", 100 * s.gap)
                      .str());
    row("time",
        formatv("{0:F3} s ({1:F3} s CPU)", s.seconds, s.cpuSeconds).str());
    row("devices used",
        formatv("{0} of {1}", r.devicesUsed, r.devicesTotal).str());
    if (r.suggestedDevices) {
      row("suggested devices",
          formatv("{0} (parallel efficiency {1:F0}% on all)",
                  r.suggestedDevices, 100 * r.efficiency)
              .str());
    }
    os << "</table>\n";
  }

  void baselineSection() {
    const CandidateReport &b = *r.baseline;
    os << "<h2 id=\"baseline\">Baseline: " << escapeHtml(r.baselineSource)
       << "</h2>\n<table class=\"kv\">\n";
    row("plan", b.sim.plan.str());
    if (infer()) {
      row("latency",
          formatv("{0:F5} s (chosen plan {1:F5} s)", b.latency, c.latency)
              .str());
    } else {
      row("iteration time", formatv("{0:F5} s (chosen plan {1:F5} s)",
                                    b.sim.iterationTime, c.sim.iterationTime)
                                .str());
      row("throughput", formatv("{0:F2} samples/s (chosen plan {1:F2})",
                                b.sim.samplesPerSecond, c.sim.samplesPerSecond)
                            .str());
    }
    row("peak memory", humanBytes(b.sim.maxPeakMemory));
    if (!b.sim.fitsMemory)
      row("does not fit", b.sim.memoryProblem);
    os << "</table>\n";
  }
};
} // namespace

void search::writeHtmlReport(const Report &r, const sim::SimResult *timeline,
                             raw_ostream &os) {
  Page(r, timeline, os).write();
}
