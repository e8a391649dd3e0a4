//===- dist-run.cpp - Launch a compiled job on its ranks --------*- C++ -*-===//
//
// Part of DistOpt. `dist-run [-n N] JOB/ [program arguments...]` starts the
// program of a job folder (`dist-compile -o JOB/`) on as many ranks as its
// plan needs, through mpirun on this machine: it reads JOB/manifest.json,
// checks N against the plan (a mismatch is an error that says what to run),
// gives each rank its share of the cores (OMP_NUM_THREADS, unless set), and
// returns the job's exit status. docs/cli.md, "Jobs".
//
//===----------------------------------------------------------------------===//
#include "lib/Support/Launcher.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdlib>
#include <string>
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
    ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
    if (!buf)
      return fail("rank " + Twine(r) + " wrote no trace '" + path +
                  "': " + buf.getError().message());
    Expected<json::Value> v = json::parse((*buf)->getBuffer());
    const json::Object *o = v ? v->getAsObject() : nullptr;
    const json::Array *list = o ? o->getArray("traceEvents") : nullptr;
    if (!list) {
      if (!v)
        consumeError(v.takeError());
      return fail("rank " + Twine(r) + "'s trace '" + path +
                  "' is not a Chrome trace");
    }
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
};

static Expected<Job> readJob(StringRef dir) {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  Job job;
  job.dir = dir.str();
  SmallString<256> manifestPath(dir);
  sys::path::append(manifestPath, "manifest.json");
  ErrorOr<std::unique_ptr<MemoryBuffer>> file =
      MemoryBuffer::getFile(manifestPath);
  if (!file)
    return error("cannot read '" + manifestPath +
                 "': " + file.getError().message() +
                 "; a job folder is what dist-compile -o DIR/ writes");
  Expected<json::Value> parsed = json::parse((*file)->getBuffer());
  if (!parsed)
    return error("'" + manifestPath +
                 "' is not JSON: " + toString(parsed.takeError()));
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
  if (const json::Object *c = manifest->getObject("compile")) {
    job.compileDir = c->getString("dir").value_or("").str();
    if (const json::Array *args = c->getArray("args"))
      for (const json::Value &a : *args)
        if (std::optional<StringRef> s = a.getAsString())
          job.compileArgs.push_back(s->str());
  }
  return job;
}

/// Runs \p job on \p n ranks with the program's \p args; its exit status
/// (2 and a message for what cannot start).
static int launch(const Job &job, unsigned n, ArrayRef<std::string> args) {
  std::vector<std::string> cmd;
  bool direct = n == 1 && job.ranks && *job.ranks == 1;
  if (!direct) {
    Expected<std::vector<std::string>> launcher =
        distopt::mpirunCommand(mpirunPath, n);
    if (!launcher)
      return fail(toString(launcher.takeError()));
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
  if (dryRun) {
    outs() << "OMP_NUM_THREADS=" << std::getenv("OMP_NUM_THREADS");
    for (const std::string &a : cmd)
      outs() << " " << a;
    outs() << "\n";
    return 0;
  }
  std::vector<StringRef> argvRefs(cmd.begin(), cmd.end());
  std::string error;
  int rc = sys::ExecuteAndWait(cmd.front(), argvRefs, std::nullopt, {}, 0, 0,
                               &error);
  if (rc < 0)
    return fail("cannot run '" + cmd.front() + "': " + error);
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
    ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
    if (!buf)
      continue;
    Expected<json::Value> v = json::parse((*buf)->getBuffer());
    const json::Object *o = v ? v->getAsObject() : nullptr;
    std::optional<int64_t> s = o ? o->getInteger("steps") : std::nullopt;
    if (!v)
      consumeError(v.takeError());
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
                                        StringRef compiler) {
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
    return createStringError(ec, "--elastic: cannot create '" + root +
                                     "': " + ec.message());
  // Run where the job was compiled (its paths are relative to there); the
  // report goes to a log, so the job's output stays its steps.
  SmallString<256> here;
  sys::fs::current_path(here);
  if (!job.compileDir.empty() && sys::fs::set_current_path(job.compileDir))
    return createStringError(inconvertibleErrorCode(),
                             "--elastic: cannot enter '" + job.compileDir +
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
    return createStringError(inconvertibleErrorCode(),
                             "--elastic: cannot run '" + compile.front() +
                                 "': " + error);
  return Standby{pi, std::string(dir)};
}

/// dist-run --elastic (Asteroid's recovery, docs/resilience.md): runs the
/// job with checkpoints into DIR/g<K>/<rank>; when it fails, compiles it
/// again for one rank fewer with the search and resumes it from the last
/// whole checkpoint (re-sharded by the program's --load-state), until the
/// steps are done or one rank is left and fails too.
static int runElastic(Job job, unsigned n, const char *argv0) {
  std::vector<std::string> user(programArgs.begin(), programArgs.end());
  for (StringRef owned :
       {"--save-state", "--load-state", "--save-every", "--first-step"})
    if (optionValue(user, owned, nullptr))
      return fail("--elastic keeps the checkpoints itself; leave out " + owned +
                  " (the last state is in " + elasticDir + "/g<K>/<rank>)");
  std::optional<std::string> stepsText = optionValue(user, "--steps", nullptr);
  int64_t total = 0;
  if (!stepsText || StringRef(*stepsText).getAsInteger(10, total) || total < 1)
    return fail("--elastic needs --steps N (N >= 1) among the program's "
                "arguments: the training run to finish");
  if (elasticEvery == 0)
    return fail("--elastic-every must be at least 1");
  user = withoutOptions(user, {"--steps"});
  SmallString<256> root(elasticDir);
  if (std::error_code ec = sys::fs::make_absolute(root))
    return fail("--elastic " + elasticDir + ": " + ec.message());
  const bool userThreads = std::getenv("OMP_NUM_THREADS");
  SmallString<256> compiler(sys::path::parent_path(
      sys::fs::getMainExecutable(argv0, (void *)&checkpointSteps)));
  sys::path::append(compiler, "dist-compile");

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
    std::optional<Standby> standby;
    if (n > 1 && !job.compileArgs.empty() && !dryRun) {
      Expected<Standby> started =
          compileStandby(job, n - 1, root, gen + 1, compiler);
      if (!started)
        return fail(toString(started.takeError()));
      standby = std::move(*started);
    }
    if (!userThreads)
      unsetenv("OMP_NUM_THREADS");
    shareCores(n);
    errs() << "dist-run: --elastic: steps " << done + 1 << "-" << total
           << " on " << n << " rank(s)"
           << (job.plan.empty() ? "" : " (" + job.plan + ")")
           << ", checkpoints every " << elasticEvery << " steps in " << genDir
           << "\n";
    int rc = launch(job, n, args);
    auto stopStandby = [&] {
      if (!standby)
        return;
      ::kill(standby->process.Pid, SIGTERM);
      (void)sys::Wait(standby->process, std::nullopt);
      standby.reset();
    };
    if (rc == 0) {
      stopStandby(); // not needed
      errs() << "dist-run: --elastic: done; the state is in " << genDir
             << "/<rank>\n";
      return 0;
    }
    if (dryRun)
      return rc;
    Expected<std::optional<int64_t>> saved = checkpointSteps(genDir, n);
    if (!saved) {
      stopStandby();
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
    std::string error;
    sys::ProcessInfo waited = sys::Wait(standby->process, std::nullopt, &error);
    if (waited.ReturnCode != 0)
      return fail("--elastic: compiling the job for " + Twine(n - 1) +
                  " rank(s) failed" + (error.empty() ? "" : ": " + error) +
                  "; its output is in " + standby->dir + ".log");
    Expected<Job> next = readJob(standby->dir);
    if (!next)
      return fail(toString(next.takeError()));
    job = std::move(*next);
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
  if (!elasticDir.empty())
    return runElastic(std::move(*job), n, argv[0]);
  shareCores(n);
  std::vector<std::string> args(programArgs.begin(), programArgs.end());
  return launch(*job, n, args);
}
