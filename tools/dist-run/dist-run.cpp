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

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-run: starts a compiled job (dist-compile -o JOB/) on the ranks "
      "its plan needs\n\n"
      "  dist-run -n 4 job/ input_ids=ids.npy labels=labels.npy --steps 10\n");

  SmallString<256> manifestPath(jobDir);
  sys::path::append(manifestPath, "manifest.json");
  ErrorOr<std::unique_ptr<MemoryBuffer>> file =
      MemoryBuffer::getFile(manifestPath);
  if (!file)
    return fail("cannot read '" + manifestPath + "': " +
                file.getError().message() +
                "; a job folder is what dist-compile -o DIR/ writes");
  Expected<json::Value> parsed = json::parse((*file)->getBuffer());
  if (!parsed)
    return fail("'" + manifestPath + "' is not JSON: " +
                toString(parsed.takeError()));
  const json::Object *manifest = parsed->getAsObject();
  if (!manifest || manifest->getString("format") != "distopt-job" ||
      manifest->getInteger("version") != 1)
    return fail("'" + manifestPath +
                "' is not a DistOpt job manifest (format \"distopt-job\", "
                "version 1); recompile with dist-compile -o DIR/");
  std::optional<StringRef> program = manifest->getString("program");
  if (!program || program->empty() || program->contains('/'))
    return fail("'" + manifestPath + "' names no program in the job folder");
  SmallString<256> exe(jobDir);
  sys::path::append(exe, *program);
  if (!sys::fs::can_execute(exe))
    return fail("the job's program '" + exe +
                "' is missing or not executable; recompile the job");

  // How many ranks: the plan's, or any for data parallelism over the world.
  std::optional<int64_t> planned = manifest->getInteger("ranks");
  std::string plan;
  if (const json::Array *models = manifest->getArray("models"))
    for (const json::Value &m : *models)
      if (const json::Object *o = m.getAsObject())
        if (std::optional<StringRef> p = o->getString("plan"))
          plan = p->str();
  unsigned n = ranksFlag;
  if (planned && n && static_cast<int64_t>(n) != *planned)
    return fail("'" + jobDir + "' is planned for " + Twine(*planned) +
                " rank(s)" + (plan.empty() ? "" : " (" + plan + ")") +
                " but -n asks for " + Twine(n) + "; run dist-run -n " +
                Twine(*planned) + " " + jobDir +
                " ..., or compile the model again for " + Twine(n) +
                " ranks (another --dist-plan)");
  if (!n && !planned)
    return fail("'" + jobDir +
                "' runs data parallelism over any number of ranks; say how "
                "many with -n N");
  if (!n)
    n = static_cast<unsigned>(*planned);

  // One thread per core share, unless the user chose.
  if (!std::getenv("OMP_NUM_THREADS")) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    setenv("OMP_NUM_THREADS", std::to_string(std::max(1u, cores / n)).c_str(),
           1);
  }

  std::vector<std::string> cmd;
  bool direct = n == 1 && planned && *planned == 1;
  if (!direct) {
    Expected<std::vector<std::string>> launcher =
        distopt::mpirunCommand(mpirunPath, n);
    if (!launcher)
      return fail(toString(launcher.takeError()));
    cmd = std::move(*launcher);
    cmd.insert(cmd.end(), mpirunArgs.begin(), mpirunArgs.end());
  }
  cmd.push_back(std::string(exe));
  cmd.insert(cmd.end(), programArgs.begin(), programArgs.end());
  // Under mpirun the ranks' stderr is a pipe, not this terminal: ask for
  // the steps' progress when the user sees one (and did not choose).
  if (!direct && sys::Process::StandardErrIsDisplayed() &&
      llvm::none_of(programArgs, [](const std::string &a) {
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
