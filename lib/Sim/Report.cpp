//===- Report.cpp - Report JSON, Chrome trace and SVG timeline --*- C++ -*-===//

#include "lib/Sim/Report.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace distopt::schedule;

namespace distopt::sim {

std::string numberRuns(ArrayRef<unsigned> numbers) {
  std::vector<unsigned> r(numbers.begin(), numbers.end());
  llvm::sort(r);
  std::string s;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1)
      ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(r[i]);
    if (j > i)
      s += "-" + std::to_string(r[j]);
    i = j + 1;
  }
  return s;
}

PlanReport planReport(const Plan &plan, const cost::ModelDesc &model,
                      const PipelineCosts &costs, const SimResult &res) {
  PlanReport r;
  r.model = model.name;
  r.plan = plan;
  r.matmulDtype =
      costs.matmulPrecision.empty() ? "model" : costs.matmulPrecision;
  for (unsigned vs = 0; vs < costs.stages.size(); ++vs) {
    const StageCost &st = costs.stages[vs];
    StageReport s;
    s.stage = vs;
    s.pipelineRank = st.device;
    s.chunk = st.chunk;
    s.replicas = plan.replicasOf(st.device);
    for (unsigned d = 0; d < plan.replicasOf(st.device); ++d)
      for (unsigned k = 0; k < plan.cp; ++k)
        for (unsigned t = 0; t < plan.tp; ++t)
          s.devices.push_back(plan.globalRank(st.device, d, t, k));
    s.layerBegin = st.layerBegin;
    s.layerEnd = st.layerEnd;
    if (st.layerEnd > st.layerBegin && st.layerEnd <= model.layers.size()) {
      const cost::LayerDesc &first = model.layers[st.layerBegin];
      const cost::LayerDesc &last = model.layers[st.layerEnd - 1];
      s.layerNames = {first.name, last.name};
      // The ops the stage runs, first and last in program order.
      if (!first.ops.empty() && !last.ops.empty())
        s.opRange = {first.ops.front().name, last.ops.back().name};
    }
    r.stages.push_back(std::move(s));
  }
  for (unsigned l = 0; l < res.peakMemoryBytes.size(); ++l) {
    ListReport list;
    list.stage = plan.replicated() ? costs.stageOfList(l) : l;
    list.replica = plan.replicated() ? l - plan.firstSlot(list.stage) : 0;
    list.microbatches =
        l < res.listMicrobatches.size() ? res.listMicrobatches[l] : 0u;
    if (l < costs.devices.size()) {
      const DeviceCost &dc = costs.devices[l];
      list.deviceKind = dc.deviceName;
      list.memoryCapacity = dc.memoryCapacity;
      list.setOffload(dc);
    }
    if (l < res.peakMemoryParts.size())
      list.memory = res.peakMemoryParts[l];
    list.peakMemory = res.peakMemoryBytes[l];
    r.lists.push_back(std::move(list));
  }
  // Peak memory per global device: every device of a stage group alike.
  r.peakMemoryPerDevice.assign(plan.numDevices(), 0);
  std::vector<double> &perDevice = r.peakMemoryPerDevice;
  for (unsigned s = 0;
       s < plan.pp && !plan.replicated() && s < res.peakMemoryBytes.size(); ++s)
    for (unsigned d = 0; d < plan.dp; ++d)
      for (unsigned k = 0; k < plan.cp; ++k)
        for (unsigned t = 0; t < plan.tp; ++t)
          perDevice[plan.globalRank(s, d, t, k)] = res.peakMemoryBytes[s];
  // Replicated plans: rank t + tp * slot.
  for (unsigned l = 0; plan.replicated() && l < res.peakMemoryBytes.size(); ++l)
    for (unsigned t = 0; t < plan.tp; ++t)
      if (t + plan.tp * l < perDevice.size())
        perDevice[t + plan.tp * l] = res.peakMemoryBytes[l];
  r.maxPeakMemory = res.peakMemoryBytes.empty()
                        ? 0.0
                        : *std::max_element(res.peakMemoryBytes.begin(),
                                            res.peakMemoryBytes.end());
  r.iterationTime = res.iterationTime;
  r.samplesPerSecond = res.samplesPerSecond;
  r.tflopsPerDevice = res.tflopsPerDevice;
  r.modelTflopsPerDevice = res.modelTflopsPerDevice;
  r.bubbleFraction = res.bubbleFraction;
  r.inFlight = res.inFlight;
  for (unsigned l = 0; l < res.bytesPerLevel.size(); ++l)
    r.bytesPerLevel.emplace_back(l < res.levelNames.size()
                                     ? res.levelNames[l]
                                     : formatv("level{0}", l).str(),
                                 res.bytesPerLevel[l]);
  r.steadyState = res.steadyState;
  r.fitsMemory = res.fitsMemory;
  r.memoryProblem = res.memoryProblem;
  r.input = res.input;
  return r;
}

std::array<double, cluster::kNumTiers> ListReport::tierBytes() const {
  std::array<double, cluster::kNumTiers> sum{};
  for (const auto &item : offloadBytes)
    for (unsigned t = 0; t < cluster::kNumTiers; ++t)
      sum[t] += item[t];
  return sum;
}

/// {"host": .., "nvme": .., "hdd": ..}
static json::Object
tierObject(const std::array<double, cluster::kNumTiers> &b) {
  json::Object o;
  for (unsigned t = 0; t < cluster::kNumTiers; ++t)
    o[cluster::tierName(cluster::Tier(t))] = b[t];
  return o;
}

void ListReport::setOffload(const DeviceCost &dc) {
  for (auto [i, item] : llvm::enumerate(dc.offloadItems))
    if (i < dc.placement.bytes.size())
      offloadBytes[static_cast<unsigned>(item.kind)] = dc.placement.bytes[i];
  cpuStepTime = dc.cpuStepTime;
}

void printOffload(const Plan &plan, const PipelineCosts &costs,
                  raw_ostream &os) {
  if (!plan.offload.any())
    return;
  for (auto [l, dc] : llvm::enumerate(costs.devices)) {
    ListReport list;
    list.setOffload(dc);
    os << "  stage " << l << " offload " << plan.offload.str() << ":";
    for (unsigned k = 0; k < cost::kNumOffloadKinds; ++k) {
      std::string where;
      for (unsigned t = 0; t < cluster::kNumTiers; ++t)
        if (list.offloadBytes[k][t] > 0)
          where += formatv("{0}{1:F2} GB in {2}", where.empty() ? "" : " + ",
                           list.offloadBytes[k][t] / 1e9,
                           cluster::tierName(cluster::Tier(t)))
                       .str();
      if (!where.empty())
        os << " " << cost::offloadKindName(cost::OffloadKind(k)) << " " << where
           << ";";
    }
    std::array<double, cluster::kNumTiers> tiers = list.tierBytes();
    os << formatv(" per device host {0:F2} GB, nvme {1:F2} GB, hdd {2:F2} GB",
                  tiers[0] / 1e9, tiers[1] / 1e9, tiers[2] / 1e9);
    if (list.cpuStepTime > 0)
      os << formatv("; CPU optimizer step {0:F4} s", list.cpuStepTime);
    os << "\n";
  }
}

json::Value toJSON(const PlanReport &r) {
  const Plan &plan = r.plan;
  json::Array stages;
  for (const StageReport &s : r.stages) {
    json::Array devices;
    for (unsigned d : s.devices)
      devices.push_back(d);
    json::Object o{{"stage", s.stage},
                   {"pipeline_rank", s.pipelineRank},
                   {"chunk", s.chunk},
                   {"replicas", s.replicas},
                   {"devices", std::move(devices)},
                   {"layers", json::Array{s.layerBegin, s.layerEnd}}};
    if (s.layerNames)
      o["layer_names"] = json::Array{s.layerNames->first, s.layerNames->second};
    if (s.opRange)
      o["op_range"] = json::Array{s.opRange->first, s.opRange->second};
    stages.push_back(std::move(o));
  }
  json::Object planObj{{"dp", plan.dp},
                       {"tp", plan.tp},
                       {"pp", plan.pp},
                       {"mbs", plan.mbs},
                       {"num_microbatches", plan.numMicrobatches},
                       {"global_batch", plan.globalBatch},
                       {"schedule", scheduleName(plan.schedule)},
                       {"chunks", plan.chunks},
                       {"recompute", cost::recomputeName(plan.recompute)},
                       {"zero", plan.zero},
                       {"cp", plan.cp},
                       {"ep", plan.ep},
                       {"sp", plan.sp && plan.tp > 1},
                       {"tp_overlap", plan.tpOverlap && plan.tp > 1},
                       {"ag_overlap", plan.overlapParamGather && plan.zero > 0},
                       {"expert_imbalance", plan.expertImbalance},
                       {"matmul_dtype", r.matmulDtype},
                       {"fused_attention", plan.fusedAttention},
                       {"optimizer", cost::optimizerName(plan.optimizer)},
                       {"offload", plan.offload.str()},
                       {"spec", plan.str()},
                       {"stages", std::move(stages)}};
  if (plan.replicated()) {
    json::Array reps;
    for (unsigned rep : plan.replicas)
      reps.push_back(rep);
    json::Array slots;
    for (auto [l, list] : llvm::enumerate(r.lists))
      slots.push_back(json::Object{{"slot", l},
                                   {"stage", list.stage},
                                   {"replica", list.replica},
                                   {"device", list.deviceKind},
                                   {"microbatches", list.microbatches},
                                   {"peak_memory_bytes", list.peakMemory}});
    planObj["replicas"] = std::move(reps);
    planObj["slots"] = std::move(slots);
  }
  json::Array peak;
  for (double b : r.peakMemoryPerDevice)
    peak.push_back(b);
  json::Array parts;
  for (const ListReport &list : r.lists) {
    const schedule::PeakMemory &m = list.memory;
    parts.push_back(json::Object{{"weights", m.fixed.weights},
                                 {"grads", m.fixed.grads},
                                 {"optimizer", m.fixed.optimizer},
                                 {"weight_stash", m.fixed.weightStash},
                                 {"gather_buffers", m.fixed.gatherBuffers},
                                 {"activations", m.activations},
                                 {"activation_stash", m.activationStash},
                                 {"working", m.working}});
  }
  json::Object links;
  for (const auto &[name, bytes] : r.bytesPerLevel)
    links[name] = bytes;
  json::Array inFlight;
  for (unsigned n : r.inFlight)
    inFlight.push_back(n);
  json::Object estimate{{"iteration_time_s", r.iterationTime},
                        {"samples_per_s", r.samplesPerSecond},
                        {"tflops_per_device", r.tflopsPerDevice},
                        {"model_tflops_per_device", r.modelTflopsPerDevice},
                        {"bubble_fraction", r.bubbleFraction},
                        {"peak_memory_bytes", std::move(peak)},
                        {"peak_memory_parts", std::move(parts)},
                        {"max_peak_memory_bytes", r.maxPeakMemory},
                        {"in_flight_microbatches", std::move(inFlight)},
                        {"bytes_per_link_level", std::move(links)},
                        {"steady_state", r.steadyState}};
  if (r.input)
    estimate["data_stall"] = toJSON(*r.input);
  if (plan.offload.any()) {
    json::Array offload;
    for (const ListReport &list : r.lists) {
      json::Object o{{"tier_bytes", tierObject(list.tierBytes())},
                     {"cpu_step_s", list.cpuStepTime}};
      for (unsigned k = 0; k < cost::kNumOffloadKinds; ++k)
        o[cost::offloadKindName(cost::OffloadKind(k))] =
            tierObject(list.offloadBytes[k]);
      offload.push_back(std::move(o));
    }
    estimate["offload"] = std::move(offload);
  }
  return json::Object{{"model", r.model},
                      {"plan", std::move(planObj)},
                      {"estimate", std::move(estimate)}};
}

json::Value reportJSON(const Plan &plan, const cost::ModelDesc &model,
                       const PipelineCosts &costs, const SimResult &res) {
  return toJSON(planReport(plan, model, costs, res));
}

void writeReport(const Plan &plan, const cost::ModelDesc &model,
                 const PipelineCosts &costs, const SimResult &result,
                 raw_ostream &os) {
  os << formatv("{0:2}", reportJSON(plan, model, costs, result)) << "\n";
}

static StringRef category(ActionKind k) {
  switch (k) {
  case ActionKind::Forward:
    return "forward";
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
    return "backward";
  case ActionKind::BackwardWeight:
    return "weight-grad";
  case ActionKind::OptimizerStep:
    return "optimizer";
  case ActionKind::SendActivation:
  case ActionKind::SendGrad:
  case ActionKind::RecvActivation:
  case ActionKind::RecvGrad:
    return "p2p";
  default:
    return "collective";
  }
}

void writeChromeTrace(const SimResult &res, raw_ostream &os) {
  json::Array events;
  unsigned ranks = 0;
  for (const Event &e : res.events)
    ranks = std::max(ranks, e.device + 1);
  for (unsigned r = 0; r < ranks; ++r) {
    events.push_back(json::Object{
        {"name", "process_name"},
        {"ph", "M"},
        {"pid", r},
        {"args", json::Object{{"name", formatv("stage group {0}", r).str()}}}});
    for (unsigned q = 0; q < 4; ++q)
      events.push_back(json::Object{
          {"name", "thread_name"},
          {"ph", "M"},
          {"pid", r},
          {"tid", q},
          {"args",
           json::Object{{"name", streamName(static_cast<Stream>(q))}}}});
  }
  for (const Event &e : res.events) {
    json::Object args{{"chunk", e.action.chunk}};
    if (e.action.mb >= 0)
      args["microbatch"] = e.action.mb;
    if (e.action.peer >= 0)
      args["peer"] = e.action.peer;
    events.push_back(json::Object{{"name", e.action.str()},
                                  {"cat", category(e.action.kind)},
                                  {"ph", "X"},
                                  {"pid", e.device},
                                  {"tid", static_cast<unsigned>(e.stream)},
                                  {"ts", e.start * 1e6},
                                  {"dur", (e.end - e.start) * 1e6},
                                  {"args", std::move(args)}});
  }
  os << formatv("{0}",
                json::Value(json::Object{{"traceEvents", std::move(events)},
                                         {"displayTimeUnit", "ms"}}))
     << "\n";
}

/// "#rrggbb" for hue \p h (degrees), saturation \p s and lightness \p l
/// (0-1): SVG 1.1 renderers do not all take hsl().
static std::string hsl(double h, double s, double l) {
  double c = (1 - std::fabs(2 * l - 1)) * s;
  double hp = h / 60, x = c * (1 - std::fabs(std::fmod(hp, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1)
    r = c, g = x;
  else if (hp < 2)
    r = x, g = c;
  else if (hp < 3)
    g = c, b = x;
  else if (hp < 4)
    g = x, b = c;
  else if (hp < 5)
    r = x, b = c;
  else
    r = c, b = x;
  double m = l - c / 2;
  auto byte = [&](double v) {
    return static_cast<unsigned>(std::lround((v + m) * 255));
  };
  return formatv("#{0:x-2}{1:x-2}{2:x-2}", byte(r), byte(g), byte(b)).str();
}

/// Fill colour: hue by kind, lightness cycling over 6 micro-batches.
static std::string colour(const Action &a) {
  int hue;
  switch (a.kind) {
  case ActionKind::Forward:
    hue = 210;
    break;
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
    hue = 130;
    break;
  case ActionKind::BackwardWeight:
    hue = 35;
    break;
  case ActionKind::OptimizerStep:
    return "#555555";
  default:
    hue = 285;
    break;
  }
  int light = 38 + 8 * (a.mb < 0 ? 0 : a.mb % 6);
  return hsl(hue, 0.65, light / 100.0);
}

void writeSvgTimeline(const SimResult &res, unsigned numRanks, raw_ostream &os,
                      unsigned width) {
  const double left = 90, right = 20, top = 30, laneH = 26, commH = 7, gap = 6;
  double T = 0;
  for (const Event &e : res.events)
    T = std::max(T, e.end);
  if (T <= 0)
    T = 1;
  double plotW = width - left - right;
  double height = top + numRanks * (laneH + commH + gap) + 50;
  auto x = [&](double t) { return left + t / T * plotW; };
  os << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                "height=\"{1}\" font-family=\"sans-serif\" font-size=\"11\">\n",
                width, height);
  os << formatv("<text x=\"{0}\" y=\"18\">iteration {1:F3} s, bubble "
                "{2:F1}%, {3:F1} TFLOP/s per device</text>\n",
                left, res.iterationTime, res.bubbleFraction * 100,
                res.tflopsPerDevice);
  for (unsigned r = 0; r < numRanks; ++r) {
    double y = top + r * (laneH + commH + gap);
    os << formatv("<text x=\"4\" y=\"{0}\">rank {1}</text>\n", y + laneH * 0.7,
                  r);
    // The idle background shows the bubble.
    os << formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                  "fill=\"#eeeeee\"/>\n",
                  left, y, plotW, laneH);
  }
  for (const Event &e : res.events) {
    if (e.device >= numRanks || e.end <= e.start)
      continue;
    double y = top + e.device * (laneH + commH + gap);
    bool comm = e.stream != Stream::Compute;
    double w = std::max(0.5, x(e.end) - x(e.start));
    os << formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                  "height=\"{3}\" fill=\"{4}\"><title>{5} {6:F3}-{7:F3} "
                  "ms</title></rect>\n",
                  x(e.start), comm ? y + laneH + 1 : y, w,
                  comm ? commH - 1 : laneH, colour(e.action), e.action.str(),
                  e.start * 1e3, e.end * 1e3);
    if (!comm && w > 22 && e.action.mb >= 0)
      os << formatv("<text x=\"{0:F1}\" y=\"{1}\" fill=\"white\" "
                    "font-size=\"9\">{2}</text>\n",
                    x(e.start) + 2, y + laneH * 0.65, e.action.str());
  }
  // Time axis and legend.
  double axisY = top + numRanks * (laneH + commH + gap) + 12;
  for (unsigned i = 0; i <= 10; ++i) {
    double t = T * i / 10;
    os << formatv("<line x1=\"{0:F1}\" y1=\"{1}\" x2=\"{0:F1}\" y2=\"{2}\" "
                  "stroke=\"#999\"/><text x=\"{0:F1}\" y=\"{3}\" "
                  "text-anchor=\"middle\">{4:F1} ms</text>\n",
                  x(t), axisY - 4, axisY, axisY + 10, t * 1e3);
  }
  double ly = axisY + 24, lx = left;
  for (auto [name, fill] :
       {std::pair<const char *, std::string>{"forward", hsl(210, 0.65, 0.45)},
        {"backward (input grad)", hsl(130, 0.65, 0.45)},
        {"weight grad", hsl(35, 0.65, 0.45)},
        {"communication", hsl(285, 0.65, 0.45)},
        {"optimizer", "#555555"},
        {"idle (bubble)", "#eeeeee"}}) {
    os << formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" "
                  "fill=\"{2}\" stroke=\"#999\"/><text x=\"{3}\" "
                  "y=\"{4}\">{5}</text>\n",
                  lx, ly - 10, fill, lx + 16, ly, name);
    lx += 40 + 7 * std::string(name).size();
  }
  os << "</svg>\n";
}

} // namespace distopt::sim
