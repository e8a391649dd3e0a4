//===- FuzzMain.cpp - dist-fuzz: regression corpus and mutation runs ------===//
//
// Part of DistOpt. A structured mutation fuzzer over the targets of
// FuzzTargets.h, built into the normal build (no coverage instrumentation
// needed), and the runner of the regression corpus:
//
//   dist-fuzz TARGET [--regress DIR]... [--seeds DIR]... [--seconds S]
//             [--runs N] [--seed N] [--crash-dir DIR] [--timeout S]
//             [--max-memory MIB] [--junit FILE] [--save-from N]
//
// --regress runs every input of the folders once (every input that ever
// crashed lives there, test/fuzz/regress/). --seconds/--runs then mutates
// inputs taken from the seeds, the regression corpus, the target's built-in
// seeds and the inputs accepted so far: structured mutations (the parsed
// ONNX model, numbers and lines of text) and byte mutations (flips,
// interesting bytes, insertions, erasures, splices, truncation). A crash
// (any fatal signal, an abort from an LLVM fatal error or a sanitizer
// report) or an input running past --timeout (default 20 s) saves the
// input under --crash-dir, prints it (and, for a mutated input, the seed
// and number that rerun to it) and exits 1; otherwise it prints the counts
// and exits 0. --max-memory caps the address space (default 6144 MiB):
// an allocation past it is a crash, so runaway sizes show up.
// .mlir inputs are split at `// -----` lines, as --split-input-file does.
// --save-from N writes every mutated input from the Nth on to --crash-dir
// (input-K.SUFFIX): a corrupted heap may abort only in a later input, so a
// rerun to the crash with --save-from a little before it leaves the inputs
// to run one by one under valgrind or a sanitizer build.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace distopt::fuzz;

unsigned long long distopt::fuzz::maxMemoryMiB = 6144;
unsigned long long distopt::fuzz::programsGenerated = 0;

extern "C" void __sanitizer_set_death_callback(void (*)(void))
    __attribute__((weak));

namespace {

/// What the signal handlers need: the input being run and where to save it.
struct CrashState {
  const std::string *input = nullptr;
  const char *target = "";
  const char *suffix = "";
  char path[4096] = "";
  /// The mutation run's seed and the running input's number in it (0: a
  /// regression input), so `--seed S --runs N` reruns up to the crash.
  unsigned long long seed = 0;
  long long number = 0;
};
CrashState crash;

/// write(2) of a string (async-signal-safe).
void say(const char *s, size_t n) {
  while (n > 0) {
    ssize_t k = write(2, s, n);
    if (k <= 0)
      return;
    s += k;
    n -= size_t(k);
  }
}
void say(const char *s) { say(s, strlen(s)); }
void sayNumber(unsigned long long v) {
  char digits[24];
  int n = 0;
  do
    digits[sizeof digits - 1 - n++] = char('0' + v % 10);
  while ((v /= 10) && n < int(sizeof digits));
  say(digits + sizeof digits - n, size_t(n));
}

/// Prints the input into the log too (async-signal-safe), where a CI run
/// keeps it when its crash folder is lost: as text when every byte is
/// printable, else as hex; at most 16 KiB.
void printInput(const std::string &input) {
  constexpr size_t kMax = 16 << 10;
  if (input.size() > kMax) {
    say("dist-fuzz: (the input is over 16 KiB: not printed)\n");
    return;
  }
  bool text = true;
  for (char c : input)
    text &= c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f);
  say("dist-fuzz: the input (");
  sayNumber(input.size());
  say(text ? " bytes of text) follows, up to the line "
             "'dist-fuzz: end of input':\n"
           : " bytes, as hex) follows, up to the line "
             "'dist-fuzz: end of input':\n");
  if (text) {
    say(input.data(), input.size());
  } else {
    static const char hex[] = "0123456789abcdef";
    char line[80];
    for (size_t i = 0; i < input.size(); i += 32) {
      size_t n = 0;
      for (size_t j = i; j < input.size() && j < i + 32; ++j) {
        line[n++] = hex[(unsigned char)input[j] >> 4];
        line[n++] = hex[(unsigned char)input[j] & 15];
      }
      line[n++] = '\n';
      say(line, n);
    }
  }
  if (text && !input.empty() && input.back() != '\n')
    say("\n");
  say("dist-fuzz: end of input\n");
}

/// " mutated input N of seed S (rerun with ...)", for the current input.
void sayRerun() {
  say(" mutated input ");
  sayNumber((unsigned long long)crash.number);
  say(" of seed ");
  sayNumber(crash.seed);
  say(" (rerun with the same --seeds/--regress and --seed ");
  sayNumber(crash.seed);
  say(" --runs ");
  sayNumber((unsigned long long)crash.number);
  say(")\n");
}

/// Saves the current input (async-signal-safe: open/write/close only).
void saveInput(const char *kind) {
  if (!crash.input || !crash.path[0])
    return;
  char file[4200];
  snprintf(file, sizeof file, "%s/%s-%s-%d%s", crash.path, kind, crash.target,
           int(getpid()), crash.suffix);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    const char *p = crash.input->data();
    size_t left = crash.input->size();
    while (left > 0) {
      ssize_t n = write(fd, p, left);
      if (n <= 0)
        break;
      p += n;
      left -= size_t(n);
    }
    close(fd);
  }
  say("dist-fuzz: the input is saved as ");
  say(file);
  say("\n");
  if (crash.number > 0) {
    say("dist-fuzz: it is");
    sayRerun();
  }
  printInput(*crash.input);
}

extern "C" void onFatalSignal(int sig) {
  say("dist-fuzz: CRASH (fatal signal) on an input\n");
  if (!crash.input && crash.number > 0) {
    // Between inputs: a heap corruption an earlier input left behind,
    // caught by a later allocation. The seed and the last input's number
    // still rerun to it (then --save-from and valgrind name the input).
    say("dist-fuzz: no input was running; the last was");
    sayRerun();
    say("dist-fuzz: rerun with --save-from a little before it, then run "
        "valgrind over the saved inputs\n");
  }
  saveInput("crash");
  signal(sig, SIG_DFL);
  raise(sig);
}

extern "C" void onTimeout(int) {
  say("dist-fuzz: HANG (an input ran past --timeout)\n");
  saveInput("hang");
  _exit(70);
}

extern "C" void onSanitizerDeath() {
  say("dist-fuzz: CRASH (sanitizer report) on an input\n");
  saveInput("crash");
}

void installHandlers() {
  for (int sig : {SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL, SIGTRAP})
    signal(sig, onFatalSignal);
  signal(SIGALRM, onTimeout);
  if (__sanitizer_set_death_callback)
    __sanitizer_set_death_callback(onSanitizerDeath);
#if !defined(__SANITIZE_ADDRESS__) && !defined(DIST_FUZZ_NO_RLIMIT)
  // Runaway allocation (a /dev/zero read) is a defect: make it fail fast.
  // ASan reserves its shadow memory up front, so it has no such limit.
  rlim_t bytes = rlim_t(maxMemoryMiB) << 20;
  struct rlimit limit = {bytes, bytes};
  setrlimit(RLIMIT_AS, &limit);
#endif
}

/// Inputs of `dir` (recursively) whose name ends in `suffix`; .mlir files
/// are split at "// -----" lines.
void loadInputs(llvm::StringRef dir, llvm::StringRef suffix,
                std::vector<std::string> &out) {
  std::error_code ec;
  std::vector<std::string> files;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::StringRef(it->path()).ends_with(suffix))
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const std::string &f : files) {
    auto buf = llvm::MemoryBuffer::getFile(f, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      continue;
    llvm::StringRef text = (*buf)->getBuffer();
    if (suffix != ".mlir") {
      out.push_back(text.str());
      continue;
    }
    llvm::SmallVector<llvm::StringRef> chunks;
    text.split(chunks, "// -----");
    for (llvm::StringRef c : chunks)
      out.push_back(c.str());
  }
}

/// One byte-level mutation.
void mutateBytes(std::string &s, const std::vector<std::string> &pool,
                 Rng &rng) {
  auto any = [&](size_t n) {
    return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
  };
  static const unsigned char bytes[] = {0x00, 0xff, 0x7f, 0x80, 0x01,
                                        0xfe, '-',  '9',  '\n', ':'};
  switch (rng() % 7) {
  case 0:
    if (!s.empty())
      s[any(s.size())] ^= char(1u << (rng() % 8));
    break;
  case 1:
    if (!s.empty())
      s[any(s.size())] = char(bytes[any(sizeof bytes)]);
    break;
  case 2:
    s.insert(any(s.size() + 1), std::string(1 + rng() % 8, char(rng())));
    break;
  case 3:
    if (!s.empty()) {
      size_t at = any(s.size());
      s.erase(at, 1 + any(std::min<size_t>(16, s.size() - at)));
    }
    break;
  case 4:
    if (!s.empty()) {
      size_t at = any(s.size()),
             len = 1 + any(std::min<size_t>(64, s.size() - at));
      s.insert(any(s.size() + 1), s.substr(at, len));
    }
    break;
  case 5: {
    const std::string &other = pool[any(pool.size())];
    if (!other.empty() && !s.empty())
      s = s.substr(0, any(s.size())) + other.substr(any(other.size()));
    break;
  }
  default:
    s.resize(any(s.size() + 1));
  }
}

int usage() {
  fprintf(stderr, "usage: dist-fuzz TARGET [--regress DIR]... [--seeds DIR]... "
                  "[--seconds S] [--runs N] [--seed N] [--crash-dir DIR] "
                  "[--timeout S] [--max-memory MIB] [--junit FILE] "
                  "[--save-from N]\n"
                  "targets:");
  for (const Target &t : targets())
    fprintf(stderr, " %s", t.name);
  fprintf(stderr, "\n");
  return 2;
}

/// Appends a JUnit <testcase> for scripts/summarize_tests.py.
std::string testcase(const std::string &name, const std::string &failure,
                     double seconds) {
  std::string x = "  <testcase classname=\"fuzz\" name=\"" + name +
                  "\" time=\"" + std::to_string(seconds) + "\">";
  if (!failure.empty())
    x += "<failure message=\"" + failure + "\"/>";
  return x + "</testcase>\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  const Target *target = nullptr;
  for (const Target &t : targets())
    if (llvm::StringRef(argv[1]) == t.name)
      target = &t;
  if (!target)
    return usage();
  std::vector<std::string> regressDirs, seedDirs;
  double seconds = 0, timeout = 20;
  long long runs = 0, saveFrom = 0;
  unsigned long long seed =
      std::chrono::steady_clock::now().time_since_epoch().count();
  std::string crashDir = ".", junit;
  for (int i = 2; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (i + 1 >= argc)
      return usage();
    llvm::StringRef v = argv[++i];
    if (a == "--regress")
      regressDirs.push_back(v.str());
    else if (a == "--seeds")
      seedDirs.push_back(v.str());
    else if (a == "--seconds" && !v.getAsDouble(seconds))
      ;
    else if (a == "--timeout" && !v.getAsDouble(timeout))
      ;
    else if (a == "--runs" && !v.getAsInteger(10, runs))
      ;
    else if (a == "--save-from" && !v.getAsInteger(10, saveFrom) &&
             saveFrom > 0)
      ;
    else if (a == "--seed" && !v.getAsInteger(10, seed))
      ;
    else if (a == "--max-memory" && !v.getAsInteger(10, maxMemoryMiB) &&
             maxMemoryMiB >= 256)
      ;
    else if (a == "--crash-dir")
      crashDir = v.str();
    else if (a == "--junit")
      junit = v.str();
    else
      return usage();
  }
  crash.target = target->name;
  crash.suffix = target->suffix;
  llvm::sys::fs::create_directories(crashDir);
  snprintf(crash.path, sizeof crash.path, "%s", crashDir.c_str());
  installHandlers();

  std::string cases;
  // The programs printed so far, for the targets that print them.
  auto generatedNote = [&]() -> std::string {
    if (target->run != runONNX && target->run != runMLIR)
      return "";
    return "; " + std::to_string(programsGenerated) + " programs generated";
  };
  auto runOne = [&](const std::string &input) {
    crash.input = &input;
    alarm(unsigned(std::max(1.0, timeout)));
    Outcome o = target->run(input);
    alarm(0);
    crash.input = nullptr;
    return o;
  };

  std::vector<std::string> regress;
  for (const std::string &d : regressDirs)
    loadInputs(d, target->suffix, regress);
  auto t0 = std::chrono::steady_clock::now();
  unsigned accepted = 0;
  for (const std::string &input : regress)
    accepted += runOne(input) == Outcome::Accepted;
  double regressSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!regressDirs.empty()) {
    printf("dist-fuzz %s: regression corpus: %zu inputs (%u accepted, %zu "
           "refused with an error), no crash, no hang%s\n",
           target->name, regress.size(), accepted, regress.size() - accepted,
           generatedNote().c_str());
    cases += testcase(std::string(target->name) + ".regress",
                      regress.empty() ? "empty regression corpus" : "",
                      regressSeconds);
  }

  if (seconds > 0 || runs > 0) {
    std::vector<std::string> pool = regress;
    for (const std::string &d : seedDirs)
      loadInputs(d, target->suffix, pool);
    for (std::string &s : target->builtinSeeds())
      pool.push_back(std::move(s));
    if (pool.empty()) {
      fprintf(stderr, "dist-fuzz %s: no seeds (give --seeds DIR)\n",
              target->name);
      return 1;
    }
    size_t seeds = pool.size();
    Rng rng(seed);
    crash.seed = seed;
    // First, so that even a crash the handler cannot report leaves it.
    fprintf(stderr, "dist-fuzz %s: mutating with seed %llu\n", target->name,
            seed);
    auto start = std::chrono::steady_clock::now();
    long long n = 0, ok = 0;
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
          .count();
    };
    while ((runs > 0 && n < runs) || (runs == 0 && elapsed() < seconds)) {
      std::string input = pool[rng() % pool.size()];
      for (unsigned k = 0, m = 1 + rng() % 4; k < m; ++k) {
        if (rng() % 5 < 3)
          target->mutate(input, rng);
        else
          mutateBytes(input, pool, rng);
      }
      if (input.size() > (1u << 20))
        input.resize(1u << 20);
      crash.number = ++n;
      if (saveFrom > 0 && n >= saveFrom) {
        // A defect seen late (a corrupted heap aborts in a later input's
        // malloc): every input from here on, to run one by one.
        std::string file =
            crashDir + "/input-" + std::to_string(n) + target->suffix;
        if (FILE *f = fopen(file.c_str(), "wb")) {
          fwrite(input.data(), 1, input.size(), f);
          fclose(f);
        }
      }
      if (runOne(input) == Outcome::Accepted) {
        ++ok;
        // Accepted inputs seed deeper mutations (bounded pool).
        if (pool.size() < seeds + 2000)
          pool.push_back(std::move(input));
        else
          pool[seeds + rng() % 2000] = std::move(input);
      }
    }
    double s = elapsed();
    printf("dist-fuzz %s: %lld mutated inputs in %.1f s (%.0f/s, seed %llu, "
           "%zu seeds; %lld accepted, %lld refused with an error), no crash, "
           "no hang%s\n",
           target->name, n, s, n / std::max(s, 1e-9), seed, seeds, ok, n - ok,
           generatedNote().c_str());
    cases += testcase(std::string(target->name) + ".mutate", "", s);
  }
  if (!junit.empty()) {
    FILE *f = fopen(junit.c_str(), "w");
    if (!f) {
      fprintf(stderr, "dist-fuzz: cannot write '%s'\n", junit.c_str());
      return 1;
    }
    fprintf(f,
            "<?xml version=\"1.0\"?>\n<testsuite name=\"fuzz.%s\">\n%s"
            "</testsuite>\n",
            target->name, cases.c_str());
    fclose(f);
  }
  return 0;
}
