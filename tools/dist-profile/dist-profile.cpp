//===- dist-profile.cpp - Measure this machine for the cost model -*- C++ -*-=//
//
// Part of DistOpt. `dist-profile MODEL --input-shape=... --train=... -o DIR`
// measures what the cost model needs to predict a plan on this machine with
// the code that will run it:
//
//  - op times: the model's training step is compiled with dist-compile at
//    each micro-batch size and run (--profile-json) on as many copies at
//    once as the job will run ranks, each on its share of the cores; the
//    copies' databases are averaged into DIR/profile.json (per op signature
//    and phase, plus the optimizer step per parameter). With --tp=T the
//    step is also compiled with `--dist-plan=tp=T` and run on T ranks under
//    mpirun: each rank times its shards of the ops, filed under the whole
//    op and tp = T, which is what the cost model looks up for a plan with
//    that tp;
//  - link times: distrt-comm-bench (the runtime's send/recv and
//    all-reduce) under mpirun between the ranks; latency and bandwidth are
//    fitted and written with the `local` preset's device as
//    DIR/cluster.yaml, whose device kind names the profile's entries;
//  - memory: the read bandwidth each rank's threads get with every rank
//    reading at once, as the device's memory bandwidth (efficiency 1) in
//    DIR/cluster.yaml: what a kernel streaming an operand from memory gets
//    (a GEMM adding into a running gradient sum reads the sum).
//
// Then: dist-opt MODEL --dist-cluster=DIR/cluster.yaml
//   --dist-profile=DIR/profile.json --dist-dtype=f32 --dist-plan=...
// (docs/cost-model.md, "Measured profiles").
//
// `dist-profile --input-files=FOLDER --preprocess=CMD -o DIR` measures the
// input pipeline instead (docs/cost-model.md, "Data stalls"): the mean
// size of the folder's sample files and the CPU time CMD takes per sample
// (run through /bin/sh with {} standing for the file, less the shell's own
// start-up), written as DIR/input.txt in dist-opt's --dist-input form.
//
//===----------------------------------------------------------------------===//
#include "dist/ImportONNX.h"
#include "lib/Cluster/Cluster.h"
#include "lib/Cost/ProfileDB.h"
#include "lib/Support/JSONFile.h"
#include "lib/Support/Launcher.h"
#include "lib/Support/OutputFile.h"
#include "lib/Support/StatusLine.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sys/resource.h>
#include <thread>

using namespace llvm;
using namespace distopt;

static cl::OptionCategory category("dist-profile options");
static cl::opt<std::string> model(cl::Positional, cl::Optional,
                                  cl::desc("<model.onnx|model.mlir>"),
                                  cl::cat(category));
static cl::opt<std::string>
    outDir("o", cl::Required,
           cl::desc("Folder to write profile.json, cluster.yaml and "
                    "links.json to (work/ keeps the programs and logs)"),
           cl::value_desc("DIR"), cl::cat(category));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("NAME:D0xD1x... as for dist-compile; D0 is the sample "
                         "dimension, replaced by each micro-batch size"),
                cl::cat(category));
static cl::list<std::string>
    inputDims("input-dim",
              cl::desc("NAME=N as for dist-compile: pins a named symbolic "
                       "dimension in every input; the leading (sample) "
                       "dimension is left to each micro-batch size"),
              cl::value_desc("sequence=128"), cl::cat(category));
static cl::list<std::string> inputValues("input-value",
                                         cl::desc("Passed to dist-compile"),
                                         cl::cat(category));
static cl::opt<std::string>
    train("train",
          cl::desc("The training step to measure, as dist-compile --train "
                   "(e.g. \"loss=softmax-cross-entropy:labels "
                   "optimizer=sgd\")"),
          cl::cat(category));
static cl::list<unsigned> microBatches(
    "micro-batches", cl::CommaSeparated,
    cl::desc("Micro-batch sizes to measure (default: D0 of the first "
             "--input-shape)"),
    cl::cat(category));
static cl::opt<unsigned>
    ranks("ranks",
          cl::desc("Ranks the profiled cluster has (default: one per core); "
                   "the op times are measured on that many copies at once"),
          cl::init(0), cl::cat(category));
static cl::list<unsigned>
    tpDegrees("tp", cl::CommaSeparated,
              cl::desc("Tensor-parallel degrees to measure the ops' shards "
                       "at too (each at most --ranks; e.g. --tp=2)"),
              cl::cat(category));
static cl::opt<unsigned>
    threads("threads-per-rank",
            cl::desc("Threads per rank (default: cores / ranks, at least 1)"),
            cl::init(0), cl::cat(category));
static cl::opt<unsigned> steps("steps",
                               cl::desc("Training steps per measurement (the "
                                        "first, which loads weights, is left "
                                        "out; default 6)"),
                               cl::init(6), cl::cat(category));
static cl::opt<std::string>
    weightsDir("weights-dir",
               cl::desc("Passed to the programs (weights relative to it)"),
               cl::cat(category));
static cl::opt<unsigned> maxMessage(
    "max-message-bytes",
    cl::desc("Largest message the link measurement sends (default 16 MiB)"),
    cl::init(16u << 20), cl::cat(category));
static cl::opt<std::string>
    mpirunPath("mpirun", cl::desc("The MPI launcher (default: mpirun on PATH)"),
               cl::value_desc("PATH"), cl::cat(category));
static cl::opt<bool> verbose("v", cl::desc("Print every command run"),
                             cl::cat(category));
static cl::opt<std::string> inputFiles(
    "input-files",
    cl::desc("Measure the input pipeline instead of a model: a folder of the "
             "dataset's samples, one file each (with --preprocess)"),
    cl::value_desc("FOLDER"), cl::cat(category));
static cl::opt<std::string> preprocessCmd(
    "preprocess",
    cl::desc("With --input-files: the command that preprocesses one sample, "
             "{} standing for its file (run by /bin/sh); its CPU time per "
             "sample is measured"),
    cl::value_desc("CMD"), cl::cat(category));
static cl::opt<unsigned> inputSamples(
    "input-samples",
    cl::desc("With --input-files: samples to measure, spread over the "
             "folder (default 32)"),
    cl::init(32), cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "dist-profile") << message << "\n";
  return 1;
}

/// CPU seconds (user + system) of the children waited for so far.
static double childCpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  auto sec = [](const timeval &t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

/// \p path quoted for /bin/sh.
static std::string shellQuoted(StringRef path) {
  std::string out = "'";
  for (char c : path)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The input-pipeline mode: bytes per sample, CPU time of --preprocess per
/// sample and the dataset's sample count, as dist-opt's --dist-input.
static int profileInput() {
  if (!model.empty())
    return fail("--input-files measures the input pipeline, not a model: "
                "drop '" +
                model + "' (or --input-files)");
  if (!StringRef(preprocessCmd).contains("{}"))
    return fail("give the preprocessing of one sample with --preprocess=CMD, "
                "{} standing for its file (e.g. --preprocess='python3 "
                "augment.py {}')");
  if (inputSamples == 0)
    return fail("--input-samples must be at least 1");
  if (!sys::fs::is_directory(inputFiles))
    return fail("--input-files='" + inputFiles +
                "' is not a folder; give the folder of the dataset's "
                "sample files");
  std::vector<std::string> files;
  std::error_code ec;
  for (sys::fs::directory_iterator it(inputFiles, ec), end; it != end && !ec;
       it.increment(ec))
    if (sys::fs::is_regular_file(it->path()))
      files.push_back(it->path());
  if (ec)
    return fail("cannot list '" + inputFiles + "': " + ec.message());
  if (files.empty())
    return fail("--input-files='" + inputFiles +
                "' has no files; give the folder of the dataset's samples");
  llvm::sort(files);
  unsigned n = std::min<size_t>(inputSamples, files.size());
  ErrorOr<std::string> sh = sys::findProgramByName("sh");
  if (!sh)
    return fail("no /bin/sh to run --preprocess with");
  auto runShell = [&](const std::string &cmd) {
    if (verbose)
      errs() << "dist-profile: sh -c " << cmd << "\n";
    std::string err;
    return sys::ExecuteAndWait(*sh, {"sh", "-c", cmd}, std::nullopt, {}, 0, 0,
                               &err);
  };
  double bytes = 0, cpu = 0, shell = 0;
  for (unsigned i = 0; i < n; ++i) {
    // Spread over the folder (the first and the last included).
    const std::string &file =
        files[n == 1 ? 0 : size_t(i) * (files.size() - 1) / (n - 1)];
    uint64_t size = 0;
    if (std::error_code e = sys::fs::file_size(file, size))
      return fail("cannot read '" + file + "': " + e.message());
    bytes += size;
    std::string cmd = preprocessCmd;
    for (size_t at; (at = cmd.find("{}")) != std::string::npos;)
      cmd.replace(at, 2, shellQuoted(file));
    double before = childCpuSeconds();
    int rc = runShell(cmd);
    if (rc != 0)
      return fail(formatv("--preprocess failed on '{0}' (exit status {1}): "
                          "{2}; fix the command (it must succeed on one "
                          "sample file)",
                          file, rc, cmd));
    cpu += childCpuSeconds() - before;
    before = childCpuSeconds();
    runShell(":");
    shell += childCpuSeconds() - before;
  }
  // CPU time has a clock tick's resolution: keep at least a microsecond.
  double perSample = std::max(1e-6, (cpu - shell) / n);
  std::string spec = formatv("bytes={0:F0}B,preprocess={1:F1}us,dataset={2}",
                             bytes / n, perSample * 1e6, files.size())
                         .str();
  SmallString<256> path(outDir);
  if (std::error_code e = sys::fs::create_directories(outDir))
    return fail("cannot create '" + outDir + "': " + e.message());
  sys::path::append(path, "input.txt");
  std::error_code e;
  raw_fd_ostream os(path, e);
  if (e)
    return fail("cannot write '" + path + "': " + e.message());
  os << spec << "\n";
  outs() << formatv("dist-profile: {0} of {1} samples measured: {2:F0} bytes "
                    "and {3:F1} ms of CPU each (shell start-up {4:F2} ms "
                    "left out)\n",
                    n, files.size(), bytes / n, perSample * 1e3,
                    shell / n * 1e3);
  outs() << "  --dist-input=" << spec << "  (written to " << path << ")\n";
  return 0;
}

static std::string sibling(StringRef name) {
  std::string self = sys::fs::getMainExecutable(nullptr, nullptr);
  SmallString<256> p(sys::path::parent_path(self));
  sys::path::append(p, name);
  return std::string(p);
}

/// Runs \p cmd with stdout and stderr into \p log; returns the exit status
/// (-1 when it could not start) and fills \p error. On a terminal the
/// status line says \p what it is doing meanwhile.
static int run(ArrayRef<std::string> cmd, StringRef log, const Twine &what,
               std::string &error) {
  if (verbose) {
    errs() << "dist-profile: running";
    for (const std::string &a : cmd)
      errs() << " " << a;
    errs() << "\n";
  }
  std::vector<StringRef> argv(cmd.begin(), cmd.end());
  std::optional<StringRef> redirects[] = {std::nullopt, log, log};
  return distopt::runShowing(cmd.front(), argv, redirects, "dist-profile", what,
                             error);
}

/// The last lines of \p log, for an error message.
static std::string tail(StringRef log) {
  auto buf = MemoryBuffer::getFile(log);
  if (!buf)
    return "";
  StringRef text = (*buf)->getBuffer().rtrim();
  size_t at = text.size();
  for (int lines = 0; lines < 6 && at != StringRef::npos && at > 0; ++lines)
    at = text.rfind('\n', at - 1);
  return (at == StringRef::npos ? text : text.substr(at + 1)).str();
}

namespace {
/// One program input as `--list` prints it: "  input  NAME: DTYPE [D, ...]".
struct InputSpec {
  std::string name, dtype;
  std::vector<int64_t> dims;
};
} // namespace

static Expected<std::vector<InputSpec>> listInputs(StringRef log) {
  auto buf = MemoryBuffer::getFile(log);
  if (!buf)
    return createStringError(buf.getError(), "cannot read '" + log + "'");
  std::vector<InputSpec> out;
  SmallVector<StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    if (!line.consume_front("input "))
      continue;
    auto [name, rest] = line.trim().rsplit(": ");
    auto [dtype, shape] = rest.split(' ');
    InputSpec in{name.str(), dtype.str(), {}};
    SmallVector<StringRef> dims;
    shape.trim().drop_front().drop_back().split(dims, ',', -1, false);
    for (StringRef d : dims) {
      int64_t v;
      if (d.trim().getAsInteger(10, v))
        return createStringError(inconvertibleErrorCode(),
                                 "cannot read the input line '" + line + "'");
      in.dims.push_back(v);
    }
    out.push_back(std::move(in));
  }
  return out;
}

/// Writes a .npy of \p in: floats a fixed pattern in [-0.5, 0.5], integers
/// and booleans zero (a valid index and class for every embedding and
/// label input).
static std::string writeInput(const InputSpec &in, StringRef path) {
  static const struct {
    const char *name, *descr;
    unsigned size;
  } kinds[] = {
      {"float32", "<f4", 4}, {"float64", "<f8", 8}, {"float16", "<f2", 2},
      {"int8", "|i1", 1},    {"int16", "<i2", 2},   {"int32", "<i4", 4},
      {"int64", "<i8", 8},   {"uint8", "|u1", 1},   {"uint16", "<u2", 2},
      {"uint32", "<u4", 4},  {"uint64", "<u8", 8},  {"bool", "|b1", 1}};
  const auto *kind =
      llvm::find_if(kinds, [&](const auto &k) { return in.dtype == k.name; });
  if (kind == std::end(kinds))
    return "input '" + in.name + "' has type " + in.dtype +
           ", which dist-profile cannot fill";
  int64_t n = 1;
  std::string shape = "(";
  for (int64_t d : in.dims) {
    n *= d;
    shape += std::to_string(d) + ", ";
  }
  if (in.dims.size() > 1)
    shape.resize(shape.size() - 2);
  shape += ")";
  std::string header = formatv("{{'descr': '{0}', 'fortran_order': False, "
                               "'shape': {1}, }",
                               kind->descr, shape)
                           .str();
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    return "cannot write '" + path.str() + "': " + ec.message();
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header;
  std::vector<char> data((size_t)n * kind->size, 0);
  if (in.dtype == "float32" || in.dtype == "float64")
    for (int64_t i = 0; i < n; ++i) {
      double v = 0.5 * std::sin(0.37 * (double)i);
      if (in.dtype == "float32") {
        float f = (float)v;
        memcpy(&data[(size_t)i * 4], &f, 4);
      } else {
        memcpy(&data[(size_t)i * 8], &v, 8);
      }
    }
  os.write(data.data(), data.size());
  return closeOutput(os, path);
}

namespace {
struct Point {
  double bytes, seconds;
};
/// What the link measurement gives the cluster description.
struct LinkFit {
  double latency = 0, bandwidth = 0, collectiveEfficiency = 1;
  bool efficiencyCapped = false;
};
} // namespace

static Expected<std::vector<Point>> points(const json::Object &o, StringRef key,
                                           StringRef file) {
  const json::Array *list = o.getArray(key);
  if (!list || list->empty())
    return createStringError(inconvertibleErrorCode(),
                             "'" + file + "' has no '" + key + "' list");
  std::vector<Point> out;
  for (const json::Value &v : *list) {
    const json::Object *p = v.getAsObject();
    std::optional<double> b = p ? p->getNumber("bytes") : std::nullopt;
    std::optional<double> s = p ? p->getNumber("seconds") : std::nullopt;
    if (!b || !s || *b <= 0 || *s <= 0)
      return createStringError(inconvertibleErrorCode(),
                               "'" + file + "': a '" + key +
                                   "' point without positive bytes and "
                                   "seconds");
    out.push_back({*b, *s});
  }
  return out;
}

/// Latency: the median one-way time of messages up to 512 bytes. The
/// bandwidth minimises the relative error of latency + bytes / bandwidth
/// over messages of 64 KiB and more; the collective efficiency does the
/// same for the ring all-reduce time of the cost model,
/// 2(n-1)·latency + 2(n-1)/n · bytes / (bandwidth · efficiency).
static LinkFit fitLinks(ArrayRef<Point> p2p, ArrayRef<Point> allReduce,
                        unsigned n) {
  LinkFit f;
  std::vector<double> small;
  for (const Point &p : p2p)
    if (p.bytes <= 512)
      small.push_back(p.seconds);
  llvm::sort(small);
  f.latency = small.empty() ? 0 : small[small.size() / 2];
  // Minimise sum(((lat + b x - t) / t)^2) over x = 1 / bandwidth.
  auto slope = [](ArrayRef<Point> pts, double fixed, double scale) {
    double num = 0, den = 0;
    for (const Point &p : pts) {
      if (p.bytes < 65536)
        continue;
      double a = scale * p.bytes / p.seconds,
             c = (p.seconds - fixed) / p.seconds;
      num += a * c;
      den += a * a;
    }
    return den > 0 ? num / den : 0.0;
  };
  double x = slope(p2p, f.latency, 1);
  if (!(x > 0)) { // only small messages: the largest one's rate
    const Point &last = p2p.back();
    x = std::max(last.seconds - f.latency, last.seconds * 0.5) / last.bytes;
  }
  f.bandwidth = 1 / x;
  double k = 2.0 * (n - 1) / n;
  double y = slope(allReduce, 2.0 * (n - 1) * f.latency, k * x);
  if (y > 0) {
    f.collectiveEfficiency = 1 / y;
    if (f.collectiveEfficiency > 1) {
      f.collectiveEfficiency = 1;
      f.efficiencyCapped = true;
    }
  }
  return f;
}

static Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Writes \p path through \p write; "" or the error.
static std::string writeFile(StringRef path,
                             function_ref<void(raw_ostream &)> write) {
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    return "cannot write '" + path.str() + "': " + ec.message();
  write(os);
  return closeOutput(os, path);
}

namespace {
/// An --input-shape split at its sample dimension.
struct Shape {
  std::string name, rest;
  unsigned samples;
};
/// What the op measurement needs to know.
struct OpRun {
  std::vector<Shape> shapes;
  std::string device, work;
  unsigned copies, threads;
};
} // namespace

/// The op times of the training step at micro-batch \p m: compiled, its
/// inputs written, `copies` programs run at once; one database per copy.
/// With \p tp > 1, the step of plan `tp=TP` on TP ranks under mpirun; one
/// database per rank.
static Error measureOps(const OpRun &r, unsigned m, unsigned tp,
                        std::vector<cost::ProfileDB> &measured) {
  std::string stem = (tp > 1 ? "tp" + std::to_string(tp) + "." : "") + "mbs" +
                     std::to_string(m);
  auto in = [&](const Twine &name) {
    SmallString<256> p(r.work);
    sys::path::append(p, stem + name);
    return std::string(p);
  };
  std::string exe = in(".bin"), error;
  std::vector<std::string> cmd = {sibling("dist-compile"),
                                  model,
                                  "--train=" + train,
                                  "--default-batch=" + std::to_string(m),
                                  "-o",
                                  exe};
  if (tp > 1) {
    // A job folder; its program is what every rank runs.
    cmd.back() = in("/");
    cmd.insert(cmd.end(), {formatv("--dist-plan=tp={0},mbs={1}", tp, m).str(),
                           "--dist-batch=" + std::to_string(m)});
    exe = in("/program");
  }
  for (const Shape &s : r.shapes)
    cmd.push_back("--input-shape=" + s.name + ":" + std::to_string(m) +
                  (s.rest.empty() ? "" : "x" + s.rest));
  for (const std::string &v : inputDims)
    cmd.push_back("--input-dim=" + v);
  for (const std::string &v : inputValues)
    cmd.push_back("--input-value=" + v);
  std::string what = (tp > 1 ? "tp=" + std::to_string(tp) + ", " : "") +
                     "micro-batch " + std::to_string(m);
  std::string log = in(".compile.log");
  int rc = run(cmd, log, "compiling the step at " + what, error);
  if (rc != 0)
    return failure("dist-compile failed for micro-batch " + Twine(m) +
                   (rc < 0 ? ": " + error : "") + " (" + log + "):\n" +
                   tail(log));
  std::string listLog = in(".inputs.log");
  if (run({exe, "--list"}, listLog, "reading its inputs", error) != 0)
    return failure("'" + exe + " --list' failed (" + listLog + ")");
  Expected<std::vector<InputSpec>> specs = listInputs(listLog);
  if (!specs)
    return specs.takeError();
  std::vector<std::string> args = {exe};
  for (const InputSpec &spec : *specs) {
    std::string path = in("." + spec.name + ".npy");
    std::string problem = writeInput(spec, path);
    if (!problem.empty())
      return failure(problem);
    args.push_back(spec.name + "=" + path);
  }
  args.insert(args.end(), {"--steps", std::to_string(steps), "--threads",
                           std::to_string(r.threads), "--profile",
                           "--profile-device", r.device});
  if (!weightsDir.empty())
    args.insert(args.end(), {"--weights-dir", weightsDir});
  if (tp > 1) {
    Expected<std::vector<std::string>> job = mpirunCommand(mpirunPath, tp);
    if (!job)
      return job.takeError();
    job->insert(job->end(), args.begin(), args.end());
    job->insert(job->end(),
                {"--profile-json", in(".{rank}.json"), "-o", in(".out")});
    std::string log = in(".log");
    int rc = run(*job, log, "timing the ops at " + what, error);
    if (rc != 0)
      return failure("the tp=" + Twine(tp) + " micro-batch " + Twine(m) +
                     " job failed" + (rc < 0 ? ": " + error : "") + " (" + log +
                     "):\n" + tail(log));
    for (unsigned k = 0; k < tp; ++k) {
      Expected<cost::ProfileDB> db =
          cost::ProfileDB::load(in("." + Twine(k) + ".json"));
      if (!db)
        return db.takeError();
      measured.push_back(std::move(*db));
    }
    return Error::success();
  }
  // The copies run together, as the job's ranks will.
  std::vector<sys::ProcessInfo> procs;
  std::vector<std::string> jsons, logs;
  for (unsigned c = 0; c < r.copies; ++c) {
    jsons.push_back(in(".copy" + Twine(c) + ".json"));
    logs.push_back(in(".copy" + Twine(c) + ".log"));
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--profile-json", jsons.back(), "-o",
                       in(".copy" + Twine(c) + ".out")});
    std::vector<StringRef> argv(a.begin(), a.end());
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logs[c]),
                                            StringRef(logs[c])};
    procs.push_back(
        sys::ExecuteNoWait(exe, argv, std::nullopt, redirects, 0, &error));
    if (!procs.back().Pid)
      return failure("cannot run '" + exe + "': " + error);
  }
  std::string problem;
  for (unsigned c = 0; c < r.copies; ++c) {
    int rc = distopt::waitShowing(procs[c], "dist-profile",
                                  "timing the ops at " + what + " (" +
                                      Twine(r.copies) + " copies at once)",
                                  error);
    if (rc != 0) {
      if (problem.empty())
        problem = ("the micro-batch " + Twine(m) + " program failed (" +
                   logs[c] + "):\n" + tail(logs[c]))
                      .str();
      continue;
    }
    Expected<cost::ProfileDB> db = cost::ProfileDB::load(jsons[c]);
    if (!db)
      return db.takeError();
    measured.push_back(std::move(*db));
  }
  if (!problem.empty())
    return failure(problem);
  return Error::success();
}

/// The read bandwidth of one device: \p copies x \p threads threads at
/// once (as the programs run), each summing its own 128 MiB, far beyond
/// any core's caches, seven times; the median pass of each thread, summed
/// over a device's threads. It is what a kernel that streams an operand
/// from memory gets, such as a GEMM adding into a running gradient sum.
static double measureMemoryBandwidth(unsigned copies, unsigned threads) {
  const size_t words = (size_t(128) << 20) / sizeof(uint64_t);
  const unsigned n = copies * threads, passes = 7;
  std::vector<double> rate(n, 0);
  std::vector<std::thread> pool;
  std::atomic<uint64_t> sink{0};
  for (unsigned t = 0; t < n; ++t)
    pool.emplace_back([&, t] {
      std::vector<uint64_t> data(words);
      for (size_t i = 0; i < words; ++i)
        data[i] = i * 0x9E3779B97F4A7C15ull;
      std::vector<double> seconds;
      uint64_t sum = 0;
      for (unsigned k = 0; k < passes; ++k) {
        auto start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < words; ++i)
          sum += data[i];
        seconds.push_back(std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
      }
      llvm::sort(seconds);
      rate[t] = words * sizeof(uint64_t) / seconds[passes / 2];
      sink += sum;
    });
  for (std::thread &t : pool)
    t.join();
  llvm::sort(rate);
  return rate[n / 2] * threads;
}

/// The links between \p n ranks: distrt-comm-bench under mpirun, its
/// figures in \p links, fitted.
static Expected<LinkFit> measureLinks(unsigned n, const std::string &links,
                                      const std::string &log) {
  Expected<std::vector<std::string>> cmd = mpirunCommand(mpirunPath, n);
  if (!cmd)
    return cmd.takeError();
  cmd->insert(cmd->end(), {sibling("distrt-comm-bench"), "-o", links,
                           "--max-bytes", std::to_string(maxMessage)});
  setenv("OMP_NUM_THREADS", "1", 1);
  std::string error;
  int rc = run(*cmd, log, "measuring the links between " + Twine(n) + " ranks",
               error);
  if (rc != 0)
    return failure("the link measurement failed" +
                   (rc < 0 ? ": " + error : std::string()) + " (" + log +
                   "):\n" + tail(log));
  Expected<json::Value> v = readJSONFile(links, "the link measurement");
  if (!v)
    return v.takeError();
  const json::Object *o = v->getAsObject();
  if (!o)
    return failure("'" + links + "' is not the comm benchmark's JSON");
  Expected<std::vector<Point>> p2p = points(*o, "p2p", links);
  if (!p2p)
    return p2p.takeError();
  Expected<std::vector<Point>> ar = points(*o, "all_reduce", links);
  if (!ar)
    return ar.takeError();
  return fitLinks(*p2p, *ar, n);
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-profile: measures this machine's op and link times for the cost "
      "model\n\n"
      "  dist-profile mlp.onnx --input-shape=input:32x1024 \\\n"
      "    --train=\"loss=softmax-cross-entropy:labels optimizer=sgd\" \\\n"
      "    --micro-batches=16,32 -o prof/\n"
      "  dist-opt mlp.onnx --input-shape=input:32x1024 "
      "--dist-cluster=prof/cluster.yaml \\\n"
      "    --dist-profile=prof/profile.json --dist-dtype=f32 "
      "--dist-plan=dp=2,mbs=32 --dist-batch=64\n");

  if (!inputFiles.empty())
    return profileInput();
  if (model.empty())
    return fail("give the model to measure: dist-profile MODEL.onnx "
                "--input-shape=... --train=... -o DIR (or --input-files=FOLDER "
                "--preprocess=CMD -o DIR for the input pipeline)");
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (train.empty())
    return fail("give the training step to measure with --train=\"loss=... "
                "optimizer=...\" (the options of dist-compile --train)");
  if (inputShapes.empty() && inputDims.empty())
    return fail("give the model's inputs with --input-shape=NAME:D0xD1x... "
                "(D0, the sample dimension, becomes each micro-batch size) "
                "or pin their symbolic dimensions with --input-dim=NAME=N");
  if (inputShapes.empty() && microBatches.empty())
    return fail("give the micro-batch sizes to measure with "
                "--micro-batches=N,... (without --input-shape there is no D0 "
                "to take them from)");
  ONNXImportOptions pins;
  for (const std::string &spec : inputDims) {
    std::string problem;
    if (!parseInputDimSpec(spec, pins, problem))
      return fail("malformed --input-dim='" + spec + "': " + problem);
  }
  if (steps < 2)
    return fail("--steps must be at least 2 (the first step is left out)");
  if (maxMessage < 8 || maxMessage > (1u << 30))
    return fail("--max-message-bytes must be from 8 to 1073741824");
  OpRun r;
  r.copies = ranks ? (unsigned)ranks : cores;
  r.threads = threads ? (unsigned)threads : std::max(1u, cores / r.copies);
  unsigned n = r.copies;
  for (const std::string &spec : inputShapes) {
    auto [name, dims] = StringRef(spec).rsplit(':');
    auto [first, rest] = dims.split('x');
    unsigned d0;
    if (name.empty() || dims.empty() || first.getAsInteger(10, d0) || d0 == 0)
      return fail("malformed --input-shape='" + spec +
                  "': expected NAME:D0xD1x... with a positive D0");
    r.shapes.push_back({name.str(), rest.str(), d0});
  }
  std::vector<unsigned> sizes(microBatches.begin(), microBatches.end());
  if (sizes.empty())
    sizes.push_back(r.shapes.front().samples);
  if (llvm::is_contained(sizes, 0u))
    return fail("--micro-batches: sizes must be positive");
  if (!sys::fs::exists(model))
    return fail("cannot read '" + model + "': no such file");

  Expected<cluster::Cluster> base = cluster::getPreset("local", n);
  if (!base)
    return fail(toString(base.takeError()));
  r.device = base->devices.front().name;
  auto outFile = [&](StringRef name) {
    SmallString<256> p(outDir);
    sys::path::append(p, name);
    return std::string(p);
  };
  r.work = outFile("work");
  if (std::error_code ec = sys::fs::create_directories(r.work))
    return fail("cannot create '" + r.work + "': " + ec.message());

  setenv("OMP_NUM_THREADS", std::to_string(r.threads).c_str(), 1);
  std::vector<cost::ProfileDB> measured;
  for (unsigned tp : tpDegrees)
    if (tp < 2 || tp > n)
      return fail(formatv("--tp={0}: a tensor-parallel degree from 2 to the "
                          "ranks profiled ({1})",
                          tp, n));
  for (unsigned m : sizes) {
    if (Error e = measureOps(r, m, 1, measured))
      return fail(toString(std::move(e)));
    for (unsigned tp : tpDegrees)
      if (Error e = measureOps(r, m, tp, measured))
        return fail(toString(std::move(e)));
  }
  cost::ProfileDB profile = cost::ProfileDB::mean(measured);
  std::string problem =
      writeFile(outFile("profile.json"), [&](raw_ostream &os) {
        profile.write(os);
        os << "\n";
      });
  if (!problem.empty())
    return fail(problem);

  cluster::Cluster c = *base;
  // Measured, so all of it is reached: efficiency 1.
  double memoryBandwidth = measureMemoryBandwidth(r.copies, r.threads);
  c.devices.front().memoryBandwidth = memoryBandwidth;
  c.devices.front().memoryEfficiency = 1;
  LinkFit fit;
  if (n > 1) {
    Expected<LinkFit> measuredLinks =
        measureLinks(n, outFile("links.json"), outFile("work/links.log"));
    if (!measuredLinks)
      return fail(toString(measuredLinks.takeError()));
    fit = *measuredLinks;
    cluster::LinkSpec &link = c.groups.front().intraNode;
    link.name = "shared-memory";
    link.latency = fit.latency;
    link.bandwidth = fit.bandwidth;
    link.collectiveEfficiency = fit.collectiveEfficiency;
  }
  c.description = formatv("this machine as {0} rank(s) of {1} thread(s), "
                          "profiled by dist-profile ({2}); ops in "
                          "profile.json",
                          n, r.threads, base->description)
                      .str();
  if (Error e = cluster::validateCluster(c, "the profiled cluster"))
    return fail(toString(std::move(e)));
  problem = writeFile(outFile("cluster.yaml"), [&](raw_ostream &os) {
    cluster::writeClusterYAML(c, os);
  });
  if (!problem.empty())
    return fail(problem);

  std::string list;
  for (unsigned m : sizes)
    list += (list.empty() ? "" : ",") + std::to_string(m);
  std::string tps;
  for (unsigned tp : tpDegrees)
    tps += "," + std::to_string(tp);
  outs() << formatv("dist-profile: {0} op entries for device '{1}' at "
                    "micro-batch(es) {2} and tp 1{3}, {4} rank(s) x {5} "
                    "thread(s) -> {6}\n",
                    profile.size(), r.device, list, tps, n, r.threads,
                    outFile("profile.json"));
  outs() << formatv("dist-profile: memory: {0:F1} GB/s read per rank ({1} "
                    "at once) -> {2}\n",
                    memoryBandwidth / 1e9, r.copies, outFile("cluster.yaml"));
  if (std::optional<double> opt = profile.optimizerPerParameter(r.device))
    outs() << formatv("dist-profile: optimizer step {0:F3} ns per parameter\n",
                      *opt * 1e9);
  if (n > 1)
    outs() << formatv(
        "dist-profile: links: latency {0:F1} us, bandwidth "
        "{1:F2} GB/s, all-reduce efficiency {2:F2}{3} -> {4}\n",
        fit.latency * 1e6, fit.bandwidth / 1e9, fit.collectiveEfficiency,
        fit.efficiencyCapped ? " (capped at 1)" : "", outFile("cluster.yaml"));
  else
    outs() << "dist-profile: one rank, no links to measure -> "
           << outFile("cluster.yaml") << "\n";
  return 0;
}
