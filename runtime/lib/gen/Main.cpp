//===- Main.cpp - main() of generated programs ----------------------------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Main.h; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Main.h"
#include "distrt/gen/Heap.h"
#include "distrt/gen/Replica.h"

#include <csignal>
#include <unistd.h>
#ifdef DISTRT_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace dg {

/// A whole number in [min, max] from a flag's value, digits only.
static bool parseCountIn(const char *flag, const std::string &value,
                         long long min, long long max, long long &out) {
  bool digits = !value.empty() && value.size() <= 19;
  for (char c : value)
    digits = digits && c >= '0' && c <= '9';
  long long v = digits ? strtoll(value.c_str(), nullptr, 10) : 0;
  if (!digits || v < min || v > max) {
    fprintf(stderr,
            "error: %s needs a whole number from %lld to %lld, got "
            "'%s'\n",
            flag, min, max, value.c_str());
    return false;
  }
  out = v;
  return true;
}

bool parseCount(const char *flag, const std::string &value, long long max,
                long long &out) {
  return parseCountIn(flag, value, 1, max, out);
}

bool parseCountOrZero(const char *flag, const std::string &value, long long max,
                      long long &out) {
  return parseCountIn(flag, value, 0, max, out);
}

int agreeOnRun(Program &P, const RunRecord &mine, const char *who) {
  const size_t bytes = sizeof(mine.values);
  int64_t n = RunRecord::Count, one = 1;
  void *buf = P.alloc(bytes), *flag = P.alloc(sizeof(long long));
  if (!buf || !flag || P.upload(buf, mine.values, bytes))
    return 1;
  distrt_tensor t = distrt_make_tensor(buf, DISTRT_I64, 1, &n);
  if (P.check(distrt_broadcast(P.comm, &t, 0), "agreeing on the run"))
    return 1;
  RunRecord root;
  if (P.download(root.values, buf, bytes))
    return 1;
  long long differs = 0;
  for (int i = 0; i < RunRecord::Count; ++i)
    if (root.values[i] != mine.values[i]) {
      differs = 1;
      if (i == RunRecord::Program)
        fprintf(stderr,
                "error: %sruns another program than rank 0 (fingerprint "
                "%016llx here, %016llx on rank 0); launch every rank with "
                "the same executable\n",
                who, (unsigned long long)mine.values[i],
                (unsigned long long)root.values[i]);
      else
        fprintf(stderr,
                "error: %s%s is %lld here but %lld on rank 0; give every "
                "rank the same options\n",
                who, RunRecord::name(i), mine.values[i], root.values[i]);
    }
  distrt_tensor ft = distrt_make_tensor(flag, DISTRT_I64, 1, &one);
  if (P.upload(flag, &differs, sizeof differs) ||
      P.check(distrt_all_reduce(P.comm, &ft, nullptr, DISTRT_REDUCE_MAX),
              "agreeing on the run") ||
      P.download(&differs, flag, sizeof differs))
    return 1;
  P.releaseAll();
  if (differs)
    return fail(P.err,
                "the ranks of the job disagree on the program or its run "
                "options (each differing rank names what); nothing ran");
  return 0;
}

int takeShard(HostTensor &t, int rank, int world) {
  if (world == 1)
    return 0;
  size_t block = t.data.size() / (size_t)world;
  std::vector<char> mine(t.data.begin() + (size_t)rank * block,
                         t.data.begin() + (size_t)(rank + 1) * block);
  t.data.swap(mine);
  t.spec.dims[0] /= world;
  return 0;
}

void printSpecs(const Model &m) {
  printf("model %s (from %s)\n", m.name, m.source);
  for (int i = 0; i < m.numInputs; ++i)
    printf("  input  %s: %s %s\n", m.inputs[i].name,
           dtypeInfo(m.inputs[i].dtype).name,
           shapeStr(m.inputs[i].dims, m.inputs[i].rank).c_str());
  for (int i = 0; i < m.numOutputs; ++i)
    printf("  output %s: %s %s -> %s.npy\n", m.outputs[i].name,
           dtypeInfo(m.outputs[i].dtype).name,
           shapeStr(m.outputs[i].dims, m.outputs[i].rank).c_str(),
           sanitizeName(m.outputs[i].name).c_str());
}

int writeTrace(const std::string &path,
               const std::vector<Program::TraceEvent> &events, int rank,
               const char *model, Error &err) {
  FILE *f = fopen(path.c_str(), "w");
  if (!f)
    return fail(err, "--trace: cannot write '%s' (%s)", path.c_str(),
                strerror(errno));
  auto category = [](const char *name) {
    std::string n(name);
    if (n.rfind("send", 0) == 0 || n.rfind("recv", 0) == 0)
      return "p2p";
    if (n.rfind("OPT", 0) == 0)
      return "optimizer";
    if (n[0] == 'F')
      return "forward";
    if (n[0] == 'B')
      return "backward";
    if (n[0] == 'W')
      return "weight-grad";
    if (n == "step" || n == "run")
      return "run";
    return "collective";
  };
  bool ok = fprintf(f,
                    "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n"
                    "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
                    "\"args\": {\"name\": \"rank %d (%s)\"}}",
                    rank, rank, model) >= 0;
  for (const Program::TraceEvent &e : events)
    ok = ok && fprintf(f,
                       ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", "
                       "\"pid\": %d, \"tid\": 0, \"ts\": %.3f, \"dur\": %.3f, "
                       "\"args\": {\"step\": %lld}}",
                       e.name, category(e.name), rank, e.start * 1e6,
                       (e.end - e.start) * 1e6, e.step) >= 0;
  ok = ok && fprintf(f, "\n]}\n") >= 0;
  ok = fclose(f) == 0 && ok;
  if (!ok)
    return fail(err, "--trace: cannot write '%s' (%s)", path.c_str(),
                strerror(errno));
  return 0;
}

int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--model NAME] [--list] [--weights-dir DIR] "
          "[--output-dir DIR] [--repeat N] [--steps N] [--threads N] [--time] "
          "[--save-state DIR] [--save-every N] [--first-step K] "
          "[--load-state DIR] [--redundant DIR] [--trace FILE] "
          "[--timeout SECONDS] "
          "(--save-state/--load-state DIR/{rank}: one folder per rank; "
          "--timeout: how long a rank waits for its peers, default 60, 0 "
          "forever; --save-every: also save the state after every N steps, "
          "each checkpoint replacing the last whole; --first-step: number "
          "the steps from K (a resumed run); --redundant: a pipeline's "
          "ranks copy their state to the rank before them after every step, "
          "for dist-run --redundant; --trace: the "
          "executor's Chrome trace, FILE with {rank} "
          "in it for a job of several ranks) "
          "[--progress[=auto|always|never]] (training steps per second and "
          "the time left, on stderr; auto: on a terminal) "
          "[--profile] (wall and CPU time per op kind and per op, on stderr) "
          "[--measure-noise-scale] (a program with gradient accumulation: "
          "the gradient noise scale over the steps, for dist-opt "
          "--dist-noise-scale) "
          "[--profile-json FILE] [--profile-device NAME] (the times as the "
          "cost model's profile database) "
          "[--serve DIR [--serve-first K] [--serve-control CTRL]] (answer "
          "requests DIR/<k>/<input>.npy with DIR/<k>.out/<output>.npy until "
          "DIR/stop says to stop) "
          "[NAME=]INPUT.npy...\n"
          "Inputs are .npy files, by name (NAME=FILE) or in order; each "
          "output is written as OUTPUT_DIR/<name>.npy.\n",
          argv0);
  return 2;
}

int printRankProfiles(Program &P, const Profiler &prof) {
  char *text = nullptr;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem)
    return fail(P.err, "--profile: cannot format the report: %s",
                strerror(errno));
  fprintf(mem, "profile of rank %d:\n", P.rank);
  prof.print(mem);
  fclose(mem);
  const int32_t tag = 32767;
  int rc = 0;
  if (P.rank != 0) {
    int64_t n = (int64_t)len;
    distrt_tensor size = T(&n, DISTRT_I64, {1});
    distrt_tensor body = T(text, DISTRT_U8, {n});
    rc = P.check(distrt_send(P.comm, &size, 0, tag), "sending the profile") ||
         (n > 0 &&
          P.check(distrt_send(P.comm, &body, 0, tag), "sending the profile"));
  } else {
    fwrite(text, 1, len, stderr);
    for (int r = 1; r < P.worldSize && !rc; ++r) {
      int64_t n = 0;
      distrt_tensor size = T(&n, DISTRT_I64, {1});
      if (P.check(distrt_recv(P.comm, &size, r, tag), "receiving a profile")) {
        rc = 1;
        break;
      }
      std::vector<char> other((size_t)n);
      distrt_tensor body = T(other.data(), DISTRT_U8, {n});
      if (n > 0 &&
          P.check(distrt_recv(P.comm, &body, r, tag), "receiving a profile")) {
        rc = 1;
        break;
      }
      fwrite(other.data(), 1, other.size(), stderr);
    }
    fflush(stderr);
  }
  free(text);
  return rc;
}

std::string formatted(const char *fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out(n > 0 ? (size_t)n : 0, '\0');
  if (n > 0)
    vsnprintf(&out[0], (size_t)n + 1, fmt, again);
  va_end(again);
  return out;
}

int loadInput(const Model &model, Program &P, int idx, const std::string &file,
              const std::string &who, bool &microbatched,
              std::string &message) {
  microbatched = false;
  if (readNpy(file, P.inputs[idx], P.err)) {
    message = formatted("input '%s': %s", model.inputs[idx].name,
                        P.err.message.c_str());
    return 1;
  }
  const TensorSpec &want = model.inputs[idx];
  HostTensor &got = P.inputs[idx];
  got.spec.name = want.name;
  // Data parallelism: the file holds every replica's rows, the replica
  // count times the compiled per-replica batch along dim 0.
  bool sharded = model.shards && model.shards[idx] && want.rank > 0;
  int replicas = P.replicas, replica = P.replica;
  int64_t rows = sharded     ? want.dims[0] * replicas
                 : want.rank ? want.dims[0]
                             : 0;
  auto shaped = [&](int64_t dim0) {
    bool ok = got.spec.dtype == want.dtype && got.spec.rank == want.rank;
    for (int d = 0; ok && d < want.rank; ++d)
      ok = got.spec.dims[d] == (d == 0 ? dim0 : want.dims[d]);
    return ok;
  };
  bool same = shaped(rows);
  // Gradient accumulation over distinct micro-batches: the file holds
  // `accumulation` times the rows (of each replica, replica-major), and
  // micro-batch k of a step reads block k of them.
  if (!same && want.rank > 0 && model.accumulation > 1 &&
      shaped(rows * model.accumulation)) {
    if (sharded)
      takeShard(got, replica, replicas);
    microbatched = true;
    return 0;
  }
  if (!same && sharded) {
    TensorSpec all = want;
    all.dims[0] = rows;
    message = formatted(
        "%sinput '%s' from '%s': expected %s %s (%d "
        "data-parallel replica(s) x the compiled per-replica batch %s, "
        "split along dim 0), got %s %s. Give every rank the whole "
        "batch, or recompile with dist-compile --input-shape=%s:... "
        "for another per-replica batch",
        who.c_str(), want.name, file.c_str(), dtypeInfo(want.dtype).name,
        shapeStr(all.dims, all.rank).c_str(), replicas,
        shapeStr(want.dims, want.rank).c_str(), dtypeInfo(got.spec.dtype).name,
        shapeStr(got.spec.dims, got.spec.rank).c_str(), want.name);
    return 1;
  }
  if (sharded) {
    takeShard(got, replica, replicas);
    return 0;
  }
  // A one-element array stands for a scalar input (rank 0) and back.
  if (!same && got.spec.dtype == want.dtype && got.spec.numel() == 1 &&
      want.numel() == 1 && (got.spec.rank == 0 || want.rank == 0))
    same = true;
  if (!same) {
    std::string accumulated;
    if (want.rank > 0 && model.accumulation > 1)
      accumulated = " (or " + std::to_string(model.accumulation) +
                    " times its rows: one block per micro-batch of a step)";
    message = formatted(
        "input '%s' from '%s': expected %s %s%s, got %s %s. "
        "The program was compiled for fixed shapes; recompile with "
        "dist-compile --input-shape=%s:%s... to change them",
        want.name, file.c_str(), dtypeInfo(want.dtype).name,
        shapeStr(want.dims, want.rank).c_str(), accumulated.c_str(),
        dtypeInfo(got.spec.dtype).name,
        shapeStr(got.spec.dims, got.spec.rank).c_str(), want.name, "D0xD1");
    return 1;
  }
  return 0;
}

int serveRequests(Program &P, const Model &model, Serve &S, bool root,
                  const std::string &who) {
  std::signal(SIGUSR1, onServeStopSignal);
  if (model.run(P))
    return 1;
  if (P.comm && P.worldSize > 1 &&
      P.check(distrt_barrier(P.comm), "--serve: loading the weights"))
    return 1;
  if (P.rank == 0 && !S.control.empty() &&
      writeTextAtomically(S.controlFile("ready"), "ready\n", P.err))
    return 1;
  long long firstTaken = -1, lastTaken = -1;
  for (;;) {
    // Rank 0 decides; an idle decision every 0.2 s keeps the other ranks
    // within their --timeout while no request comes.
    long long decision[1] = {kServeNone};
    if (P.rank == 0 && serveDecide(S, 0.2, decision[0], P.err))
      return 1;
    if (serveAgree(P, decision, 1))
      return 1;
    long long k = decision[0];
    if (k == kServeIdle)
      continue;
    if (k == kServeStop)
      break;
    if (firstTaken < 0)
      firstTaken = k;
    lastTaken = k;
    if (P.rank == 0)
      S.next = k + 1;
    ++S.answered;
    // Every rank reads the request (the stages that need the inputs use
    // them); any rank's failure refuses it on all.
    std::string message;
    long long bad[1] = {0};
    for (int i = 0; i < model.numInputs && !bad[0]; ++i) {
      std::string file =
          S.request(k) + "/" + sanitizeName(model.inputs[i].name) + ".npy";
      bool blocks = false;
      if (loadInput(model, P, i, file, who, blocks, message))
        bad[0] = 1;
      else if (blocks) {
        message = formatted("input '%s' from '%s' holds several batches; a "
                            "request is one global batch",
                            model.inputs[i].name, file.c_str());
        bad[0] = 1;
      }
    }
    bool mine = bad[0] != 0;
    if (serveAgree(P, bad, 1))
      return 1;
    if (bad[0]) {
      if (!mine)
        message = "another rank of the job could not read its inputs (its "
                  "error is on stderr)";
      if (mine)
        fprintf(stderr, "error: %s--serve: request '%s' refused: %s\n",
                who.c_str(), S.request(k).c_str(), message.c_str());
      if (root &&
          writeAnswer(S, k, ".err",
                      {{"error.txt", nullptr, nullptr, message + "\n"}}, P.err))
        return 1;
      continue;
    }
    if (model.run(P))
      return 1;
    if (!root)
      continue;
    std::vector<AnswerFile> files;
    for (int o = 0; o < model.numOutputs; ++o)
      files.push_back({sanitizeName(model.outputs[o].name) + ".npy",
                       &P.outputs[o].spec, P.outputs[o].data.data(), ""});
    if (writeAnswer(S, k, ".out", files, P.err))
      return 1;
  }
  if (P.rank != 0)
    return 0;
  if (!S.control.empty() &&
      writeTextAtomically(
          S.controlFile("last"),
          (lastTaken >= 0 ? std::to_string(lastTaken) : std::string("none")) +
              "\n",
          P.err))
    return 1;
  if (S.answered)
    fprintf(stderr, "serve: took %lld request(s), %lld-%lld, from %s\n",
            S.answered, firstTaken, lastTaken, S.dir.c_str());
  else
    fprintf(stderr, "serve: took no request from %s\n", S.dir.c_str());
  return 0;
}

namespace {

/// The command line of a generated program (usage()).
struct Options {
  std::string modelName, weightsDir, outDir = ".";
  std::vector<std::string> args; ///< the input files, [NAME=]FILE
  bool list = false, printSteps = false, timing = false;
  long long repeat = 1, threads = 0, saveEvery = 0, firstStep = 1;
  /// Seconds a rank waits for a peer (--timeout); -1: the runtime's
  /// default (60 s, or DISTRT_TIMEOUT).
  long long timeout = -1;
  std::string saveDir, loadDir, traceFile;
  bool profile = false, measureNoise = false;
  /// --progress: "auto" (on a terminal), "always" or "never".
  std::string progressMode = "auto";
  std::string profileJson, profileDevice;
  Serve serve;
  std::string redundantDir; ///< --redundant (Replica.h)
  bool serveOption = false; ///< --serve-first or --serve-control given
};

/// Reads the command line into `o` and checks the options against each
/// other: 0, or the exit code of a bad command line (printed).
int parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // --option=VALUE as well as --option VALUE.
    bool inlined = false;
    std::string inlineValue;
    if (size_t eq = a.find('=');
        a.rfind("--", 0) == 0 && eq != std::string::npos) {
      inlined = true;
      inlineValue = a.substr(eq + 1);
      a.resize(eq);
    }
    bool tookValue = false;
    auto value = [&](std::string &dst) {
      tookValue = true;
      if (inlined) {
        dst = inlineValue;
        return true;
      }
      if (i + 1 >= argc) {
        fprintf(stderr, "error: %s needs a value\n", a.c_str());
        return false;
      }
      dst = argv[++i];
      return true;
    };
    // A count of at most `max` (parseCount), or also 0 (`zero`).
    auto count = [&](long long max, long long &dst, bool zero = false) {
      std::string v;
      return value(v) && (zero ? parseCountOrZero(a.c_str(), v, max, dst)
                               : parseCount(a.c_str(), v, max, dst));
    };
    if (a == "--model") {
      if (!value(o.modelName))
        return 2;
    } else if (a == "--weights-dir") {
      if (!value(o.weightsDir))
        return 2;
    } else if (a == "--output-dir" || a == "-o") {
      if (!value(o.outDir))
        return 2;
    } else if (a == "--repeat" || a == "--steps") {
      if (!count(2147483647LL, o.repeat))
        return 2;
      o.printSteps = o.printSteps || a == "--steps";
    } else if (a == "--threads") {
      if (!count(4096, o.threads))
        return 2;
    } else if (a == "--time") {
      o.timing = true;
    } else if (a == "--timeout") {
      if (!count(1000000000LL, o.timeout, /*zero=*/true))
        return 2;
    } else if (a == "--save-state") {
      if (!value(o.saveDir))
        return 2;
    } else if (a == "--first-step") {
      if (!count(2147483647LL, o.firstStep))
        return 2;
    } else if (a == "--save-every") {
      if (!count(2147483647LL, o.saveEvery))
        return 2;
    } else if (a == "--load-state") {
      if (!value(o.loadDir))
        return 2;
    } else if (a == "--redundant") {
      if (!value(o.redundantDir))
        return 2;
    } else if (a == "--trace") {
      if (!value(o.traceFile))
        return 2;
    } else if (a == "--progress") {
      o.progressMode = inlined ? inlineValue : "always";
      tookValue = true;
      if (o.progressMode != "auto" && o.progressMode != "always" &&
          o.progressMode != "never") {
        fprintf(stderr,
                "error: unknown --progress='%s': expected auto (on a "
                "terminal), always or never\n",
                o.progressMode.c_str());
        return 2;
      }
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--measure-noise-scale") {
      o.measureNoise = true;
    } else if (a == "--profile-json") {
      if (!value(o.profileJson))
        return 2;
      o.profile = true;
    } else if (a == "--profile-device") {
      if (!value(o.profileDevice))
        return 2;
    } else if (a == "--serve") {
      if (!value(o.serve.dir))
        return 2;
      if (o.serve.dir.empty()) {
        fprintf(stderr, "error: --serve needs a folder\n");
        return 2;
      }
    } else if (a == "--serve-control") {
      if (!value(o.serve.control))
        return 2;
      o.serveOption = true;
    } else if (a == "--serve-first") {
      if (!count(999999999999999999LL, o.serve.first, /*zero=*/true))
        return 2;
      o.serveOption = true;
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--help" || a == "-h") {
      return usage(argv[0]);
    } else if (a.size() > 1 && a[0] == '-') {
      fprintf(stderr, "error: unknown option '%s'\n", a.c_str());
      return usage(argv[0]);
    } else {
      o.args.push_back(a);
    }
    if (inlined && !tookValue) {
      fprintf(stderr, "error: %s takes no value (got '%s')\n", a.c_str(),
              argv[i]);
      return usage(argv[0]);
    }
  }
  if (o.saveEvery && o.saveDir.empty()) {
    fprintf(stderr,
            "error: --save-every %lld needs --save-state DIR, the "
            "folder its checkpoints replace\n",
            o.saveEvery);
    return 2;
  }
  if (o.serveOption && !o.serve.enabled()) {
    fprintf(stderr, "error: --serve-first and --serve-control need --serve "
                    "DIR, the folder of requests\n");
    return 2;
  }
  if (o.serve.enabled()) {
    const char *clash = !o.args.empty()      ? "input files"
                        : o.repeat != 1      ? "--repeat/--steps"
                        : !o.saveDir.empty() ? "--save-state"
                        : o.measureNoise     ? "--measure-noise-scale"
                        : !o.serve.control.empty() && o.serve.first >= 0
                            ? "--serve-first (CTRL/start gives the first "
                              "request under --serve-control)"
                            : nullptr;
    if (clash) {
      fprintf(stderr,
              "error: --serve answers requests DIR/<k>/<input>.npy until it "
              "is told to stop; leave out %s\n",
              clash);
      return 2;
    }
    for (const std::string *d : {&o.serve.dir, &o.serve.control})
      if (!d->empty() && !isDirectory(*d)) {
        fprintf(stderr, "error: %s '%s' is not a folder; create it first%s\n",
                d == &o.serve.dir ? "--serve" : "--serve-control", d->c_str(),
                d == &o.serve.dir ? " (requests go in DIR/<k>/)" : "");
        return 2;
      }
  }
  return 0;
}

/// The model --model names (the only one when the program holds one) and
/// the options that model rules out: 0 with `model` set, or 2 (printed).
int chooseModel(const Options &o, const Model *models, int numModels,
                const Model *&model) {
  model = numModels == 1 && o.modelName.empty() ? &models[0] : nullptr;
  for (int m = 0; m < numModels && !model; ++m)
    if (o.modelName == models[m].name)
      model = &models[m];
  if (!model) {
    fprintf(stderr, "error: %s; this program holds:",
            o.modelName.empty()
                ? "several models: choose one with --model NAME"
                : ("no model named '" + o.modelName + "'").c_str());
    for (int m = 0; m < numModels; ++m)
      fprintf(stderr, " %s", models[m].name);
    fprintf(stderr, "\n");
    return 2;
  }
  if (o.serve.enabled() && model->trains) {
    fprintf(stderr,
            "error: --serve answers inference requests; model %s is a "
            "training step (it would train on them)\n",
            model->name);
    return 2;
  }
  if (!o.saveDir.empty() && !model->trains) {
    fprintf(stderr,
            "error: --save-state saves a training step's state; model %s "
            "runs inference, whose weights come from its weights file (or "
            "from a training run's saved state with --load-state DIR) and "
            "never change: leave out --save-state\n",
            model->name);
    return 2;
  }
  if (o.measureNoise && !model->apply) {
    fprintf(stderr,
            "error: --measure-noise-scale needs a training program compiled "
            "with gradient accumulation: dist-compile --train=\"... "
            "accumulation-steps=K\" (K >= 2); model %s has none\n",
            model->name);
    return 2;
  }
  return 0;
}

/// One run of the chosen model: the program's state and what the phases
/// below share.
struct Run {
  const Model *model = nullptr;
  bool cuda = false;
  Program P;
  int32_t rank = 0, world = 1, localRank = 0;
  /// Every rank reports its own errors; names the rank when there are
  /// several ("rank 1: ").
  std::string who;
  bool pipeline = false;
  /// Inputs holding every micro-batch of an accumulation step (moved to
  /// `whole`; P.inputs holds the running micro-batch's block).
  std::vector<bool> microbatched;
  std::vector<HostTensor> whole;
  /// --time's note on how started all-reduces run (nullptr: none).
  const char *commNote = nullptr;
  /// Pipelines: the last stage's rank holds the outputs.
  bool root = false;
  Profiler prof;
  std::vector<Program::TraceEvent> trace;
  RunTimer timer;
  NoiseScale noise;
  /// --redundant: the copies of this rank's and its successor's state.
  Replica replica;
  /// --save-state with {rank} expanded, and whether this rank saves.
  std::string saveDir;
  bool saves = false;
};

/// Joins the launcher's world and checks the options against the job's
/// ranks: 0, or the exit code (printed).
int joinJob(Run &R, const Options &o) {
  const Model *model = R.model;
  Program &P = R.P;
  P.device = R.cuda;
  if (model->collectives &&
      distrt_comm_env(&R.rank, &R.world, &R.localRank) != DISTRT_OK) {
    fprintf(stderr, "error: %s\n", distrt_last_error(nullptr));
    return 2;
  }
  int32_t rank = R.rank, world = R.world;
  P.rank = rank;
  P.worldSize = world;
  const std::string &who = R.who =
      world > 1 ? "rank " + std::to_string(rank) + ": " : std::string();
  R.pipeline = model->pipelineRanks > 0;
  if (o.measureNoise && world > 1) {
    fprintf(stderr,
            "error: %s--measure-noise-scale runs on one process (%d ranks "
            "here): each rank's accumulators hold its own rows' gradients; "
            "run the single-process program compiled with "
            "accumulation-steps\n",
            who.c_str(), world);
    return 2;
  }
  if (R.pipeline && world != model->pipelineRanks) {
    fprintf(stderr,
            "error: %smodel %s is planned for %d rank(s) (ranks 0..%d), but "
            "the job runs %d rank(s); launch it with mpirun -np %d\n",
            who.c_str(), model->name, model->pipelineRanks,
            model->pipelineRanks - 1, world, model->pipelineRanks);
    return 1;
  }
  // The data-parallel replica whose rows of the sharded inputs this rank
  // keeps; its block of the batch is that of dropout masks too.
  P.replicas = model->replicas ? model->replicas : world;
  P.replica = model->replicaOf ? model->replicaOf[rank] : rank;
  P.batchBlock = static_cast<uint64_t>(P.replica);
  P.batchBlocks = static_cast<uint64_t>(P.replicas);
  // Pipeline ranks own different stages' weights and state, ZeRO ranks
  // different shards of the optimizer state: each saves its own folder.
  // (Every rank may load one folder of whole tensors: each takes its part.)
  if (R.pipeline && world > 1 && !o.saveDir.empty() &&
      o.saveDir.find("{rank}") == std::string::npos) {
    fprintf(stderr,
            "error: %s--save-state '%s': the ranks of this job hold "
            "different weights or state (pipeline stages, ZeRO shards); name "
            "one folder per rank with {rank} in it, e.g. '%s/{rank}'\n",
            who.c_str(), o.saveDir.c_str(), o.saveDir.c_str());
    return 2;
  }
  R.replica.dir = o.redundantDir;
  if (R.replica.enabled())
    if (int bad = R.replica.begin(P, o.printSteps, R.pipeline, R.cuda, who))
      return bad;
  // A pipeline's ops run once per micro-batch and its ranks run different
  // stages: the database's per-micro-batch entries come from the
  // single-device program (dist-profile compiles one). A tensor-parallel
  // job of one stage and one micro-batch writes one per rank.
  if (R.pipeline && !o.profileJson.empty() && !model->profileTp) {
    fprintf(stderr,
            "error: %s--profile-json: model %s is a pipeline program, whose "
            "per-op times are per step and per rank; profile the model's "
            "single-device program (dist-profile does) and use --profile "
            "here\n",
            who.c_str(), model->name);
    return 2;
  }
  if (R.pipeline && !o.profileJson.empty() && world > 1 &&
      o.profileJson.find("{rank}") == std::string::npos) {
    fprintf(stderr,
            "error: %s--profile-json '%s': each of the %d tensor-parallel "
            "ranks writes its own database; name one file per rank with "
            "{rank} in it, e.g. 'prof.{rank}.json'\n",
            who.c_str(), o.profileJson.c_str(), world);
    return 2;
  }
  return 0;
}

/// Reads the input files (or, serving, a batch of zeros) into P.inputs:
/// 0, or the exit code (printed).
int loadInputs(Run &R, const Options &o) {
  const Model *model = R.model;
  Program &P = R.P;
  P.weightsDir = o.weightsDir;
  P.modelDir = model->modelDir;
  P.stateDir = expandRank(o.loadDir, R.rank);
  P.statePattern = o.loadDir;
  P.inputs.resize(model->numInputs);
  std::vector<bool> given(model->numInputs, false);
  std::vector<bool> &microbatched = R.microbatched;
  microbatched.assign(model->numInputs, false);
  int next = 0;
  for (const std::string &a : o.args) {
    size_t eq = a.find('=');
    int idx = -1;
    std::string file = a;
    if (eq != std::string::npos) {
      std::string name = a.substr(0, eq);
      for (int k = 0; k < model->numInputs; ++k)
        if (name == model->inputs[k].name)
          idx = k;
      if (idx < 0) {
        fprintf(stderr, "error: model %s has no input named '%s'\n",
                model->name, name.c_str());
        printSpecs(*model);
        return 2;
      }
      file = a.substr(eq + 1);
    } else {
      while (next < model->numInputs && given[next])
        ++next;
      idx = next;
      if (idx >= model->numInputs) {
        fprintf(stderr,
                "error: model %s takes %d inputs; '%s' is one too many\n",
                model->name, model->numInputs, a.c_str());
        return 2;
      }
    }
    if (given[idx]) {
      fprintf(stderr,
              "error: input '%s' is given twice ('%s' is the second); pass "
              "each input once\n",
              model->inputs[idx].name, a.c_str());
      return 2;
    }
    given[idx] = true;
    bool blocks = false;
    std::string message;
    if (loadInput(*model, P, idx, file, R.who, blocks, message)) {
      fprintf(stderr, "error: %s\n", message.c_str());
      return 1;
    }
    microbatched[idx] = blocks;
  }
  std::vector<HostTensor> &whole = R.whole;
  whole.resize(model->numInputs);
  for (int k = 0; k < model->numInputs; ++k)
    if (microbatched[k]) {
      whole[k] = std::move(P.inputs[k]);
      P.inputs[k].spec = whole[k].spec;
      P.inputs[k].spec.dims[0] /= model->accumulation;
      P.inputs[k].data.resize(whole[k].data.size() /
                              (size_t)model->accumulation);
    }
  // Serving: the inputs come with each request; a batch of zeros loads the
  // weights first.
  for (int k = 0; k < model->numInputs && o.serve.enabled(); ++k) {
    given[k] = true;
    P.inputs[k].spec = model->inputs[k];
    P.inputs[k].data.assign(P.inputs[k].spec.bytes(), 0);
  }
  for (int k = 0; k < model->numInputs; ++k)
    if (!given[k]) {
      fprintf(stderr,
              "error: input '%s' (%s %s) was not given; pass %s=FILE.npy\n",
              model->inputs[k].name, dtypeInfo(model->inputs[k].dtype).name,
              shapeStr(model->inputs[k].dims, model->inputs[k].rank).c_str(),
              model->inputs[k].name);
      return 2;
    }
  return 0;
}

/// Creates the runtime context (and the CUDA stream), joins the job's
/// communicator and agrees with the other ranks on the run: 0, or the
/// exit code (printed).
int startRuntime(Run &R, const Options &o) {
  const Model *model = R.model;
  Program &P = R.P;
  const std::string &who = R.who;
  bool cuda = R.cuda;
  // One GPU per rank of a node: the node-local rank picks the device.
  int device = 0;
  if (cuda && model->collectives && distrt_cuda_device_count() > 0)
    device = R.localRank % distrt_cuda_device_count();
  distrt_status st = distrt_context_create(
      cuda ? DISTRT_BACKEND_CUDA : DISTRT_BACKEND_CPU, device, &P.ctx);
  if (st != DISTRT_OK) {
    fprintf(stderr, "error: cannot create the %s runtime context: %s\n",
            cuda ? "CUDA" : "CPU", distrt_last_error(nullptr));
    return st == DISTRT_ERROR_NO_DEVICE ? 3 : 1;
  }
  // CUDA programs launch their generated kernels on a stream of their own
  // that the runtime's calls share. Only the archive with the CUDA backend
  // (which CUDA programs link) has one to make.
#ifdef DISTRT_HAVE_CUDA
  if (cuda) {
    cudaStream_t stream;
    if (cudaStreamCreate(&stream) != cudaSuccess ||
        distrt_context_set_stream(P.ctx, stream) != DISTRT_OK) {
      fprintf(stderr, "error: cannot create a CUDA stream for the program\n");
      return 1;
    }
    P.stream = stream;
  }
#endif
  if (model->collectives && distrt_comm_create(P.ctx, &P.comm) != DISTRT_OK) {
    fprintf(stderr, "error: %scannot join the job's communicator: %s\n",
            who.c_str(), distrt_last_error(P.ctx));
    distrt_context_destroy(P.ctx);
    return 1;
  }
  // Started all-reduces overlap the compute on a worker thread where a
  // core is free for it, else run where they are waited for (unless
  // DISTRT_COMM_THREAD says); --time says which.
  if (model->collectives) {
    const char *env = getenv("DISTRT_COMM_THREAD");
    bool thread = env ? !strcmp(env, "1") : coreForCommThread((int)o.threads);
    if (!env && distrt_comm_set_overlap(P.comm, thread) != DISTRT_OK) {
      fprintf(stderr, "error: %s%s\n", who.c_str(), distrt_last_error(P.ctx));
      distrt_comm_destroy(P.comm);
      distrt_context_destroy(P.ctx);
      return 1;
    }
    if (!strcmp(distrt_comm_backend(P.comm), "mpi"))
      R.commNote = thread ? "started all-reduces on a worker thread"
                          : "started all-reduces run when waited for";
  }
  if (model->collectives && o.timeout >= 0 &&
      distrt_comm_set_timeout(P.comm, (double)o.timeout) != DISTRT_OK) {
    fprintf(stderr, "error: %s%s\n", who.c_str(), distrt_last_error(P.ctx));
    distrt_comm_destroy(P.comm);
    distrt_context_destroy(P.ctx);
    return 2;
  }
  if (R.world > 1) {
    RunRecord mine = {
        {(long long)model->fingerprint, o.repeat, o.loadDir.empty() ? 0 : 1}};
    if (agreeOnRun(P, mine, who.c_str())) {
      fprintf(stderr, "error: %smodel %s: %s\n", who.c_str(), model->name,
              P.err.message.c_str());
      P.releaseAll();
      distrt_comm_destroy(P.comm);
      distrt_context_destroy(P.ctx);
      return 1;
    }
  }
  return 0;
}

/// Sizes the outputs and sets up --profile, --trace, the threads and
/// --save-state's folder: 0, or the exit code (printed).
int prepareRun(Run &R, const Options &o) {
  const Model *model = R.model;
  Program &P = R.P;
  R.root = P.rank == (R.pipeline ? model->outputRank : 0);
  P.outputs.resize(model->numOutputs);
  for (int k = 0; k < model->numOutputs; ++k) {
    P.outputs[k].spec = model->outputs[k];
    P.outputs[k].data.resize(P.outputs[k].spec.bytes());
  }
  if (o.profile) {
    R.prof.init(model->ops, model->numOps, !P.device);
    P.prof = &R.prof;
  }
  if (!o.traceFile.empty()) {
    if (R.world > 1 && o.traceFile.find("{rank}") == std::string::npos) {
      fprintf(stderr,
              "error: %s--trace '%s': each rank writes its own trace; name "
              "one file per rank with {rank} in it, e.g. 'trace.{rank}.json' "
              "(dist-run --trace merges them)\n",
              R.who.c_str(), o.traceFile.c_str());
      return 2;
    }
    if (!R.pipeline)
      fprintf(stderr,
              "note: --trace: model %s is not a pipeline of schedule actions; "
              "its trace holds one event per run\n",
              model->name);
    P.trace = &R.trace;
  }
  setThreads((int)o.threads);
  // Data-parallel ranks hold the same weights and outputs: rank 0 writes,
  // unless the folder names each rank ({rank} in it): then every rank does.
  bool perRank = o.saveDir.find("{rank}") != std::string::npos;
  R.saveDir = expandRank(o.saveDir, P.rank);
  R.saves = (R.root || perRank) && !R.saveDir.empty();
  return 0;
}

/// Step (or run) r of --steps/--repeat: every micro-batch, the optimizer,
/// the periodic checkpoint and the step's line. 0, or 1 with P.err.
int runStep(Run &R, const Options &o, long long r, int64_t microbatchRows,
            StepProgress &progress) {
  const Model *model = R.model;
  Program &P = R.P;
  int rc = 0;
  P.traceStep = r + 1;
  if (!R.pipeline)
    P.traceAction(o.printSteps ? "step" : "run");
  if (o.profile)
    R.prof.beginRun();
  if (o.timing)
    R.timer.begin();
  std::vector<double> sums(model->numOutputs, 0.0);
  if (o.measureNoise)
    R.noise.beginStep();
  for (int k = 0; k < model->accumulation && !rc; ++k) {
    for (int i = 0; i < model->numInputs; ++i)
      if (R.microbatched[i]) {
        size_t block = P.inputs[i].data.size();
        memcpy(P.inputs[i].data.data(),
               R.whole[i].data.data() + (size_t)k * block, block);
      }
    rc = model->run(P);
    if (!rc && o.measureNoise)
      rc = R.noise.afterMicrobatch(P);
    for (int out = 0; out < model->numOutputs && !rc; ++out)
      if (P.outputs[out].spec.numel() == 1 && P.outputs[out].spec.dtype == F32)
        sums[out] += *(const float *)P.outputs[out].data.data();
  }
  if (!rc && o.measureNoise)
    R.noise.endStep(microbatchRows);
  if (!rc && model->apply)
    rc = model->apply(P);
  // A run is done when the device is: synchronize before the clocks
  // stop.
  if ((o.profile || o.timing) && !rc &&
      P.check(distrt_synchronize(P.ctx), "synchronize"))
    rc = 1;
  if (o.profile)
    R.prof.endRun();
  if (!R.pipeline)
    P.traceAction(nullptr);
  if (o.timing && !rc)
    R.timer.end();
  if (o.printSteps)
    P.stepsDone = o.firstStep + r;
  if (!rc && R.saves && o.saveEvery && (r + 1) % o.saveEvery == 0 &&
      r + 1 < o.repeat && P.saveStateAtomically(R.saveDir))
    rc = 1;
  if (!rc && o.printSteps)
    injectFault("kill", P.rank, o.firstStep + r);
  if (rc)
    return rc;
  if (o.printSteps && R.root) {
    // Training: one line per step with every scalar f32 output (the loss;
    // the mean over the micro-batches of a step).
    progress.clear();
    printf("step %lld", o.firstStep + r);
    for (int k = 0; k < model->numOutputs; ++k)
      if (P.outputs[k].spec.numel() == 1 && P.outputs[k].spec.dtype == F32)
        printf(" %s %.9g", model->outputs[k].name,
               sums[k] / model->accumulation);
    printf("\n");
    fflush(stdout);
    progress.step(r + 1);
  }
  // --redundant: the step's state is committed after its line is printed,
  // so a recovered job never skips a step's line.
  if (R.replica.enabled() && R.replica.afterStep(P, o.firstStep + r))
    return 1;
  return 0;
}

/// Serves requests (--serve; `o.serve` counts them) or runs the
/// --steps/--repeat steps: 0, or 1 with P.err.
int runSteps(Run &R, Options &o) {
  Program &P = R.P;
  // The samples of one micro-batch: the rows of the batch inputs.
  int64_t microbatchRows = 1;
  for (const HostTensor &in : P.inputs)
    if (in.spec.rank > 0) {
      microbatchRows = in.spec.dims[0];
      break;
    }
  // Training steps' progress, on the rank that prints the steps.
  bool terminal = isatty(fileno(stderr));
  StepProgress progress;
  progress.begin(o.printSteps && R.root &&
                     (o.progressMode == "always" ||
                      (o.progressMode == "auto" && terminal)),
                 terminal, o.repeat);
  if (o.serve.enabled())
    return serveRequests(P, *R.model, o.serve, R.root, R.who);
  int rc = 0;
  for (long long r = 0; r < o.repeat && !rc; ++r)
    rc = runStep(R, o, r, microbatchRows, progress);
  return rc;
}

/// The end of a run (`rc`: the steps' result): --time, --profile,
/// --profile-json, --trace and --save-state, the runtime's release, then
/// the outputs. Returns the program's exit code.
int finishRun(Run &R, const Options &o, int rc) {
  const Model *model = R.model;
  Program &P = R.P;
  const std::string &who = R.who;
  int world = R.world;
  if (!rc && P.check(distrt_synchronize(P.ctx), "synchronize"))
    rc = 1;
  if (!rc && o.measureNoise && R.root && R.noise.print(stdout, P.err))
    rc = 1;
  if (!rc && o.timing && R.root)
    R.timer.print(o.printSteps ? "step" : "run", model->name, threadCount(),
                  R.commNote);
  if (!rc && o.profile && R.pipeline && world > 1 && !P.device) {
    // Each rank runs its own stages: rank 0 prints every rank's report, in
    // rank order (mpirun forwards each rank's stderr on its own, so reports
    // printed by the ranks themselves can arrive out of order or mixed).
    if (printRankProfiles(P, R.prof))
      rc = 1;
  } else if (!rc && o.profile && R.pipeline && world > 1) {
    // CUDA: transfers go through NCCL on device memory; each rank prints
    // its own report between barriers.
    for (int r = 0; r < world && !rc; ++r) {
      if (r == P.rank) {
        fprintf(stderr, "profile of rank %d:\n", r);
        R.prof.print(stderr);
        fflush(stderr);
      }
      if (P.check(distrt_barrier(P.comm), "barrier after the profile"))
        rc = 1;
    }
  } else if (!rc && o.profile && R.root) {
    if (!model->ops)
      fprintf(stderr,
              "profile: model %s records no per-op times; run times "
              "only\n",
              model->name);
    R.prof.print(stderr);
  }
  // The database: the root's, or every rank's of a tensor-parallel job.
  if (!rc && o.profile && !o.profileJson.empty() && (R.root || R.pipeline) &&
      R.prof.writeJson(expandRank(o.profileJson, P.rank), o.profileDevice,
                       model->numInputs && model->inputs[0].rank
                           ? model->inputs[0].dims[0]
                           : 1,
                       model->profileTp, P.err))
    rc = 1;
  if (!rc && !o.traceFile.empty() &&
      writeTrace(expandRank(o.traceFile, P.rank), R.trace, P.rank, model->name,
                 P.err))
    rc = 1;
  if (!rc && R.saves && P.saveStateAtomically(R.saveDir))
    rc = 1;
  if (rc && P.comm && world > 1) {
    // Peers may be waiting on this rank: end the whole job.
    fprintf(stderr, "error: %smodel %s: %s; ending the job's other ranks\n",
            who.c_str(), model->name, P.err.message.c_str());
    distrt_comm_abort(P.comm, 1);
  }
  P.releaseAll();
  P.releasePersistent();
  P.releaseGroups();
  distrt_comm_destroy(P.comm);
  distrt_context_destroy(P.ctx);
  if (rc) {
    fprintf(stderr, "error: %smodel %s: %s\n", who.c_str(), model->name,
            P.err.message.c_str());
    return 1;
  }
  for (int k = 0; k < model->numOutputs && R.root && !o.serve.enabled(); ++k) {
    std::string path =
        o.outDir + "/" + sanitizeName(model->outputs[k].name) + ".npy";
    if (writeNpy(path, P.outputs[k].spec, P.outputs[k].data.data(), P.err)) {
      fprintf(stderr, "error: %s\n", P.err.message.c_str());
      return 1;
    }
  }
  return 0;
}

} // namespace

int runMain(int argc, char **argv, const Model *models, int numModels,
            bool cuda) {
  if (!cuda)
    setWaitPolicy(argv);
  keepFreedMemory();
  Options o;
  o.profileDevice = cuda ? "gpu" : "cpu";
  if (int rc = parseOptions(argc, argv, o))
    return rc;
  if (o.list) {
    for (int m = 0; m < numModels; ++m)
      printSpecs(models[m]);
    return 0;
  }
  Run R;
  R.cuda = cuda;
  if (int rc = chooseModel(o, models, numModels, R.model))
    return rc;
  if (int rc = joinJob(R, o))
    return rc;
  if (int rc = loadInputs(R, o))
    return rc;
  if (int rc = startRuntime(R, o))
    return rc;
  if (int rc = prepareRun(R, o))
    return rc;
  return finishRun(R, o, runSteps(R, o));
}

} // namespace dg
