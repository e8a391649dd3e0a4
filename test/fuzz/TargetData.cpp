//===- TargetData.cpp - Fuzz targets: cluster YAML and .npy -----*- C++ -*-===//
//
// Part of DistOpt. `cluster` reads the bytes as a cluster description; an
// accepted one must survive a write/read round trip and, when small, a
// simulated plan on it must give finite figures or an error. `npy` reads
// them as an input file of a generated program (distrt/gen/Npy.h, the code
// the programs include). Also the text mutations and the built-in seeds.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "lib/Cluster/Cluster.h"
#include "lib/Cost/CostModel.h"
#include "lib/Cost/ModelDesc.h"
#include "lib/Export/Trainers.h"
#include "lib/Schedule/Plan.h"
#include "lib/Sim/Simulator.h"

#include "distrt/gen/Npy.h"

#include "llvm/Support/MemAlloc.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace distopt::fuzz {

/// Stops the process on a defect the target found itself (an accepted input
/// that breaks an invariant), so the driver records it like a crash.
[[noreturn]] static void defect(const std::string &what) {
  fprintf(stderr, "dist-fuzz: defect: %s\n", what.c_str());
  abort();
}

/// The GPT the targets plan: 4 blocks of width 64.
static const cost::ModelDesc &smallGpt() {
  static const cost::ModelDesc model = [] {
    cost::GptConfig cfg;
    cfg.layers = 4;
    cfg.hidden = 64;
    cfg.heads = 4;
    cfg.seqLen = 32;
    cfg.vocab = 100;
    return cost::buildGpt(cfg);
  }();
  return model;
}

Outcome runCluster(llvm::StringRef input) {
  llvm::Expected<cluster::Cluster> c =
      cluster::parseClusterYAML(input, "fuzz.yaml");
  if (!c) {
    llvm::consumeError(c.takeError());
    return Outcome::Refused;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  cluster::writeClusterYAML(*c, os);
  llvm::Expected<cluster::Cluster> back =
      cluster::parseClusterYAML(text, "written.yaml");
  if (!back)
    defect("an accepted cluster does not read back after writing: " +
           llvm::toString(back.takeError()));
  unsigned n = c->numDevices();
  if (n == 0 || n > 64)
    return Outcome::Accepted;
  const cost::ModelDesc &model = smallGpt();
  schedule::Plan plan;
  plan.dp = n;
  cost::CostModel cm;
  llvm::Expected<sim::PlanSimulation> s =
      sim::simulatePlan(model, *c, plan, 2 * n, cm);
  if (!s) {
    llvm::consumeError(s.takeError());
    return Outcome::Accepted;
  }
  if (!std::isfinite(s->result.iterationTime) ||
      !std::isfinite(s->result.bubbleFraction))
    defect("a simulated plan on an accepted cluster is not finite");
  return Outcome::Accepted;
}

Outcome runMegatron(llvm::StringRef input) {
  const cost::ModelDesc &model = smallGpt();
  llvm::Expected<exporting::ImportedPlan> read = exporting::importPlan(
      exporting::Trainer::Megatron, input, "fuzz.sh", model, 16);
  if (!read) {
    llvm::consumeError(read.takeError());
    return Outcome::Refused;
  }
  // An accepted configuration that makes a plan exports to every trainer
  // (or says why not), and its Megatron-LM export reads back as the same
  // degrees.
  llvm::Expected<cluster::Cluster> c = cluster::getPreset("dgx-a100-80gb", 2);
  if (!c)
    defect("no dgx-a100-80gb preset");
  schedule::Plan plan = read->plan;
  cost::CostModel cm;
  unsigned batch = read->globalBatch ? read->globalBatch : 64;
  if (llvm::Error e = schedule::finalizePlan(plan, model, *c, batch, cm)) {
    llvm::consumeError(std::move(e));
    return Outcome::Accepted;
  }
  for (exporting::Trainer t :
       {exporting::Trainer::Megatron, exporting::Trainer::Torchtitan,
        exporting::Trainer::DeepSpeed}) {
    llvm::Expected<exporting::Export> out =
        exporting::exportPlan(t, plan, model);
    if (!out) {
      llvm::consumeError(out.takeError());
      continue;
    }
    if (t != exporting::Trainer::Megatron)
      continue;
    llvm::Expected<exporting::ImportedPlan> back = exporting::importPlan(
        t, out->text, "export.sh", model, plan.numDevices());
    if (!back)
      defect("an exported Megatron-LM configuration does not read back: " +
             llvm::toString(back.takeError()));
    const schedule::Plan &b = back->plan;
    if (b.tp != plan.tp || b.pp != plan.pp || b.cp != plan.cp ||
        b.dp != plan.dp || b.mbs != plan.mbs || b.zero != plan.zero ||
        (plan.schedule == schedule::ScheduleKind::Interleaved &&
         b.chunks != plan.chunks))
      defect("a Megatron-LM export reads back as another plan: " + plan.str() +
             " became " + b.str());
  }
  return Outcome::Accepted;
}

static std::vector<std::string> megatronSeeds() {
  return {"--tensor-model-parallel-size 2\n--pipeline-model-parallel-size 2\n"
          "--micro-batch-size 1\n--global-batch-size 32\n--num-layers 4\n"
          "--sequence-parallel\n--recompute-granularity full\n",
          "N=2\nARGS=(\n  --pipeline-model-parallel-size $N\n"
          "  --pipeline-model-parallel-layout \"Et|(t|)*2,tL\"\n"
          "  --use-distributed-optimizer --bf16\n)\n"
          "torchrun --nnodes 1 --nproc_per_node 8 x.py ${ARGS[@]}\n"};
}

Outcome runNpy(llvm::StringRef input) {
  // fmemopen of an empty buffer fails; an empty file is refused anyway.
  std::string copy = input.str() + '\0';
  FILE *f = fmemopen(copy.data(), input.size() ? input.size() : 1, "rb");
  if (!f)
    return Outcome::Refused;
  dg::HostTensor t;
  dg::Error err;
  int rc = dg::readNpyStream(f, input.size(), "fuzz.npy", t, err);
  fclose(f);
  if (rc == 0 && t.data.size() != t.spec.bytes())
    defect("a .npy read holds another byte count than its shape");
  return rc ? Outcome::Refused : Outcome::Accepted;
}

std::vector<std::string> clusterSeeds() {
  std::vector<std::string> seeds;
  for (const std::string &name : cluster::presetNames()) {
    llvm::Expected<cluster::Cluster> c = cluster::getPreset(name, 2);
    if (!c) {
      llvm::consumeError(c.takeError());
      continue;
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    cluster::writeClusterYAML(*c, os);
    seeds.push_back(text);
  }
  return seeds;
}

/// A .npy (format 1.0) of `descr` and `shape` with zero data.
static std::string npyFile(const char *descr, const std::string &shape,
                           size_t dataBytes) {
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  return out + header + std::string(dataBytes, '\0');
}

std::vector<std::string> npySeeds() {
  return {npyFile("<f4", "(2, 8)", 64), npyFile("<i8", "(3,)", 24),
          npyFile("|b1", "()", 1), npyFile("<f2", "(1, 2, 2)", 8)};
}

llvm::ArrayRef<const char *> interestingNumbers() {
  static const char *const numbers[] = {"0",
                                        "-1",
                                        "1",
                                        "2147483648",
                                        "4294967296",
                                        "9223372036854775807",
                                        "-9223372036854775808",
                                        "18446744073709551616",
                                        "1e300",
                                        "1e-300",
                                        "-0",
                                        "nan",
                                        "inf",
                                        "0.5",
                                        "3",
                                        "65536",
                                        "1e18",
                                        "-2"};
  return numbers;
}

void mutateText(std::string &input, Rng &rng) {
  auto any = [&](size_t n) {
    return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
  };
  switch (rng() % 4) {
  case 0: { // a number becomes an extreme one
    std::vector<std::pair<size_t, size_t>> numbers;
    for (size_t i = 0; i < input.size();) {
      if (isdigit((unsigned char)input[i])) {
        // digits[.digits][e[+-]digits]: "4x8xf32" holds three numbers.
        size_t j = i;
        auto digits = [&] {
          while (j < input.size() && isdigit((unsigned char)input[j]))
            ++j;
        };
        digits();
        if (j + 1 < input.size() && input[j] == '.' &&
            isdigit((unsigned char)input[j + 1])) {
          ++j;
          digits();
        }
        if (j + 1 < input.size() && (input[j] == 'e' || input[j] == 'E') &&
            (isdigit((unsigned char)input[j + 1]) || input[j + 1] == '-' ||
             input[j + 1] == '+')) {
          j += 2;
          digits();
        }
        numbers.push_back({i, j - i});
        i = j;
      } else {
        ++i;
      }
    }
    if (numbers.empty())
      return;
    auto [at, len] = numbers[any(numbers.size())];
    auto extremes = interestingNumbers();
    input.replace(at, len, extremes[any(extremes.size())]);
    return;
  }
  default: { // line-level edits
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t i = 0; i <= input.size(); ++i)
      if (i == input.size() || input[i] == '\n') {
        lines.push_back(input.substr(start, i - start));
        start = i + 1;
      }
    if (lines.empty())
      return;
    size_t a = any(lines.size()), b = any(lines.size());
    unsigned op = rng() % 3;
    if (op == 0)
      lines.insert(lines.begin() + a, lines[b]);
    else if (op == 1 && lines.size() > 1)
      lines.erase(lines.begin() + a);
    else
      std::swap(lines[a], lines[b]);
    input.clear();
    for (size_t i = 0; i < lines.size(); ++i)
      input += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  }
  }
}

static void noMutation(std::string &, Rng &) {}
static std::vector<std::string> noSeeds() { return {}; }

/// The harness's own check (test/fuzz/harness.test): an input starting
/// with "crash" dereferences null, "abort" aborts, "divide" divides by
/// zero, "hang" loops, "allocate" allocates 1 GiB through LLVM (which
/// aborts when the allocation fails: past --max-memory); anything else is
/// refused.
/// Under the sanitizers (scripts/test.sh --sanitize) UBSan would report the
/// null load and the division first and halt without a signal; there the
/// selftest raises the signals the hardware would.
static Outcome runSelfTest(llvm::StringRef input) {
  static volatile int zero = 0, seven = 7;
  static int *volatile null = nullptr;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
  constexpr bool sanitized = true;
#else
  constexpr bool sanitized = false;
#endif
  if (input.starts_with("crash"))
    return sanitized ? Outcome(raise(SIGSEGV)) : Outcome(*null);
  if (input.starts_with("abort"))
    abort();
  if (input.starts_with("divide"))
    return sanitized ? Outcome(raise(SIGFPE)) : Outcome(seven / zero);
  if (input.starts_with("hang"))
    for (;;)
      zero = zero;
  if (input.starts_with("allocate")) {
    // Under ASan there is no address-space limit (FuzzMain.cpp): abort as
    // LLVM would on a failed allocation.
    if (sanitized && maxMemoryMiB <= 1024)
      abort();
    free(llvm::safe_malloc(size_t(1) << 30));
  }
  return Outcome::Refused;
}
static std::vector<std::string> selfSeeds() { return {"fine"}; }

llvm::ArrayRef<Target> targets() {
  static const Target all[] = {
      {"onnx", ".onnx", runONNX, mutateONNX, noSeeds},
      {"mlir", ".mlir", runMLIR, mutateText, noSeeds},
      {"cluster", ".yaml", runCluster, mutateText, clusterSeeds},
      {"npy", ".npy", runNpy, noMutation, npySeeds},
      {"megatron", ".sh", runMegatron, mutateText, megatronSeeds},
      {"selftest", ".txt", runSelfTest, mutateText, selfSeeds}};
  return all;
}

} // namespace distopt::fuzz
