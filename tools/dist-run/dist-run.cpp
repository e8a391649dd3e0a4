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
static cl::opt<bool> dryRun("dry-run",
                            cl::desc("Print the command instead of running it"),
                            cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "dist-run") << message << "\n";
  return 2;
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
  return rc;
}
