//===- dist-run.cpp - Launch a compiled job on its ranks --------*- C++ -*-===//
//
// Part of DistOpt. `dist-run [-n N] JOB/ [program arguments...]` starts the
// program of a job folder (`dist-compile -o JOB/`) on as many ranks as its
// plan needs, through mpirun on this machine: it reads JOB/manifest.json,
// checks N against the plan (a mismatch is an error that says what to run),
// gives each rank its share of the cores (OMP_NUM_THREADS, unless set), and
// returns the job's exit status. docs/cli.md, "Jobs". With --serve=DIR
// the job answers requests from a folder, and --switch-to=NEWJOB/ moves
// that service live onto another partition of the model (NEUKONFIG's
// switch; docs/resilience.md, "Switching a serving job live"). --elastic
// and --redundant keep a training job going when a rank dies (Asteroid's
// and Bamboo's recovery; docs/resilience.md).
//
//===----------------------------------------------------------------------===//
#include "lib/Support/JSONFile.h"
#include "lib/Support/Launcher.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace llvm;

static cl::OptionCategory category("dist-run options");
static cl::opt<std::string> jobDir(cl::Positional, cl::Required,
                                   cl::desc("<job folder>"), cl::cat(category));
static cl::list<std::string> programArgs(cl::ConsumeAfter,
                                         cl::desc("<program arguments>..."));
static cl::opt<unsigned>
    ranksFlag("n",
              cl::desc("Ranks to start (default: the number the job's plan "
                       "needs; required for a data-parallel job over any "
                       "number of ranks)"),
              cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<std::string>
    mpirunPath("mpirun", cl::desc("The MPI launcher (default: mpirun on PATH)"),
               cl::value_desc("PATH"), cl::cat(category));
static cl::list<std::string>
    mpirunArgs("mpirun-arg",
               cl::desc("Passed to mpirun before the program (repeat; e.g. "
                        "--mpirun-arg=-H --mpirun-arg=a:2,b:2)"),
               cl::value_desc("ARG"), cl::cat(category));
static cl::opt<std::string> traceFile(
    "trace",
    cl::desc("Write the executor's timeline of every rank as one Chrome / "
             "Perfetto trace (each rank's --trace, merged)"),
    cl::value_desc("FILE"), cl::cat(category));
static cl::opt<bool> dryRun("dry-run",
                            cl::desc("Print the command instead of running it"),
                            cl::cat(category));

static cl::opt<std::string> elasticDir(
    "elastic",
    cl::desc("Survive a rank that dies: checkpoint into DIR every "
             "--elastic-every steps and, when the job fails, compile it again "
             "for one rank fewer (dist-compile --dist-search over the "
             "survivors) and resume it from the last checkpoint; needs "
             "--steps N among the program's arguments"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<unsigned>
    elasticEvery("elastic-every",
                 cl::desc("Steps between the checkpoints of --elastic "
                          "(default 10)"),
                 cl::value_desc("N"), cl::init(10), cl::cat(category));

static cl::opt<std::string> redundantDir(
    "redundant",
    cl::desc("Survive a rank that dies in a pipeline training job (pp >= 2, "
             "CPU): after every step each rank copies its state to the rank "
             "before it, kept in DIR (node-local memory such as /dev/shm/NAME "
             "fits); when a rank is lost, the job resumes on one rank fewer "
             "from the newest step every stage's state exists at, the lost "
             "rank's from its predecessor's copy; needs --steps N among the "
             "program's arguments"),
    cl::value_desc("DIR"), cl::cat(category));

static cl::opt<std::string> serveDir(
    "serve",
    cl::desc("Serve requests: the job answers DIR/<k>/<input>.npy with "
             "DIR/<k>.out/<output>.npy, in order, until DIR/stop says to stop "
             "(the program's --serve)"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<std::string> switchTo(
    "switch-to",
    cl::desc("With --serve: switch the service to this job (another "
             "partition of the same model) when --switch-on says, answering "
             "every request once, in order, and report the downtime"),
    cl::value_desc("NEWJOB"), cl::cat(category));
static cl::opt<std::string>
    switchOn("switch-on",
             cl::desc("When to switch: 'signal' (SIGUSR1 or SIGHUP to "
                      "dist-run; default) or a FILE (when it appears)"),
             cl::value_desc("FILE|signal"), cl::init("signal"),
             cl::cat(category));
static cl::opt<std::string> switchHow(
    "switch",
    cl::desc("How: 'beside' (default; start the new job, weights loaded, "
             "while the old one serves, then stop the old one at a batch "
             "boundary) or 'pause' (stop the old job, then start the new one)"),
    cl::value_desc("beside|pause"), cl::init("beside"), cl::cat(category));
static cl::opt<std::string> replanReport(
    "replan-report",
    cl::desc("The report of dist-opt --dist-replan for this switch: its "
             "predicted downtime is printed beside the measured one"),
    cl::value_desc("R.json"), cl::cat(category));
static cl::opt<std::string> recordRelaunch(
    "record-relaunch",
    cl::desc("With --switch-to: write the new job's measured start (from "
             "starting its processes until its weights are loaded and it is "
             "ready) to this JSON file as relaunch_s, which dist-opt "
             "--dist-relaunch=FILE prices a pause's restart with"),
    cl::value_desc("FILE.json"), cl::cat(category));
static cl::opt<unsigned> switchTimeout(
    "switch-timeout",
    cl::desc("Seconds each step of the switch may take (the new job's "
             "start, the old job's stop; default 120)"),
    cl::value_desc("S"), cl::init(120), cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "dist-run") << message << "\n";
  return 2;
}

/// The per-rank trace file the program writes ({rank} expanded by it).
static std::string rankTrace(StringRef file, StringRef rank) {
  return (file + "." + rank + ".json").str();
}

/// Merges the ranks' traces (rankTrace) into \p file, times from the
/// job's first event, and removes them.
static int mergeTraces(StringRef file, unsigned ranks) {
  json::Array events;
  std::optional<double> origin;
  std::vector<json::Object> timed;
  for (unsigned r = 0; r < ranks; ++r) {
    std::string path = rankTrace(file, std::to_string(r));
    Expected<json::Value> v =
        distopt::readJSONFile(path, "--trace of rank " + Twine(r));
    if (!v)
      return fail(toString(v.takeError()));
    const json::Object *o = v->getAsObject();
    const json::Array *list = o ? o->getArray("traceEvents") : nullptr;
    if (!list)
      return fail("rank " + Twine(r) + "'s trace '" + path +
                  "' is not a Chrome trace");
    for (const json::Value &e : *list) {
      const json::Object *eo = e.getAsObject();
      if (!eo)
        continue;
      if (std::optional<double> ts = eo->getNumber("ts")) {
        origin = origin ? std::min(*origin, *ts) : *ts;
        timed.push_back(*eo);
      } else {
        events.push_back(json::Object(*eo));
      }
    }
    sys::fs::remove(path);
  }
  for (json::Object &e : timed) {
    e["ts"] = *e.getNumber("ts") - origin.value_or(0);
    events.push_back(std::move(e));
  }
  std::error_code ec;
  raw_fd_ostream os(file, ec);
  if (ec)
    return fail("cannot write '" + file + "': " + ec.message());
  os << json::Value(json::Object{{"displayTimeUnit", "ms"},
                                 {"traceEvents", std::move(events)}})
     << "\n";
  return 0;
}

/// A job folder as dist-compile -o DIR/ wrote it.
struct Job {
  std::string dir, exe, plan;
  /// The ranks its plan needs (none: data parallelism over any number).
  std::optional<int64_t> ranks;
  /// How it was compiled (dist-run --elastic compiles it again).
  std::string compileDir;
  std::vector<std::string> compileArgs;
  /// The first model's inputs (names, dtypes, the files' shapes) and
  /// whether it trains.
  std::string inputs;
  bool training = false;
};

static Expected<Job> readJob(StringRef dir) {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  Job job;
  job.dir = dir.str();
  SmallString<256> manifestPath(dir);
  sys::path::append(manifestPath, "manifest.json");
  Expected<json::Value> parsed =
      distopt::readJSONFile(manifestPath, "the job folder");
  if (!parsed)
    return error(toString(parsed.takeError()) +
                 "; a job folder is what dist-compile -o DIR/ writes");
  const json::Object *manifest = parsed->getAsObject();
  if (!manifest || manifest->getString("format") != "distopt-job" ||
      manifest->getInteger("version") != 1)
    return error("'" + manifestPath +
                 "' is not a DistOpt job manifest (format \"distopt-job\", "
                 "version 1); recompile with dist-compile -o DIR/");
  std::optional<StringRef> program = manifest->getString("program");
  if (!program || program->empty() || program->contains('/'))
    return error("'" + manifestPath + "' names no program in the job folder");
  SmallString<256> exe(dir);
  sys::path::append(exe, *program);
  if (!sys::fs::can_execute(exe))
    return error("the job's program '" + exe +
                 "' is missing or not executable; recompile the job");
  job.exe = std::string(exe);
  job.ranks = manifest->getInteger("ranks");
  if (const json::Array *models = manifest->getArray("models"))
    for (const json::Value &m : *models)
      if (const json::Object *o = m.getAsObject())
        if (std::optional<StringRef> p = o->getString("plan"))
          job.plan = p->str();
  if (const json::Array *models = manifest->getArray("models"))
    if (!models->empty())
      if (const json::Object *o = models->front().getAsObject()) {
        job.training = o->getBoolean("training").value_or(false);
        if (const json::Array *in = o->getArray("inputs"))
          job.inputs = formatv("{0}", json::Value(json::Array(*in))).str();
      }
  if (const json::Object *c = manifest->getObject("compile")) {
    job.compileDir = c->getString("dir").value_or("").str();
    if (const json::Array *args = c->getArray("args"))
      for (const json::Value &a : *args)
        if (std::optional<StringRef> s = a.getAsString())
          job.compileArgs.push_back(s->str());
  }
  return job;
}

/// The command that runs \p job on \p n ranks with the program's \p args:
/// the program alone for a one-rank job, else under mpirun.
static Expected<std::vector<std::string>>
jobCommand(const Job &job, unsigned n, ArrayRef<std::string> args) {
  std::vector<std::string> cmd;
  bool direct = n == 1 && job.ranks && *job.ranks == 1;
  if (!direct) {
    Expected<std::vector<std::string>> launcher =
        distopt::mpirunCommand(mpirunPath, n);
    if (!launcher)
      return launcher.takeError();
    cmd = std::move(*launcher);
    cmd.insert(cmd.end(), mpirunArgs.begin(), mpirunArgs.end());
  }
  cmd.push_back(job.exe);
  cmd.insert(cmd.end(), args.begin(), args.end());
  // Under mpirun the ranks' stderr is a pipe, not this terminal: ask for
  // the steps' progress when the user sees one (and did not choose).
  if (!direct && sys::Process::StandardErrIsDisplayed() &&
      llvm::none_of(args, [](const std::string &a) {
        return StringRef(a).starts_with("--progress");
      }))
    cmd.push_back("--progress=always");
  if (!traceFile.empty()) {
    cmd.push_back("--trace");
    cmd.push_back(rankTrace(traceFile, "{rank}"));
  }
  return cmd;
}

static void printCommand(ArrayRef<std::string> cmd) {
  outs() << "OMP_NUM_THREADS=" << std::getenv("OMP_NUM_THREADS");
  for (const std::string &a : cmd)
    outs() << " " << a;
  outs() << "\n";
}

/// Runs \p job on \p n ranks with the program's \p args; its exit status
/// (2 and a message for what cannot start).
static int launch(const Job &job, unsigned n, ArrayRef<std::string> args) {
  Expected<std::vector<std::string>> cmd = jobCommand(job, n, args);
  if (!cmd)
    return fail(toString(cmd.takeError()));
  if (dryRun) {
    printCommand(*cmd);
    return 0;
  }
  std::vector<StringRef> argvRefs(cmd->begin(), cmd->end());
  std::string error;
  int rc = sys::ExecuteAndWait(cmd->front(), argvRefs, std::nullopt, {}, 0, 0,
                               &error);
  if (rc < 0)
    return fail("cannot run '" + cmd->front() + "': " + error);
  if (rc == 0 && !traceFile.empty())
    return mergeTraces(traceFile, n);
  return rc;
}

/// One thread per core share, unless the user chose.
static void shareCores(unsigned n) {
  if (std::getenv("OMP_NUM_THREADS"))
    return;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  setenv("OMP_NUM_THREADS", std::to_string(std::max(1u, cores / n)).c_str(), 1);
}

/// The value of program option \p flag in \p args (--flag V or
/// --flag=V), and its positions in \p at (to drop them).
static std::optional<std::string> optionValue(ArrayRef<std::string> args,
                                              StringRef flag,
                                              SmallVectorImpl<size_t> *at) {
  std::optional<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef a = args[i];
    if (a == flag && i + 1 < args.size()) {
      out = args[i + 1];
      if (at)
        at->append({i, i + 1});
      ++i;
    } else if (a.starts_with((flag + "=").str())) {
      out = a.drop_front(flag.size() + 1).str();
      if (at)
        at->push_back(i);
    }
  }
  return out;
}

/// \p args without the options \p flags (and their values).
static std::vector<std::string> withoutOptions(ArrayRef<std::string> args,
                                               ArrayRef<StringRef> flags) {
  SmallVector<size_t> drop;
  for (StringRef f : flags)
    (void)optionValue(args, f, &drop);
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i)
    if (!llvm::is_contained(drop, i))
      out.push_back(args[i]);
  return out;
}

/// The steps a checkpoint generation holds (every rank folder's
/// progress.json agreeing), none when no rank saved one; an error when the
/// folders disagree (a rank died while saving).
static Expected<std::optional<int64_t>> checkpointSteps(StringRef gen,
                                                        unsigned ranks) {
  std::optional<int64_t> steps;
  for (unsigned r = 0; r < ranks; ++r) {
    // A save that died while moving its files in left the newer ones in
    // <rank>.commit (the runtime's saveStateAtomically): they count.
    SmallString<256> path(gen);
    sys::path::append(path, std::to_string(r) + ".commit", "progress.json");
    if (!sys::fs::exists(path)) {
      path = gen;
      sys::path::append(path, std::to_string(r), "progress.json");
    }
    if (!sys::fs::exists(path))
      continue;
    Expected<json::Value> v = distopt::readJSONFile(path, "the checkpoint");
    if (!v)
      return v.takeError();
    const json::Object *o = v->getAsObject();
    std::optional<int64_t> s = o ? o->getInteger("steps") : std::nullopt;
    if (!s)
      return createStringError(inconvertibleErrorCode(),
                               "'" + path + "' holds no step count");
    if (steps && *steps != *s)
      return createStringError(
          inconvertibleErrorCode(),
          "the rank folders of '" + gen + "' hold different steps (" +
              Twine(*steps) + " and " + Twine(*s) +
              "): a rank died while saving, so no checkpoint is whole");
    steps = s;
  }
  return steps;
}

/// The job compiled for fewer ranks while the running one goes on.
struct Standby {
  sys::ProcessInfo process;
  std::string dir;
};

/// Starts compiling \p job again for \p ranks ranks into
/// ROOT/job-g<gen>/ (its report in ROOT/job-g<gen>.log): the manifest's
/// arguments with the search over \p ranks devices of the same cluster
/// (`local` when none) in place of the plan, keeping the micro-batch the
/// program was compiled for.
static Expected<Standby> compileStandby(const Job &job, unsigned ranks,
                                        StringRef root, unsigned gen,
                                        StringRef compiler, StringRef who) {
  std::vector<std::string> compile = job.compileArgs;
  std::optional<std::string> cluster =
      optionValue(compile, "--dist-cluster", nullptr);
  std::string constraints =
      optionValue(compile, "--dist-search", nullptr).value_or("");
  if (!StringRef(constraints).contains("mbs="))
    for (StringRef kv : llvm::split(StringRef(job.plan), ','))
      if (kv.starts_with("mbs="))
        constraints += (constraints.empty() ? "" : ",") + kv.str();
  compile = withoutOptions(compile, {"--dist-plan", "--dist-search",
                                     "--dist-cluster", "--dist-devices"});
  SmallString<256> dir(root);
  sys::path::append(dir, "job-g" + std::to_string(gen));
  compile.insert(compile.begin(), compiler.str());
  compile.insert(
      compile.end(),
      {(constraints.empty() ? "--dist-search" : "--dist-search=" + constraints),
       "--dist-cluster=" + cluster.value_or("local"),
       "--dist-devices=" + std::to_string(ranks), "-o", (dir + "/").str()});
  if (std::error_code ec = sys::fs::create_directories(root))
    return createStringError(ec, who + ": cannot create '" + root +
                                     "': " + ec.message());
  // Run where the job was compiled (its paths are relative to there); the
  // report goes to a log, so the job's output stays its steps.
  SmallString<256> here;
  sys::fs::current_path(here);
  if (!job.compileDir.empty() && sys::fs::set_current_path(job.compileDir))
    return createStringError(inconvertibleErrorCode(),
                             who + ": cannot enter '" + job.compileDir +
                                 "', where the job was compiled");
  std::string log = (dir + ".log").str();
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::vector<StringRef> refs(compile.begin(), compile.end());
  std::string error;
  bool failed = false;
  sys::ProcessInfo pi = sys::ExecuteNoWait(compile.front(), refs, std::nullopt,
                                           redirects, 0, &error, &failed);
  (void)sys::fs::set_current_path(here);
  if (failed)
    return createStringError(inconvertibleErrorCode(), who + ": cannot run '" +
                                                           compile.front() +
                                                           "': " + error);
  return Standby{pi, std::string(dir)};
}

/// Starts compiling \p job for \p n - 1 ranks (compileStandby) when
/// \p wanted and the manifest says how it was compiled; none otherwise.
static Expected<std::optional<Standby>> standbyFor(const Job &job, unsigned n,
                                                   StringRef root, unsigned gen,
                                                   StringRef compiler,
                                                   StringRef who, bool wanted) {
  if (!wanted || job.compileArgs.empty() || dryRun)
    return std::nullopt;
  Expected<Standby> started =
      compileStandby(job, n - 1, root, gen + 1, compiler, who);
  if (!started)
    return started.takeError();
  return std::optional<Standby>(std::move(*started));
}

/// The start of a generation of --elastic or --redundant: the standby job
/// for one rank fewer (standbyFor), and the cores shared among \p n ranks
/// again (unless the user set OMP_NUM_THREADS, \p userThreads).
static Expected<std::optional<Standby>>
startGeneration(const Job &job, unsigned n, StringRef root, unsigned gen,
                StringRef compiler, StringRef who, bool wanted,
                bool userThreads) {
  Expected<std::optional<Standby>> started =
      standbyFor(job, n, root, gen, compiler, who, wanted);
  if (!started)
    return started.takeError();
  if (!userThreads)
    unsetenv("OMP_NUM_THREADS");
  shareCores(n);
  return started;
}

/// Ends a standby compile that is not needed (the job finished or
/// cannot be resumed).
static void stopStandby(std::optional<Standby> &standby) {
  if (!standby)
    return;
  ::kill(standby->process.Pid, SIGTERM);
  (void)sys::Wait(standby->process, std::nullopt);
  standby.reset();
}

/// Waits for \p standby's compile and reads the job it wrote.
static Expected<Job> awaitStandby(Standby &standby, unsigned ranks,
                                  StringRef who) {
  std::string error;
  sys::ProcessInfo waited = sys::Wait(standby.process, std::nullopt, &error);
  if (waited.ReturnCode != 0)
    return createStringError(inconvertibleErrorCode(),
                             who + ": compiling the job for " + Twine(ranks) +
                                 " rank(s) failed" +
                                 (error.empty() ? "" : ": " + error) +
                                 "; its output is in " + standby.dir + ".log");
  return readJob(standby.dir);
}

/// The dist-compile beside this dist-run, which compiles the standby jobs.
static std::string besideCompiler(const char *argv0) {
  SmallString<256> compiler(sys::path::parent_path(
      sys::fs::getMainExecutable(argv0, (void *)&besideCompiler)));
  sys::path::append(compiler, "dist-compile");
  return std::string(compiler);
}

/// The training run a recovery mode (\p who) finishes: the program's
/// --steps N, after checking that \p user leaves the \p owned options to
/// dist-run (\p keeps: what dist-run keeps; \p where: where it is). 0, or
/// the exit code after the error.
static int recoverySteps(ArrayRef<std::string> user, ArrayRef<StringRef> owned,
                         StringRef who, StringRef keeps, const Twine &where,
                         int64_t &total) {
  for (StringRef o : owned)
    if (optionValue(user, o, nullptr))
      return fail(who + " keeps " + keeps + "; leave out " + o + " (" + where +
                  ")");
  std::optional<std::string> stepsText = optionValue(user, "--steps", nullptr);
  if (!stepsText || StringRef(*stepsText).getAsInteger(10, total) || total < 1)
    return fail(who + " needs --steps N (N >= 1) among the program's "
                      "arguments: the training run to finish");
  return 0;
}

/// dist-run --elastic (Asteroid's recovery, docs/resilience.md): runs the
/// job with checkpoints into DIR/g<K>/<rank>; when it fails, compiles it
/// again for one rank fewer with the search and resumes it from the last
/// whole checkpoint (re-sharded by the program's --load-state), until the
/// steps are done or one rank is left and fails too.
static int runElastic(Job job, unsigned n, const char *argv0) {
  std::vector<std::string> user(programArgs.begin(), programArgs.end());
  int64_t total = 0;
  if (int bad = recoverySteps(
          user,
          {"--save-state", "--load-state", "--save-every", "--first-step"},
          "--elastic", "the checkpoints itself",
          "the last state is in " + elasticDir + "/g<K>/<rank>", total))
    return bad;
  if (!job.training)
    return fail("--elastic: '" + job.dir +
                "' is not a training job; it resumes training from its "
                "checkpoints (compile the model with --train)");
  if (elasticEvery == 0)
    return fail("--elastic-every must be at least 1");
  user = withoutOptions(user, {"--steps"});
  SmallString<256> root(elasticDir);
  if (std::error_code ec = sys::fs::make_absolute(root))
    return fail("--elastic " + elasticDir + ": " + ec.message());
  const bool userThreads = std::getenv("OMP_NUM_THREADS");
  std::string compiler = besideCompiler(argv0);

  int64_t done = 0;
  std::string resumeFrom; // the checkpoint pattern the next run loads
  for (unsigned gen = 0;; ++gen) {
    SmallString<256> genDir(root);
    sys::path::append(genDir, "g" + std::to_string(gen));
    std::vector<std::string> args = user;
    args.insert(args.end(), {"--steps", std::to_string(total - done),
                             "--first-step", std::to_string(done + 1),
                             "--save-every", std::to_string(elasticEvery),
                             "--save-state", (genDir + "/{rank}").str()});
    if (!resumeFrom.empty())
      args.insert(args.end(), {"--load-state", resumeFrom});
    // The job for one rank fewer compiles while this one runs, so a
    // failure resumes without waiting for the compiler.
    Expected<std::optional<Standby>> started = startGeneration(
        job, n, root, gen, compiler, "--elastic", n > 1, userThreads);
    if (!started)
      return fail(toString(started.takeError()));
    std::optional<Standby> standby = std::move(*started);
    errs() << "dist-run: --elastic: steps " << done + 1 << "-" << total
           << " on " << n << " rank(s)"
           << (job.plan.empty() ? "" : " (" + job.plan + ")")
           << ", checkpoints every " << elasticEvery << " steps in " << genDir
           << "\n";
    int rc = launch(job, n, args);
    if (rc == 0) {
      stopStandby(standby); // not needed
      errs() << "dist-run: --elastic: done; the state is in " << genDir
             << "/<rank>\n";
      return 0;
    }
    if (dryRun)
      return rc;
    Expected<std::optional<int64_t>> saved = checkpointSteps(genDir, n);
    if (!saved) {
      stopStandby(standby);
      return fail(toString(saved.takeError()));
    }
    if (*saved) {
      done = **saved;
      resumeFrom = (genDir + "/{rank}").str();
    }
    if (n == 1)
      return fail("--elastic: the job failed (exit " + Twine(rc) +
                  ") on its last rank; nothing is left to re-plan on");
    if (!standby)
      return fail("--elastic: the job failed (exit " + Twine(rc) + ") and '" +
                  job.dir +
                  "/manifest.json' does not say how it was compiled; "
                  "compile it again with this dist-compile");
    errs() << "dist-run: --elastic: the job failed (exit " << rc << ") "
           << (resumeFrom.empty()
                   ? std::string("before its first checkpoint")
                   : "after the checkpoint of step " + std::to_string(done))
           << "; resuming it on " << n - 1 << " rank(s) (" << standby->dir
           << ".log)\n";
    // An injected fault (DISTRT_FAULT, the recovery tests') is the first
    // launch's: the resumed job runs without it.
    unsetenv("DISTRT_FAULT");
    Expected<Job> next = awaitStandby(*standby, n - 1, "--elastic");
    if (!next)
      return fail(toString(next.takeError()));
    job = std::move(*next);
    n = job.ranks ? static_cast<unsigned>(*job.ranks) : n - 1;
    standby.reset();
  }
}

//===----------------------------------------------------------------------===//
// Serving, and switching a serving job live (--serve, --switch-to)
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

static volatile sig_atomic_t switchSignalled = 0;
static void onSwitchSignal(int) { switchSignalled = 1; }

static double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// A job started in the background (the old or the new one of a switch).
struct Running {
  pid_t pid = 0;
  std::optional<int> status; ///< its exit status, once it ended
  std::string name;          ///< the job folder, for messages

  /// Whether it ended (reaping it); its status in `status`.
  bool ended() {
    if (status)
      return true;
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == 0)
      return false;
    status = r < 0             ? 1
             : WIFEXITED(st)   ? WEXITSTATUS(st)
             : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
                               : 1;
    return true;
  }
  /// Ends it (SIGTERM, then SIGKILL after 10 s) and reaps it.
  void stop() {
    if (!pid || ended())
      return;
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 1000 && !ended(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!ended()) {
      ::kill(pid, SIGKILL);
      int st = 0;
      (void)waitpid(pid, &st, 0);
      status = 137;
    }
  }
};

/// Starts \p job on \p n ranks with \p args in the background, its stdin
/// from /dev/null (two jobs run at once during a switch).
static Expected<Running> startJob(const Job &job, unsigned n,
                                  ArrayRef<std::string> args) {
  Expected<std::vector<std::string>> cmd = jobCommand(job, n, args);
  if (!cmd)
    return cmd.takeError();
  std::vector<StringRef> refs(cmd->begin(), cmd->end());
  std::optional<StringRef> redirects[] = {StringRef(""), std::nullopt,
                                          std::nullopt};
  std::string error;
  bool failed = false;
  sys::ProcessInfo pi = sys::ExecuteNoWait(cmd->front(), refs, std::nullopt,
                                           redirects, 0, &error, &failed);
  if (failed)
    return createStringError(inconvertibleErrorCode(),
                             "cannot run '" + cmd->front() + "': " + error);
  Running r;
  r.pid = pi.Pid;
  r.name = job.dir;
  return r;
}

/// Writes \p text to \p path atomically (beside, then renamed in).
static Error writeFileAtomically(const Twine &path, StringRef text) {
  std::string final = path.str(), tmp = final + ".tmp";
  {
    std::error_code ec;
    raw_fd_ostream os(tmp, ec);
    if (ec)
      return createStringError(ec,
                               "cannot write '" + tmp + "': " + ec.message());
    os << text;
  }
  if (std::error_code ec = sys::fs::rename(tmp, final))
    return createStringError(ec,
                             "cannot write '" + final + "': " + ec.message());
  return Error::success();
}

static std::optional<std::string> readSmallFile(const Twine &path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return std::nullopt;
  return (*buf)->getBuffer().trim().str();
}

/// The model's inputs and outputs as `program --list` prints them (the
/// compiled shapes per rank are the same for two partitions of one batch:
/// the outputs are compared here, the inputs' files from the manifests).
static Expected<std::string> outputsOf(const Job &job) {
  SmallString<128> out;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("dist-run-list", "txt", out))
    return createStringError(ec,
                             "cannot create a temporary file: " + ec.message());
  std::optional<StringRef> redirects[] = {StringRef(""), StringRef(out),
                                          StringRef("")};
  StringRef argv[] = {job.exe, "--list"};
  std::string error;
  int rc = sys::ExecuteAndWait(job.exe, argv, std::nullopt, redirects, 60, 0,
                               &error);
  std::optional<std::string> text = readSmallFile(out);
  sys::fs::remove(out);
  if (rc != 0 || !text)
    return createStringError(inconvertibleErrorCode(),
                             "'" + job.exe + " --list' failed" +
                                 (error.empty() ? "" : ": " + error));
  std::string outputs;
  for (StringRef line : llvm::split(StringRef(*text), '\n'))
    if (line.trim().starts_with("output "))
      outputs += line.trim().str() + "\n";
  return outputs;
}

/// What dist-opt --dist-replan predicted for this switch (its report).
struct Prediction {
  double drain = 0, move = 0, fill = 0, pauseDowntime = 0;
  /// The new job's start a pause pays; absent in reports written before
  /// the migration model priced it.
  std::optional<double> relaunch;
  std::optional<double> besideDowntime, prepare;
  std::string besideProblem, runningPlan, newPlan;
};

static Expected<Prediction> readPrediction(StringRef path) {
  auto error = [&](const Twine &m) {
    return createStringError(inconvertibleErrorCode(),
                             "--replan-report: '" + path + "' " + m);
  };
  Expected<json::Value> v = distopt::readJSONFile(path, "--replan-report");
  if (!v)
    return v.takeError();
  const json::Object *top = v->getAsObject();
  const json::Object *replan = top ? top->getObject("replan") : nullptr;
  const json::Object *pause =
      replan ? replan->getObject("pause_resume") : nullptr;
  Prediction p;
  std::optional<double> drain, move, fill, down;
  if (pause) {
    drain = pause->getNumber("drain_s");
    move = pause->getNumber("move_s");
    fill = pause->getNumber("fill_s");
    down = pause->getNumber("downtime_s");
  }
  if (!drain || !move || !fill || !down)
    return error("is not a report of dist-opt --dist-replan (no "
                 "replan.pause_resume with drain_s, move_s, fill_s and "
                 "downtime_s); write one with dist-opt ... "
                 "--dist-replan=OLD.json --dist-report=R.json");
  p.drain = *drain;
  p.move = *move;
  p.fill = *fill;
  p.pauseDowntime = *down;
  p.relaunch = pause->getNumber("relaunch_s");
  if (const json::Object *beside = replan->getObject("prepare_beside")) {
    if (beside->getBoolean("possible").value_or(false)) {
      p.besideDowntime = beside->getNumber("downtime_s");
      p.prepare = beside->getNumber("prepare_s");
    } else {
      p.besideProblem =
          beside->getString("problem").value_or("not possible").str();
    }
  }
  p.runningPlan = replan->getString("running_plan").value_or("").str();
  p.newPlan = replan->getString("new_plan").value_or("").str();
  return p;
}

/// Writes the new job's measured start to \p path for dist-opt
/// --dist-relaunch (docs/resilience.md, "The relaunch"): `relaunch_s` is
/// what the planner reads; the rest says what was measured.
static Error writeRelaunch(StringRef path, double seconds, const Job &job,
                           unsigned ranks, StringRef how) {
  json::Object o{
      {"relaunch_s", seconds},
      {"measured", "dist-run --switch=" + how.str() +
                       ": the new job's processes started until its weights "
                       "were loaded and it was ready (mpirun, MPI set-up, "
                       "loading the program and weights, the first run)"},
      {"job", job.dir},
      {"ranks", ranks},
      {"plan", job.plan.empty() ? "one device" : job.plan}};
  std::string text;
  raw_string_ostream os(text);
  os << formatv("{0:2}", json::Value(std::move(o))) << "\n";
  if (Error e = writeFileAtomically(path, text))
    return createStringError(inconvertibleErrorCode(),
                             "--record-relaunch: " + toString(std::move(e)));
  return Error::success();
}

/// What two plan specs must share to be the same partition: dp, tp, pp,
/// and for a pipeline its micro-batch and stages (a manifest and a report
/// may write the other fields differently; a job without a plan runs on
/// one device).
static std::string planCore(StringRef plan) {
  std::string out, pipeline;
  bool staged = false;
  for (StringRef kv : llvm::split(plan.empty() ? "dp=1,tp=1,pp=1" : plan, ','))
    if (kv.starts_with("dp=") || kv.starts_with("tp=") || kv.starts_with("pp="))
      out += kv.str() + ",";
    else if (kv.starts_with("mbs=") || kv.starts_with("stages="))
      pipeline += kv.str() + ",";
  for (StringRef kv : llvm::split(plan, ','))
    if (kv.starts_with("pp=") && kv != "pp=1")
      staged = true;
  return staged ? out + pipeline : out;
}

/// Checks that \p next can take over \p old's requests: an inference job
/// of the same inputs (names, dtypes, the files' shapes) and outputs.
static Error checkSwitchable(const Job &old, const Job &next) {
  auto error = [](const Twine &m) {
    return createStringError(inconvertibleErrorCode(), m);
  };
  for (const Job *j : {&old, &next})
    if (j->training)
      return error("'" + j->dir +
                   "' is a training job; --serve answers inference requests "
                   "(compile the model without --train)");
  if (old.inputs != next.inputs)
    return error("--switch-to '" + next.dir + "' reads other inputs than '" +
                 old.dir + "' (" + next.inputs + " against " + old.inputs +
                 "); switch to a job of the same model and global batch "
                 "(dist-compile it with the same --input-shape and "
                 "--dist-batch)");
  Expected<std::string> a = outputsOf(old);
  if (!a)
    return a.takeError();
  Expected<std::string> b = outputsOf(next);
  if (!b)
    return b.takeError();
  if (*a != *b)
    return error("--switch-to '" + next.dir + "' writes other outputs than '" +
                 old.dir + "':\n" + *b + "against\n" + *a +
                 "switch to a job of the same model");
  return Error::success();
}

/// dist-run --serve=DIR [--switch-to=NEWJOB ...]: runs the job serving
/// DIR; with --switch-to, switches the service to NEWJOB when the trigger
/// comes (docs/resilience.md, "Switching a serving job live"). Control
/// files live in DIR/.switch/g0 (the running job) and g1 (the new one).
static int runServe(const Job &old, unsigned n) {
  std::vector<std::string> user(programArgs.begin(), programArgs.end());
  for (StringRef owned : {"--serve", "--serve-control", "--repeat", "--steps"})
    if (optionValue(user, owned, nullptr))
      return fail("dist-run --serve runs the program with --serve; leave out " +
                  owned + " among the program's arguments");
  if (!sys::fs::is_directory(serveDir))
    return fail("--serve '" + serveDir +
                "' is not a folder; create it (each request is a folder "
                "DIR/<k>/ holding <input>.npy, k = 0, 1, ...)");
  if (old.training)
    return fail("'" + old.dir +
                "' is a training job; --serve answers inference requests "
                "(compile the model without --train)");
  if (switchTo.empty()) {
    std::vector<std::string> args = user;
    args.push_back("--serve=" + serveDir);
    return launch(old, n, args);
  }
  if (switchTimeout == 0)
    return fail("--switch-timeout must be at least 1 (seconds)");
  if (switchHow != "beside" && switchHow != "pause")
    return fail("--switch=" + switchHow +
                ": expected beside (prepare the new job while the old one "
                "serves) or pause (stop the old job, then start the new one)");
  Expected<Job> nextOr = readJob(switchTo);
  if (!nextOr)
    return fail("--switch-to: " + toString(nextOr.takeError()));
  Job next = std::move(*nextOr);
  if (Error e = checkSwitchable(old, next))
    return fail(toString(std::move(e)));
  if (!next.ranks)
    return fail("--switch-to '" + next.dir +
                "' runs data parallelism over any number of ranks; compile "
                "it with a plan (--dist-plan) so its ranks are known");
  unsigned m = static_cast<unsigned>(*next.ranks);
  if (!recordRelaunch.empty()) {
    StringRef folder = sys::path::parent_path(recordRelaunch);
    if (!folder.empty() && !sys::fs::is_directory(folder))
      return fail("--record-relaunch '" + recordRelaunch + "': folder '" +
                  folder + "' does not exist; create it first");
  }
  std::optional<Prediction> predicted;
  if (!replanReport.empty()) {
    Expected<Prediction> p = readPrediction(replanReport);
    if (!p)
      return fail(toString(p.takeError()));
    predicted = std::move(*p);
  }
  bool onSignal = switchOn == "signal";
  if (!onSignal && sys::fs::exists(switchOn))
    return fail("--switch-on '" + switchOn +
                "' exists before the service starts; remove it (dist-run "
                "switches when it appears)");
  // The first request: the program's --serve-first (given to the job
  // through its start file), else 0.
  int64_t first = 0;
  if (std::optional<std::string> f =
          optionValue(user, "--serve-first", nullptr))
    if (StringRef(*f).getAsInteger(10, first) || first < 0)
      return fail("--serve-first '" + *f + "': expected a request index");
  user = withoutOptions(user, {"--serve-first"});

  SmallString<256> control(serveDir);
  sys::path::append(control, ".switch");
  SmallString<256> ctl[2];
  for (int g = 0; g < 2; ++g) {
    ctl[g] = control;
    sys::path::append(ctl[g], "g" + std::to_string(g));
  }
  auto file = [&](int g, StringRef name) {
    SmallString<256> p(ctl[g]);
    sys::path::append(p, name);
    return std::string(p);
  };
  auto argsFor = [&](int g) {
    std::vector<std::string> a = user;
    a.push_back("--serve=" + serveDir);
    a.push_back("--serve-control=" + std::string(ctl[g]));
    return a;
  };
  if (dryRun) {
    for (int g = 0; g < 2; ++g) {
      Expected<std::vector<std::string>> cmd =
          jobCommand(g ? next : old, g ? m : n, argsFor(g));
      if (!cmd)
        return fail(toString(cmd.takeError()));
      printCommand(*cmd);
    }
    return 0;
  }
  for (int g = 0; g < 2; ++g) {
    (void)sys::fs::remove_directories(ctl[g]);
    if (std::error_code ec = sys::fs::create_directories(ctl[g]))
      return fail("cannot create '" + ctl[g] + "': " + ec.message());
  }
  if (Error e = writeFileAtomically(file(0, "start"), std::to_string(first)))
    return fail(toString(std::move(e)));
  if (onSignal) {
    std::signal(SIGUSR1, onSwitchSignal);
    std::signal(SIGHUP, onSwitchSignal);
  }
  const bool userThreads = std::getenv("OMP_NUM_THREADS");
  auto threadsFor = [&](unsigned ranks) {
    if (!userThreads) {
      unsetenv("OMP_NUM_THREADS");
      shareCores(ranks);
    }
  };
  threadsFor(n);
  Expected<Running> oldRunOr = startJob(old, n, argsFor(0));
  if (!oldRunOr)
    return fail(toString(oldRunOr.takeError()));
  Running oldRun = std::move(*oldRunOr), newRun;
  bool pause = switchHow == "pause";
  errs() << "dist-run: serving " << serveDir << " with " << old.dir << " ("
         << (old.plan.empty() ? "one device" : old.plan) << "); switching to "
         << next.dir << " (" << (next.plan.empty() ? "one device" : next.plan)
         << ") "
         << (onSignal ? "on SIGUSR1 or SIGHUP"
                      : "when '" + switchOn + "' appears")
         << " (--switch=" << switchHow << ")\n";
  auto abandon = [&](const Twine &m) {
    oldRun.stop();
    newRun.stop();
    return fail(m);
  };
  const double limit = switchTimeout;
  // Polls every millisecond until \p done says so; false after \p limit
  // seconds or when one of the jobs ended (the caller says which failed).
  auto until = [&](auto done, bool timed) {
    Clock::time_point t0 = Clock::now();
    for (;;) {
      if (done())
        return true;
      if ((timed && secondsSince(t0) > limit))
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  // Serve until the trigger, or until the service ends without one.
  until(
      [&] {
        return oldRun.ended() || switchSignalled ||
               (!onSignal && sys::fs::exists(switchOn));
      },
      false);
  if (oldRun.ended()) {
    errs() << "dist-run: " << old.dir << " ended (exit " << *oldRun.status
           << ") before the switch\n";
    return *oldRun.status;
  }
  Clock::time_point trigger = Clock::now(), ready = trigger, stop, last;
  Clock::time_point started;
  auto startNew = [&]() -> bool {
    threadsFor(m);
    started = Clock::now();
    Expected<Running> r = startJob(next, m, argsFor(1));
    if (!r) {
      errs() << toString(r.takeError()) << "\n";
      return false;
    }
    newRun = std::move(*r);
    return true;
  };
  if (!pause) {
    // Beside: the new job's processes start and load their weights while
    // the old one serves.
    if (!startNew())
      return abandon("--switch-to: cannot start '" + next.dir + "'");
    bool up = until(
        [&] {
          return sys::fs::exists(file(1, "ready")) || newRun.ended() ||
                 oldRun.ended();
        },
        true);
    if (!up || !sys::fs::exists(file(1, "ready")))
      return abandon(
          "--switch-to: '" + next.dir + "' did not get ready (" +
          (newRun.ended() ? "it ended with exit " + Twine(*newRun.status)
           : oldRun.ended()
               ? "the running job ended with exit " + Twine(*oldRun.status)
               : "no " + Twine(file(1, "ready")) + " after " +
                     Twine(switchTimeout) + " s") +
          "); its errors are above");
    ready = Clock::now();
  }
  // Stop the old job at its next batch boundary.
  if (Error e = writeFileAtomically(file(0, "stop"), "now\n"))
    return abandon(toString(std::move(e)));
  stop = Clock::now();
  if (!until([&] { return sys::fs::exists(file(0, "last")) || oldRun.ended(); },
             true) ||
      !sys::fs::exists(file(0, "last")))
    return abandon(
        "--switch: '" + old.dir + "' did not stop at a batch " + "boundary (" +
        (oldRun.ended() ? "it ended with exit " + Twine(*oldRun.status)
                        : "nothing after " + Twine(switchTimeout) + " s") +
        ")");
  last = Clock::now();
  std::string lastText = readSmallFile(file(0, "last")).value_or("");
  int64_t lastTaken = first - 1;
  if (lastText != "none" && StringRef(lastText).getAsInteger(10, lastTaken))
    return abandon("'" + file(0, "last") + "' holds '" + lastText +
                   "', not a request index");
  int64_t handover = lastTaken + 1;
  if (pause) {
    // Pause: the old job's processes end before the new ones start.
    if (!until([&] { return oldRun.ended(); }, true))
      return abandon("--switch=pause: '" + old.dir + "' stopped but did not " +
                     "end in " + Twine(switchTimeout) + " s");
    if (*oldRun.status != 0)
      return abandon("--switch=pause: '" + old.dir + "' ended with exit " +
                     Twine(*oldRun.status));
  }
  if (Error e = writeFileAtomically(file(1, "start"), std::to_string(handover)))
    return abandon(toString(std::move(e)));
  if (pause && !startNew())
    return abandon("--switch-to: cannot start '" + next.dir + "'");
  // The first request after the switch: its answer ends the downtime
  // (from the stop, or from its arrival when it came later).
  std::string req = (serveDir + "/" + Twine(handover)).str();
  std::optional<Clock::time_point> arrived, newReady, answered;
  if (sys::fs::is_directory(req))
    arrived = stop;
  until(
      [&] {
        Clock::time_point now = Clock::now();
        if (!arrived && sys::fs::is_directory(req))
          arrived = now;
        if (pause && !newReady && sys::fs::exists(file(1, "ready")))
          newReady = now;
        if (sys::fs::is_directory(req + ".out") ||
            sys::fs::is_directory(req + ".err"))
          answered = now;
        return answered || newRun.ended();
      },
      false);
  auto secs = [](Clock::time_point a, Clock::time_point b) {
    return formatv("{0:f3}", std::chrono::duration<double>(b - a).count())
        .str();
  };
  errs() << "dist-run: switch (" << switchHow << "): ";
  if (!pause)
    errs() << "prepared " << next.dir << " in " << secs(trigger, ready)
           << " s while " << old.dir << " served; ";
  errs() << old.dir << " took requests up to " << lastTaken << ", " << next.dir
         << " from " << handover << "\n";
  if (answered) {
    // The phases, each from where the previous one ended, none before
    // `from`: they add up to the downtime.
    Clock::time_point from = std::max(stop, *arrived);
    auto at = [&](Clock::time_point t) { return std::max(t, from); };
    errs() << "dist-run: downtime measured " << secs(from, *answered)
           << " s (drain " << secs(from, at(last));
    if (pause) {
      Clock::time_point up =
          at(std::min(newReady.value_or(*answered), *answered));
      errs() << " + move " << secs(at(last), up) << " + fill "
             << secs(up, *answered);
    } else {
      errs() << " + fill " << secs(at(last), *answered);
    }
    errs() << ")";
    if (*arrived > stop)
      errs() << "; counted from request " << handover
             << "'s arrival, after the stop";
    errs() << "\n";
  } else {
    errs() << "dist-run: no downtime measured: " << next.dir
           << " ended before it answered request " << handover << "\n";
  }
  // The new job's start: until it was ready (beside: before the stop;
  // pause: seen while waiting for its first answer).
  std::optional<Clock::time_point> readyAt =
      pause ? newReady : std::optional<Clock::time_point>(ready);
  bool recordFailed = false;
  if (!recordRelaunch.empty()) {
    if (!readyAt)
      errs() << "dist-run: --record-relaunch: nothing recorded: " << next.dir
             << " ended before it was ready\n";
    else if (Error e = writeRelaunch(
                 recordRelaunch,
                 std::chrono::duration<double>(*readyAt - started).count(),
                 next, m, switchHow)) {
      // The service goes on; the exit status says the record is missing.
      WithColor::error(errs(), "dist-run") << toString(std::move(e)) << "\n";
      recordFailed = true;
    } else
      errs() << "dist-run: recorded relaunch " << secs(started, *readyAt)
             << " s (" << next.dir << " on " << m << " rank(s)) in "
             << recordRelaunch << "\n";
  }
  if (predicted) {
    auto f3 = [](double v) { return formatv("{0:f3}", v).str(); };
    errs() << "dist-run: downtime predicted ";
    if (!pause && predicted->besideDowntime)
      errs() << f3(*predicted->besideDowntime) << " s (drain "
             << f3(predicted->drain) << " + fill " << f3(predicted->fill)
             << "; prepare " << f3(predicted->prepare.value_or(0)) << " s)";
    else
      errs() << f3(predicted->pauseDowntime) << " s (drain "
             << f3(predicted->drain)
             << (predicted->relaunch ? " + relaunch " + f3(*predicted->relaunch)
                                     : std::string())
             << " + move " << f3(predicted->move) << " + fill "
             << f3(predicted->fill) << ")"
             << (!pause ? "; prepare-beside " + predicted->besideProblem
                        : std::string());
    errs() << " by " << replanReport << " for its cluster";
    if (planCore(predicted->runningPlan) != planCore(old.plan) ||
        planCore(predicted->newPlan) != planCore(next.plan))
      errs() << "; note: it plans " << predicted->runningPlan << " -> "
             << predicted->newPlan << ", not these jobs' plans";
    errs() << "\n";
  }
  // The old job ends (beside: it stopped after its last request); the
  // service goes on with the new one until DIR/stop ends it.
  if (!until([&] { return oldRun.ended(); }, true))
    return abandon("--switch: '" + old.dir + "' stopped but did not end in " +
                   Twine(switchTimeout) + " s");
  if (*oldRun.status != 0)
    return abandon("--switch: '" + old.dir + "' ended with exit " +
                   Twine(*oldRun.status));
  until([&] { return newRun.ended(); }, false);
  return *newRun.status ? *newRun.status : recordFailed ? 2 : 0;
}

//===----------------------------------------------------------------------===//
// Redundant copies of a pipeline's state (--redundant, Bamboo's runtime)
//===----------------------------------------------------------------------===//

/// The pipeline degree of plan spec \p plan (1 for none).
static unsigned planPipeline(StringRef plan) {
  for (StringRef kv : llvm::split(plan, ','))
    if (kv.consume_front("pp=")) {
      unsigned pp = 1;
      if (!kv.getAsInteger(10, pp))
        return pp;
    }
  return 1;
}

/// The steps in \p folder/progress.json (a saved state); none when it is
/// missing or holds no count.
static std::optional<int64_t> savedSteps(const Twine &folder) {
  SmallString<256> path;
  folder.toVector(path);
  sys::path::append(path, "progress.json");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return std::nullopt;
  Expected<json::Value> v = json::parse((*buf)->getBuffer());
  if (!v) {
    consumeError(v.takeError());
    return std::nullopt;
  }
  const json::Object *o = v->getAsObject();
  return o ? o->getInteger("steps") : std::nullopt;
}

/// The whole steps rank folder \p rankDir holds (step-<k>/, not the
/// .partial ones), newest first, with \p part (own or copy) in them.
static std::vector<int64_t> committedSteps(StringRef rankDir, StringRef part) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (sys::fs::directory_iterator it(rankDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    StringRef name = sys::path::filename(it->path());
    int64_t k = 0;
    if (!name.consume_front("step-") || name.getAsInteger(10, k))
      continue;
    SmallString<256> folder(it->path());
    sys::path::append(folder, part);
    if (savedSteps(folder) == k)
      steps.push_back(k);
  }
  llvm::sort(steps, std::greater<int64_t>());
  return steps;
}

/// What a rank's `ended` marker says the copies cost (Replica.h): steps,
/// seconds (of them, waiting for the successor's state), bytes sent.
struct CopyCost {
  int64_t steps = 0, bytes = 0;
  double seconds = 0, waiting = 0;
};
static std::optional<CopyCost> readEnded(StringRef genDir, unsigned rank) {
  SmallString<256> path(genDir);
  sys::path::append(path, std::to_string(rank), "ended");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return std::nullopt;
  CopyCost c;
  Expected<json::Value> v = json::parse((*buf)->getBuffer());
  if (!v) {
    consumeError(v.takeError());
    return c; // ended, whatever it wrote
  }
  if (const json::Object *o = v->getAsObject()) {
    c.steps = o->getInteger("steps").value_or(0);
    c.bytes = o->getInteger("bytes").value_or(0);
    c.seconds = o->getNumber("copy_s").value_or(0);
    c.waiting = o->getNumber("wait_s").value_or(0);
  }
  return c;
}

/// dist-run --redundant (Bamboo's runtime half, docs/resilience.md): runs a
/// pipeline training job whose ranks copy their state to the rank before
/// them after every step (the program's --redundant); when a rank
/// vanishes, assembles the newest step every stage's state exists at (the
/// lost rank's from its predecessor's copy) and resumes the job compiled
/// for one rank fewer from the next step.
static int runRedundant(Job job, unsigned n, const char *argv0) {
  std::vector<std::string> user(programArgs.begin(), programArgs.end());
  int64_t total = 0;
  if (int bad = recoverySteps(user,
                              {"--save-state", "--load-state", "--save-every",
                               "--first-step", "--redundant"},
                              "--redundant", "the state itself",
                              "the end state is in " + redundantDir +
                                  "/g<K>/, as dist-run says when it is done",
                              total))
    return bad;
  if (!job.training)
    return fail("--redundant: '" + job.dir +
                "' is not a training job; its copies are of weights and "
                "optimizer state (compile the model with --train)");
  if (planPipeline(job.plan) < 2 || n < 2)
    return fail("--redundant copies each pipeline stage's state to the "
                "stage before it, but '" +
                job.dir + "' runs " +
                (job.plan.empty() ? std::string("one device") : job.plan) +
                " (pp = 1); compile it with a pipeline plan "
                "(--dist-plan=pp=2,...), or use --elastic");
  user = withoutOptions(user, {"--steps"});
  // When a rank is lost, mpirun ends the others with SIGTERM and, by
  // default, SIGKILL one second later; on a loaded machine a rank not
  // scheduled within that second wrote no `ended` marker and counted as
  // lost too (two lost ranks: no recovery). Their handler writes the
  // marker and exits at once, so waiting longer costs nothing. A value
  // the user set stays.
  setenv("OMPI_MCA_odls_base_sigkill_timeout", "10", /*overwrite=*/0);
  SmallString<256> root(redundantDir);
  if (std::error_code ec = sys::fs::make_absolute(root))
    return fail("--redundant " + redundantDir + ": " + ec.message());
  {
    SmallString<256> probe(root);
    sys::path::append(probe, ".dist-run-probe");
    std::error_code ec = sys::fs::create_directories(root);
    if (!ec) {
      raw_fd_ostream os(probe, ec);
    }
    if (ec)
      return fail("--redundant '" + redundantDir + "' cannot be written (" +
                  ec.message() +
                  "); give a folder this user can write (node-local memory "
                  "such as /dev/shm/NAME keeps the copies off the disk)");
    sys::fs::remove(probe);
  }
  // Generations of an earlier run in the same folder would be mistaken
  // for this one's.
  for (unsigned g = 0;; ++g) {
    SmallString<256> old(root);
    sys::path::append(old, "g" + std::to_string(g));
    if (!sys::fs::exists(old))
      break;
    if (std::error_code ec = sys::fs::remove_directories(old))
      return fail("--redundant: cannot clear '" + old +
                  "' of an earlier run: " + ec.message());
  }
  const bool userThreads = std::getenv("OMP_NUM_THREADS");
  std::string compiler = besideCompiler(argv0);

  int64_t done = 0;
  std::string resumeFrom; // the assembled state the next run loads
  for (unsigned gen = 0;; ++gen) {
    SmallString<256> genDir(root);
    sys::path::append(genDir, "g" + std::to_string(gen));
    const bool copies = n >= 2 && planPipeline(job.plan) >= 2;
    std::vector<std::string> args = user;
    args.insert(args.end(), {"--steps", std::to_string(total - done),
                             "--first-step", std::to_string(done + 1)});
    if (copies)
      args.insert(args.end(), {"--redundant", std::string(genDir)});
    else
      args.insert(args.end(), {"--save-state", (genDir + "/end/{rank}").str()});
    if (!resumeFrom.empty())
      args.insert(args.end(), {"--load-state", resumeFrom});
    Expected<std::optional<Standby>> started = startGeneration(
        job, n, root, gen, compiler, "--redundant", copies, userThreads);
    if (!started)
      return fail(toString(started.takeError()));
    std::optional<Standby> standby = std::move(*started);
    errs() << "dist-run: --redundant: steps " << done + 1 << "-" << total
           << " on " << n << " rank(s)"
           << (job.plan.empty() ? "" : " (" + job.plan + ")")
           << (copies ? ", each rank's state copied to the rank before it "
                        "after every step, in " +
                            std::string(genDir)
                      : std::string(", without copies (not a pipeline): a "
                                    "rank lost now ends the run"))
           << "\n";
    Clock::time_point launched = Clock::now();
    int rc = launch(job, n, args);
    double ran = secondsSince(launched);
    if (dryRun) {
      stopStandby(standby);
      return rc;
    }
    // What the copies cost, from the markers of the ranks that ended.
    if (copies) {
      double seconds = 0, waiting = 0;
      int64_t bytes = 0;
      unsigned ranks = 0;
      for (unsigned r = 0; r < n; ++r)
        if (std::optional<CopyCost> c = readEnded(genDir, r))
          if (c->steps > 0) {
            seconds += c->seconds / c->steps;
            waiting += c->waiting / c->steps;
            bytes += c->bytes / c->steps;
            ++ranks;
          }
      if (ranks)
        errs() << formatv("dist-run: --redundant: the copies took {0:f2} ms "
                          "per step per rank, {1:f2} ms of it waiting for the "
                          "successor's state ({2} bytes sent; mean of {3} "
                          "rank(s)), in {4:f2} s of this run\n",
                          1e3 * seconds / ranks, 1e3 * waiting / ranks,
                          bytes / ranks, ranks, ran);
    }
    if (rc == 0) {
      stopStandby(standby);
      SmallString<256> where(genDir);
      if (copies)
        sys::path::append(where, "<rank>", "step-" + std::to_string(total),
                          "own");
      else
        sys::path::append(where, "end", "<rank>");
      errs() << "dist-run: --redundant: done; the state is in " << where
             << "\n";
      return 0;
    }
    if (!copies) {
      stopStandby(standby);
      return fail("--redundant: the job failed (exit " + Twine(rc) + ") on " +
                  Twine(n) +
                  " rank(s) without copies; its last whole state is the one "
                  "it started from" +
                  (resumeFrom.empty()
                       ? ""
                       : " (" + resumeFrom + ", step " + Twine(done) + ")"));
    }
    // The lost rank: the one that wrote no `ended` marker (it vanished;
    // the others ended themselves or were ended by mpirun).
    Clock::time_point failed = Clock::now();
    std::vector<unsigned> lost;
    for (unsigned r = 0; r < n; ++r)
      if (!readEnded(genDir, r))
        lost.push_back(r);
    if (lost.size() != 1) {
      stopStandby(standby);
      if (lost.empty())
        return fail("--redundant: the job failed (exit " + Twine(rc) +
                    ") but no rank vanished (each ended itself or was ended "
                    "by mpirun): that is an error of the job, not a lost "
                    "rank, so it is not resumed; see its errors above");
      std::string names;
      for (unsigned r : lost)
        names += (names.empty() ? "" : ", ") + std::to_string(r);
      return fail("--redundant: the job failed (exit " + Twine(rc) +
                  ") and rank(s) " + names +
                  " left no trace of ending: either it failed before its "
                  "ranks started (see its errors above) or more than one "
                  "rank was lost, which one copy per stage does not survive");
    }
    unsigned dead = lost.front(), holder = (dead + n - 1) % n;
    // The lost rank's node-local memory is gone with it: its own copies
    // are not used (on one machine they would still be there).
    SmallString<256> deadDir(genDir);
    sys::path::append(deadDir, std::to_string(dead));
    (void)sys::fs::remove_directories(deadDir);
    auto source = [&](unsigned stage, int64_t k) {
      bool fromCopy = stage == dead;
      SmallString<256> s(genDir);
      sys::path::append(s, std::to_string(fromCopy ? holder : stage),
                        "step-" + std::to_string(k), fromCopy ? "copy" : "own");
      return std::string(s);
    };
    // The newest step every stage's state exists at.
    std::optional<int64_t> at;
    {
      SmallString<256> holderDir(genDir);
      sys::path::append(holderDir, std::to_string(holder));
      for (int64_t k : committedSteps(holderDir, "copy")) {
        bool all = true;
        for (unsigned s = 0; s < n && all; ++s)
          all = savedSteps(source(s, k)) == k;
        if (all) {
          at = k;
          break;
        }
      }
    }
    SmallString<256> next(root);
    sys::path::append(next, "g" + std::to_string(gen + 1), "from");
    // Without one (lost before its first copy) the run resumes from where
    // this job started: the state it loaded, or the model's weights.
    if (at) {
      if (std::error_code ec = sys::fs::create_directories(next)) {
        stopStandby(standby);
        return fail("--redundant: cannot create '" + next +
                    "': " + ec.message());
      }
      for (unsigned s = 0; s < n; ++s) {
        SmallString<256> to(next);
        sys::path::append(to, std::to_string(s));
        if (std::error_code ec = sys::fs::rename(source(s, *at), to)) {
          stopStandby(standby);
          return fail("--redundant: cannot move '" + source(s, *at) + "' to '" +
                      to + "': " + ec.message());
        }
      }
      done = *at;
      resumeFrom = (next + "/{rank}").str();
    }
    double assembled = secondsSince(failed);
    if (!standby)
      return fail("--redundant: rank " + Twine(dead) + " was lost (exit " +
                  Twine(rc) + ") and '" + job.dir +
                  "/manifest.json' does not say how it was compiled; "
                  "compile it again with this dist-compile");
    errs() << "dist-run: --redundant: rank " << dead << " was lost (exit " << rc
           << ") after " << formatv("{0:f2}", ran) << " s; "
           << (at ? "stage state of step " + std::to_string(*at) +
                        " assembled: rank " + std::to_string(dead) +
                        "'s from rank " + std::to_string(holder) +
                        "'s copy, the others' from their own"
               : resumeFrom.empty()
                   ? std::string("no step was copied yet; from the start")
                   : "no step was copied yet; from step " +
                         std::to_string(done) + " again")
           << " (" << formatv("{0:f3}", assembled) << " s); resuming on "
           << n - 1 << " rank(s) (" << standby->dir << ".log)\n";
    // An injected fault (DISTRT_FAULT) is the first launch's.
    unsetenv("DISTRT_FAULT");
    Clock::time_point waitFrom = Clock::now();
    Expected<Job> nextJob = awaitStandby(*standby, n - 1, "--redundant");
    double waitedFor = secondsSince(waitFrom);
    if (nextJob && waitedFor >= 0.01)
      errs() << formatv("dist-run: --redundant: waited {0:f2} s more for the "
                        "standby compile\n",
                        waitedFor);
    if (!nextJob)
      return fail(toString(nextJob.takeError()));
    job = std::move(*nextJob);
    n = job.ranks ? static_cast<unsigned>(*job.ranks) : n - 1;
    standby.reset();
  }
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-run: starts a compiled job (dist-compile -o JOB/) on the ranks "
      "its plan needs\n\n"
      "  dist-run -n 4 job/ input_ids=ids.npy labels=labels.npy --steps 10\n");

  Expected<Job> job = readJob(jobDir);
  if (!job)
    return fail(toString(job.takeError()));

  // How many ranks: the plan's, or any for data parallelism over the world.
  unsigned n = ranksFlag;
  if (job->ranks && n && static_cast<int64_t>(n) != *job->ranks)
    return fail("'" + jobDir + "' is planned for " + Twine(*job->ranks) +
                " rank(s)" + (job->plan.empty() ? "" : " (" + job->plan + ")") +
                " but -n asks for " + Twine(n) + "; run dist-run -n " +
                Twine(*job->ranks) + " " + jobDir +
                " ..., or compile the model again for " + Twine(n) +
                " ranks (another --dist-plan)");
  if (!n && !job->ranks)
    return fail("'" + jobDir +
                "' runs data parallelism over any number of ranks; say how "
                "many with -n N");
  if (!n)
    n = static_cast<unsigned>(*job->ranks);
  if (serveDir.empty() &&
      (!switchTo.empty() || !replanReport.empty() || !recordRelaunch.empty() ||
       switchOn.getNumOccurrences() || switchHow.getNumOccurrences()))
    return fail("--switch-to, --switch-on, --switch, --replan-report and "
                "--record-relaunch switch a serving job; give --serve=DIR, "
                "the folder of requests");
  if (switchTo.empty() && !serveDir.empty() &&
      (!replanReport.empty() || !recordRelaunch.empty() ||
       switchOn.getNumOccurrences() || switchHow.getNumOccurrences()))
    return fail("--switch-on, --switch, --replan-report and "
                "--record-relaunch need --switch-to=NEWJOB/, the job to "
                "switch to");
  if (!serveDir.empty() &&
      (!elasticDir.empty() || !redundantDir.empty() || !traceFile.empty()))
    return fail("--serve runs without --elastic, --redundant and --trace");
  if (!elasticDir.empty() && !redundantDir.empty())
    return fail("--redundant and --elastic are two ways to survive a lost "
                "rank (copies of every step in memory, or checkpoints every "
                "--elastic-every steps); choose one");
  if (!redundantDir.empty())
    return runRedundant(std::move(*job), n, argv[0]);
  if (!elasticDir.empty())
    return runElastic(std::move(*job), n, argv[0]);
  if (!serveDir.empty()) {
    shareCores(n);
    return runServe(*job, n);
  }
  shareCores(n);
  std::vector<std::string> args(programArgs.begin(), programArgs.end());
  return launch(*job, n, args);
}
