//===- Profile.cpp - Per-op timing reports of generated programs ----------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Profile.h; docs/codegen.md, "Profiling").
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Profile.h"
#include "distrt/gen/Threads.h"

#include <algorithm>
#include <map>

namespace dg {

std::vector<double> Profiler::perRun(bool cpu) const {
  std::vector<double> t(cpu ? steadyCpu : steady);
  double n = (double)runs.size() - 1;
  if (n < 1)
    return cpu ? firstCpu : first;
  for (double &x : t)
    x /= n;
  return t;
}

double Profiler::medianRun(bool cpu) const {
  const std::vector<double> &all = cpu ? cpuRuns : runs;
  std::vector<double> r(all.begin() + (all.size() > 1 ? 1 : 0), all.end());
  if (r.empty())
    return 0;
  std::sort(r.begin(), r.end());
  return r.size() % 2 ? r[r.size() / 2]
                      : 0.5 * (r[r.size() / 2 - 1] + r[r.size() / 2]);
}

void Profiler::print(FILE *out) const {
  std::vector<double> wall = perRun(false), cpu = perRun(true);
  // The clock the report ranks by and gives shares of.
  const std::vector<double> &rank = byCpu ? cpu : wall;
  double total = 0, totalCpu = 0, totalRank = 0;
  for (int i = 0; i < numOps; ++i) {
    total += wall[(size_t)i];
    totalCpu += cpu[(size_t)i];
    totalRank += rank[(size_t)i];
  }
  fprintf(out,
          "profile: %zu run(s); first %.3f ms; median of the others "
          "%.3f ms; ops %.3f ms per run\n",
          runs.size(), runs.empty() ? 0.0 : runs[0] * 1e3, medianRun() * 1e3,
          total * 1e3);
  fprintf(out,
          "profile CPU time (the process's user + system, %d thread(s), "
          "%s): first %.3f ms; median of the others %.3f ms; ops %.3f ms "
          "per run\n",
          threadCount(), waitPolicyNote(),
          cpuRuns.empty() ? 0.0 : cpuRuns[0] * 1e3, medianRun(true) * 1e3,
          totalCpu * 1e3);
  const char *share = byCpu ? "CPU %" : "wall %";
  struct Kind {
    double wall = 0, cpu = 0, rank = 0;
    int ops = 0;
  };
  std::map<std::string, Kind> kinds;
  for (int i = 0; i < numOps; ++i) {
    if (!ran[(size_t)i])
      continue;
    Kind &k = kinds[ops[i].kind];
    k.wall += wall[(size_t)i];
    k.cpu += cpu[(size_t)i];
    k.rank += rank[(size_t)i];
    k.ops += 1;
  }
  std::vector<std::pair<double, std::string>> byKind;
  for (auto &kv : kinds)
    byKind.push_back({kv.second.rank, kv.first});
  std::sort(byKind.rbegin(), byKind.rend());
  auto pct = [&](double x) {
    return totalRank > 0 ? 100 * x / totalRank : 0.0;
  };
  fprintf(out, "%-36s %6s %12s %12s %6s\n", "op kind", "ops", "wall ms/run",
          "CPU ms/run", share);
  for (auto &[sec, name] : byKind) {
    const Kind &k = kinds[name];
    fprintf(out, "%-36s %6d %12.4f %12.4f %6.1f\n", name.c_str(), k.ops,
            k.wall * 1e3, k.cpu * 1e3, pct(sec));
  }
  std::vector<int> order;
  for (int i = 0; i < numOps; ++i)
    if (ran[(size_t)i])
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return rank[(size_t)a] > rank[(size_t)b];
  });
  fprintf(out, "%5s %12s %12s %6s  %s\n", "op", "wall ms/run", "CPU ms/run",
          share, "kind and location");
  for (int i : order)
    fprintf(out, "%5d %12.4f %12.4f %6.1f  %s\n", i, wall[(size_t)i] * 1e3,
            cpu[(size_t)i] * 1e3, pct(rank[(size_t)i]), ops[i].where);
}

int Profiler::writeJson(const std::string &path, const std::string &device,
                        int64_t microBatch, int tp, Error &err) const {
  std::vector<double> t = perRun();
  // (signature, instance) -> seconds per phase and whether it ran.
  struct Instance {
    double s[3] = {0, 0, 0};
    bool ran[3] = {false, false, false};
  };
  std::map<std::pair<std::string, long long>, Instance> instances;
  for (int i = 0; i < numOps; ++i) {
    if (!*ops[i].signature)
      continue;
    std::string ph = ops[i].phase;
    int p = ph == "backward_input" ? 1 : ph == "backward_weight" ? 2 : 0;
    if (!ph.empty() && ph != "forward" && p == 0)
      continue; // optimizer updates: no phase in the database
    long long key = ops[i].instance >= 0 ? ops[i].instance : -1 - (long long)i;
    Instance &in = instances[{ops[i].signature, key}];
    in.s[p] += t[(size_t)i];
    in.ran[p] = true;
  }
  // The optimizer phase (updates, unscaling; not a data-parallel
  // program's gradient collectives) per parameter updated.
  double optimizerSeconds = 0;
  long long updated = 0;
  for (int i = 0; i < numOps; ++i)
    if (std::string(ops[i].phase) == "optimizer" &&
        std::string(ops[i].kind).rfind("dist.", 0) != 0) {
      optimizerSeconds += t[(size_t)i];
      updated += ops[i].updated;
    }
  // In a training step a forward op without ops in a backward phase
  // (the first layer's input gradient) took no time there: it counts
  // with 0, so the mean over a signature's instances adds up to what
  // the step ran.
  bool training = false;
  for (auto &kv : instances)
    training |= kv.second.ran[1] || kv.second.ran[2];
  struct Sum {
    double s[3] = {0, 0, 0};
    int n[3] = {0, 0, 0};
  };
  std::map<std::string, Sum> sums;
  for (auto &[key, in] : instances)
    for (int p = 0; p < 3; ++p)
      if (in.ran[p] || (training && in.ran[0])) {
        sums[key.first].s[p] += in.s[p];
        sums[key.first].n[p] += 1;
      }
  FILE *f = fopen(path.c_str(), "w");
  if (!f)
    return fail(err, "--profile-json: cannot write '%s' (%s)", path.c_str(),
                strerror(errno));
  fprintf(f, "{\"version\": 1, \"entries\": [");
  const char *names[3] = {"fwd_s", "bwd_input_s", "bwd_weight_s"};
  bool firstEntry = true;
  for (auto &[sig, s] : sums) {
    std::string esc;
    for (char c : sig) {
      if (c == '"' || c == '\\')
        esc += '\\';
      esc += c;
    }
    fprintf(f,
            "%s\n  {\"device\": \"%s\", \"signature\": \"%s\", "
            "\"micro_batch\": %lld, \"tp\": %d",
            firstEntry ? "" : ",", device.c_str(), esc.c_str(),
            (long long)(microBatch > 0 ? microBatch : 1), tp > 1 ? tp : 1);
    for (int p = 0; p < 3; ++p)
      if (s.n[p])
        fprintf(f, ", \"%s\": %.9g", names[p], s.s[p] / s.n[p]);
    fprintf(f, "}");
    firstEntry = false;
  }
  fprintf(f, "\n]");
  if (updated > 0)
    fprintf(f,
            ",\n\"optimizer\": [{\"device\": \"%s\", "
            "\"seconds_per_parameter\": %.9g}]",
            device.c_str(), optimizerSeconds / (double)updated);
  fprintf(f, "}\n");
  if (fclose(f))
    return fail(err, "--profile-json: writing '%s' failed", path.c_str());
  return 0;
}

} // namespace dg
