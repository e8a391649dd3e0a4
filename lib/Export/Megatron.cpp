//===- Megatron.cpp - Plans as Megatron-LM arguments, and back ------------===//
//
// Part of DistOpt. The export is a bash fragment in the style of
// Megatron-LM's example scripts: an array of arguments to append to
// pretrain_gpt.py's command line. The reader takes such a fragment, a whole
// launch script (variables, arrays, torchrun's --nnodes and
// --nproc-per-node) or a plain list of arguments.
//
// Flag names are Megatron-LM's (megatron/training/arguments.py at the commit
// test/fixtures/trainers/megatron-args.txt names). Stages that are not all
// alike are written as --pipeline-model-parallel-layout ("Ett|tt|ttL": E the
// embedding, t a transformer layer, L the loss, `|` between virtual stages
// in the order chunk-major, rank-minor, as DistOpt numbers them).
//
//===----------------------------------------------------------------------===//
#include "lib/Export/TrainersImpl.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <numeric>

using namespace llvm;
using namespace distopt;
using namespace distopt::exporting;
using schedule::ScheduleKind;

/// The name of the bash array the export defines.
static constexpr StringLiteral kArrayName = "DISTOPT_PARALLEL_ARGS";

static Error fail(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg.str());
}

/// "Ettt|tttt|tttL" for the block counts of the virtual stages.
static std::string layoutString(ArrayRef<unsigned> counts) {
  std::string s;
  for (auto [v, n] : llvm::enumerate(counts)) {
    if (v)
      s += "|";
    if (v == 0)
      s += "E";
    s += std::string(n, 't');
    if (v + 1 == counts.size())
      s += "L";
  }
  return s;
}

Expected<Export> exporting::exportMegatron(const schedule::Plan &plan,
                                           const cost::ModelDesc &model) {
  Export out;
  out.notes = unsupportedCommon(plan, "Megatron-LM");
  Expected<Blocks> found = pipelinedBlocks(plan, model, "Megatron-LM");
  if (!found)
    return found.takeError();
  Blocks blocks = std::move(*found);

  std::vector<std::pair<std::string, std::string>> args;
  auto add = [&](StringRef flag, std::string value = "") {
    args.push_back({flag.str(), std::move(value)});
  };
  add("--tensor-model-parallel-size", std::to_string(plan.tp));
  add("--pipeline-model-parallel-size", std::to_string(plan.pp));
  if (plan.cp > 1)
    add("--context-parallel-size", std::to_string(plan.cp));
  if (plan.ep > 1)
    add("--expert-model-parallel-size", std::to_string(plan.ep));
  add("--micro-batch-size", std::to_string(plan.mbs));
  add("--global-batch-size", std::to_string(plan.globalBatch));
  if (blocks.size())
    add("--num-layers", std::to_string(blocks.size()));
  if (plan.sp)
    add("--sequence-parallel");

  // The schedule: Megatron-LM runs 1F1B, interleaved with virtual stages.
  bool vShape = schedule::isVShape(plan.schedule);
  switch (plan.schedule) {
  case ScheduleKind::OneFOneB:
  case ScheduleKind::Interleaved:
    break;
  case ScheduleKind::GPipe:
    out.notes.push_back("Megatron-LM has no GPipe schedule; it runs 1F1B, "
                        "which has GPipe's bubble and keeps fewer "
                        "micro-batches' activations");
    break;
  default:
    out.notes.push_back(
        ("Megatron-LM has no '" + schedule::scheduleName(plan.schedule) +
         "' schedule; the arguments run synchronous " +
         (plan.chunks > 1 && !vShape ? "interleaved 1F1B" : "1F1B") +
         " on the same degrees, whose bubble and memory differ from the "
         "prediction")
            .str());
    break;
  }
  if (plan.pp > 1 && blocks.size()) {
    std::vector<unsigned> counts = blocksPerStage(plan, blocks, out.notes);
    if (vShape) {
      // Rank r holds virtual stages r and 2pp-1-r; Megatron's stages are
      // contiguous, so each rank gets as many blocks, in order.
      std::vector<unsigned> perRank(plan.pp, 0);
      for (unsigned v = 0; v < counts.size(); ++v)
        perRank[plan.rankOf(v)] += counts[v];
      counts = perRank;
      out.notes.push_back("V-shaped placement (each rank holding a first and "
                          "a last stage) has no Megatron-LM equivalent: each "
                          "rank gets the same number of layers, contiguous");
    }
    unsigned stages = counts.size();
    bool even = llvm::all_equal(counts);
    if (!even)
      add("--pipeline-model-parallel-layout",
          "\"" + layoutString(counts) + "\"");
    else if (stages > plan.pp)
      add("--num-virtual-stages-per-pipeline-rank",
          std::to_string(stages / plan.pp));
  }

  switch (plan.recompute) {
  case cost::Recompute::None:
    break;
  case cost::Recompute::Selective:
    add("--recompute-granularity", "selective");
    break;
  case cost::Recompute::Full:
    add("--recompute-granularity", "full");
    add("--recompute-method", "uniform");
    add("--recompute-num-layers", "1");
    break;
  }
  switch (plan.zero) {
  case 0:
    break;
  case 1:
    add("--use-distributed-optimizer");
    break;
  default:
    add("--use-megatron-fsdp");
    add("--data-parallel-sharding-strategy",
        plan.zero == 2 ? "optim_grads" : "optim_grads_params");
    if (plan.pp > 1)
      out.notes.push_back(
          "ZeRO-" + std::to_string(plan.zero) +
          " is Megatron-FSDP, which Megatron-LM may not run with pipeline "
          "parallelism in your version; --use-distributed-optimizer (ZeRO-1) "
          "is the sharding it runs with every pipeline");
    break;
  }
  if (plan.overlapGradSync && plan.dp * plan.cp > 1)
    add("--overlap-grad-reduce");
  if (plan.overlapParamGather && plan.zero >= 1)
    add("--overlap-param-gather");
  if (plan.tpOverlap)
    add("--tp-comm-overlap");
  if (!plan.overlapP2P && plan.pp > 1)
    add("--no-overlap-p2p-communication");
  if (!plan.scatterGather && plan.tp > 1 && plan.pp > 1)
    out.notes.push_back("the plan sends whole stage boundaries (sg=0); "
                        "Megatron-LM always splits them over the tensor "
                        "ranks");
  switch (plan.dtype) {
  case cluster::DType::BF16:
    add("--bf16");
    break;
  case cluster::DType::F16:
    add("--fp16");
    break;
  case cluster::DType::F8:
    add("--bf16");
    add("--fp8-format", "hybrid");
    break;
  default:
    break;
  }
  if (plan.fusedAttention)
    add("--attention-backend", "flash");

  std::string &s = out.text;
  s = "#!/bin/bash\n" + header(plan, model, "#");
  s += "# Megatron-LM arguments (megatron/training/arguments.py); append them "
       "to the\n# model's own arguments:\n#   source THIS_FILE\n#   torchrun "
       "... pretrain_gpt.py "
       "\"${GPT_MODEL_ARGS[@]}\" ... \"${" +
       kArrayName.str() + "[@]}\"\n";
  s += "# Megatron-LM derives the data-parallel size (" +
       std::to_string(plan.dp) + ") from the world size: launch on " +
       std::to_string(plan.numDevices()) + " GPUs.\n";
  appendNotes(s, out.notes, "#");
  s += kArrayName.str() + "=(\n";
  for (const auto &[flag, value] : args)
    s += "    " + flag + (value.empty() ? "" : " " + value) + "\n";
  s += ")\n";
  return out;
}

//===----------------------------------------------------------------------===//
// Reading Megatron-LM arguments
//===----------------------------------------------------------------------===//

namespace {
/// The words of a bash-like file after variable expansion: arrays
/// (NAME=( ... )) and scalars (NAME=value) are recorded and expanded where
/// used ($NAME, ${NAME}, ${NAME[@]}); comments, quotes and line
/// continuations are handled as bash does for these simple forms.
class Words {
public:
  explicit Words(StringRef file) : file(file) {}

  Error read(StringRef text) {
    std::vector<std::string> raw;
    if (Error e = split(text, raw))
      return e;
    for (size_t i = 0; i < raw.size(); ++i) {
      StringRef w = raw[i];
      size_t eq = w.find('=');
      bool assignment = eq != StringRef::npos && eq > 0 &&
                        !w.starts_with("-") && isName(w.take_front(eq));
      if (!assignment) {
        if (w == "(" || w == ")")
          continue;
        if (Error e = expand(w, words))
          return e;
        continue;
      }
      std::string name = w.take_front(eq).str();
      StringRef value = w.drop_front(eq + 1);
      if (value == "(") {
        std::vector<std::string> items;
        for (++i; i < raw.size() && raw[i] != ")"; ++i)
          if (Error e = expand(raw[i], items))
            return e;
        if (i == raw.size())
          return fail(file + ": the array " + name + "=( is not closed");
        arrays[name] = std::move(items);
        defined.push_back(name);
        continue;
      }
      std::vector<std::string> v;
      if (Error e = expand(value, v))
        return e;
      scalars[name] = llvm::join(v, " ");
    }
    // A fragment (such as the export) defines arrays for a command line
    // elsewhere: the arrays no command here expands are its arguments.
    for (const std::string &name : defined)
      if (!used.contains(name))
        llvm::append_range(words, arrays[name]);
    return Error::success();
  }

  std::vector<std::string> words;

private:
  static bool isName(StringRef s) {
    return !s.empty() && (isAlpha(s[0]) || s[0] == '_') &&
           llvm::all_of(s, [](char c) { return isAlnum(c) || c == '_'; });
  }

  /// Splits into words: comments dropped, quotes removed, `\`-newline
  /// joined; "NAME=(" and a lone "(" or ")" are words of their own.
  Error split(StringRef text, std::vector<std::string> &out) {
    std::string cur;
    bool inWord = false;
    auto flush = [&] {
      if (inWord)
        out.push_back(cur);
      cur.clear();
      inWord = false;
    };
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
        continue;
      }
      if (c == '#' && !inWord) {
        while (i < text.size() && text[i] != '\n')
          ++i;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';') {
        flush();
        continue;
      }
      if (c == '\'' || c == '"') {
        size_t end = text.find(c, i + 1);
        if (end == StringRef::npos)
          return fail(file + ": a " + (c == '"' ? "double" : "single") +
                      " quote is not closed");
        cur += text.slice(i + 1, end);
        inWord = true;
        i = end;
        continue;
      }
      if (c == '(' || c == ')') {
        if (c == '(' && inWord && StringRef(cur).ends_with("=")) {
          cur += c;
          flush();
          continue;
        }
        flush();
        out.push_back(std::string(1, c));
        continue;
      }
      cur += c;
      inWord = true;
    }
    flush();
    // "NAME=(" arrives as one word; the reader expects "NAME=" "(".
    std::vector<std::string> fixed;
    for (std::string &w : out) {
      if (w.size() > 2 && StringRef(w).ends_with("=(")) {
        fixed.push_back(w.substr(0, w.size() - 1) + "(");
        continue;
      }
      fixed.push_back(std::move(w));
    }
    out = std::move(fixed);
    return Error::success();
  }

  /// Expands the variables of \p w into \p out: ${NAME[@]} as the array's
  /// words, $NAME / ${NAME} as the scalar (or the array's words, joined).
  Error expand(StringRef w, std::vector<std::string> &out) {
    if (w.starts_with("${") && w.ends_with("[@]}")) {
      std::string name = w.drop_front(2).drop_back(4).str();
      auto it = arrays.find(name);
      if (it == arrays.end())
        return fail(file + ": '" + w + "' uses the array " + name +
                    ", which the file does not set");
      llvm::append_range(out, it->second);
      used.insert(name);
      return Error::success();
    }
    std::string s;
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i] != '$') {
        s += w[i];
        continue;
      }
      StringRef rest = w.drop_front(i + 1);
      StringRef name;
      if (rest.starts_with("{")) {
        size_t close = rest.find('}');
        if (close == StringRef::npos)
          return fail(file + ": '" + w + "' has no closing '}'");
        name = rest.slice(1, close);
        i += close + 1;
      } else {
        size_t len = 0;
        while (len < rest.size() && (isAlnum(rest[len]) || rest[len] == '_'))
          ++len;
        name = rest.take_front(len);
        i += len;
      }
      if (auto it = scalars.find(name); it != scalars.end())
        s += it->second;
      else if (auto a = arrays.find(name); a != arrays.end()) {
        s += llvm::join(a->second, " ");
        used.insert(name);
      } else
        s += "$" + name.str(); // unset: kept, reported where it matters
    }
    if (!s.empty())
      out.push_back(s);
    return Error::success();
  }

  std::string file;
  StringMap<std::vector<std::string>> arrays;
  StringMap<std::string> scalars;
  std::vector<std::string> defined;
  StringSet<> used;
};
} // namespace

/// Megatron-LM's (and torchrun's) flags that take no value.
static bool isSwitch(StringRef flag) {
  static const StringSet<> switches = {
      "--sequence-parallel",
      "--use-distributed-optimizer",
      "--tp-comm-overlap",
      "--overlap-grad-reduce",
      "--overlap-param-gather",
      "--bf16",
      "--fp16",
      "--use-megatron-fsdp",
      "--use-torch-fsdp2",
      "--recompute-activations",
      "--use-flash-attn",
      "--no-overlap-p2p-communication",
      "--use-mcore-models",
      "--standalone",
      "--account-for-embedding-in-pipeline-split",
      "--account-for-loss-in-pipeline-split"};
  return switches.contains(flag);
}

namespace {
/// The flags of an argument list: the last value of each (argparse keeps
/// the last), "" for a switch.
struct Flags {
  StringMap<std::string> values;
  std::string file;

  bool has(StringRef f) const { return values.count(f); }
  std::optional<std::string> get(StringRef f) const {
    auto it = values.find(f);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  }
  /// A positive integer flag (or \p def when absent).
  Expected<unsigned> number(StringRef f, unsigned def) const {
    std::optional<std::string> v = get(f);
    if (!v)
      return def;
    // As --dist-plan's degrees (parsePlan): at most a million, so that
    // products of them stay in range.
    unsigned n = 0;
    if (StringRef(*v).getAsInteger(10, n) || n == 0 || n > 1000000)
      return fail(file + ": " + f + " " + (v->empty() ? "(no value)" : *v) +
                  ": expected a positive integer up to 1000000" +
                  (StringRef(*v).starts_with("$")
                       ? " (the file does not set " + *v + ")"
                       : std::string()));
    return n;
  }
};
} // namespace

/// Block counts of the virtual stages of a layout ("Ett|(tt|)*2,ttL").
static Expected<std::vector<unsigned>> parseLayout(StringRef layout,
                                                   StringRef file) {
  // Unroll (x)*n and c*n as Megatron-LM does, then split the stages.
  std::string s = layout.str();
  for (;;) {
    size_t star = s.find('*');
    if (star == std::string::npos)
      break;
    size_t end = star + 1;
    while (end < s.size() && isDigit(s[end]))
      ++end;
    unsigned n = 0;
    if (end == star + 1 ||
        StringRef(s).slice(star + 1, end).getAsInteger(10, n))
      return fail(file + ": --pipeline-model-parallel-layout '" + layout +
                  "': '*' needs a count");
    std::string unit;
    size_t begin;
    if (star > 0 && s[star - 1] == ')') {
      size_t open = s.rfind('(', star - 1);
      if (open == std::string::npos)
        return fail(file + ": --pipeline-model-parallel-layout '" + layout +
                    "': ')' without '('");
      unit = s.substr(open + 1, star - 2 - open);
      begin = open;
    } else if (star > 0) {
      unit = s.substr(star - 1, 1);
      begin = star - 1;
    } else {
      return fail(file + ": --pipeline-model-parallel-layout '" + layout +
                  "' starts with '*'");
    }
    // A layout names each layer once: longer than a million layers is
    // no model.
    if (uint64_t(unit.size()) * n + s.size() > (1u << 20))
      return fail(file + ": --pipeline-model-parallel-layout '" +
                  layout.take_front(80) + "' unrolls to over a million layers");
    std::string repeated;
    for (unsigned i = 0; i < n; ++i)
      repeated += unit;
    s = s.substr(0, begin) + repeated + s.substr(end);
  }
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  std::vector<unsigned> counts;
  SmallVector<StringRef> stages;
  StringRef(s).split(stages, '|');
  for (StringRef st : stages) {
    unsigned n = 0;
    for (char c : st) {
      if (c == 't')
        ++n;
      else if (c != 'E' && c != 'L' && c != ' ')
        return fail(file + ": --pipeline-model-parallel-layout '" + layout +
                    "': '" + std::string(1, c) +
                    "' is no layer DistOpt plans (E embedding, t "
                    "transformer layer, L loss)");
    }
    counts.push_back(n);
  }
  return counts;
}

Expected<ImportedPlan> exporting::importMegatron(StringRef text, StringRef file,
                                                 const cost::ModelDesc &model,
                                                 unsigned devices) {
  Words words(file);
  if (Error e = words.read(text))
    return std::move(e);
  Flags flags;
  flags.file = file.str();
  const std::vector<std::string> &w = words.words;
  for (size_t i = 0; i < w.size(); ++i) {
    StringRef word = w[i];
    if (!word.starts_with("--"))
      continue;
    auto [flag, inlineValue] = word.split('=');
    std::string value;
    if (word.contains('='))
      value = inlineValue.str();
    else if (!isSwitch(flag) && i + 1 < w.size() &&
             !StringRef(w[i + 1]).starts_with("--"))
      value = w[++i];
    // torchrun spells its options with '_' or '-'.
    std::string key = flag.str();
    std::replace(key.begin(), key.end(), '_', '-');
    flags.values[key] = value;
  }
  if (!flags.has("--tensor-model-parallel-size") &&
      !flags.has("--pipeline-model-parallel-size") &&
      !flags.has("--micro-batch-size") && !flags.has("--global-batch-size"))
    return fail(file + " has no Megatron-LM parallel or batch arguments "
                       "(--tensor-model-parallel-size, "
                       "--pipeline-model-parallel-size, --micro-batch-size, "
                       "--global-batch-size): is it the arguments of a "
                       "pretrain_gpt.py run?");

  ImportedPlan out;
  schedule::Plan &p = out.plan;
  auto number = [&](StringRef f, unsigned def, unsigned &into) -> Error {
    Expected<unsigned> n = flags.number(f, def);
    if (!n)
      return n.takeError();
    into = *n;
    return Error::success();
  };
  unsigned nodes = 1, perNode = 0;
  uint64_t world = 0;
  for (auto [f, into, def] : {std::tuple<StringRef, unsigned *, unsigned>{
                                  "--tensor-model-parallel-size", &p.tp, 1},
                              {"--pipeline-model-parallel-size", &p.pp, 1},
                              {"--context-parallel-size", &p.cp, 1},
                              {"--expert-model-parallel-size", &p.ep, 1},
                              {"--micro-batch-size", &p.mbs, 1},
                              {"--global-batch-size", &out.globalBatch, 0},
                              {"--nnodes", &nodes, 1},
                              {"--nproc-per-node", &perNode, 0}})
    if (Error e = number(f, def, *into))
      return std::move(e);
  if (perNode)
    world = uint64_t(nodes) * perNode;

  Blocks blocks = Blocks::of(model);
  if (flags.has("--num-layers")) {
    unsigned n = 0;
    if (Error e = number("--num-layers", 1, n))
      return std::move(e);
    if (blocks.size() && n != blocks.size())
      return fail(file + ": --num-layers " + Twine(n) + ", but the model has " +
                  Twine(blocks.size()) +
                  " transformer layers: is it the model this configuration "
                  "trains?");
  }

  // Devices: torchrun's world size when the file gives it, else the
  // cluster's; the data-parallel degree is what the others leave.
  if (world > devices)
    return fail(file + ": torchrun starts " + Twine(world) +
                " processes (--nnodes " + Twine(nodes) +
                " x --nproc-per-node " + Twine(perNode) +
                "), and the cluster has " + Twine(devices) +
                " devices: pass a --dist-cluster with enough of them");
  unsigned used = world ? unsigned(world) : devices;
  uint64_t group = uint64_t(p.tp) * p.pp * p.cp;
  if (used % group)
    return fail(file + ": tensor x pipeline x context parallel sizes (" +
                Twine(p.tp) + " x " + Twine(p.pp) + " x " + Twine(p.cp) +
                ") do not divide the " + Twine(used) + " devices" +
                (world ? " torchrun starts" : " of the cluster") +
                "; Megatron-LM needs them to");
  p.dp = used / group;

  // Virtual stages and the layout.
  unsigned vpp = 1;
  std::vector<unsigned> counts;
  if (std::optional<std::string> layout =
          flags.get("--pipeline-model-parallel-layout")) {
    Expected<std::vector<unsigned>> c = parseLayout(*layout, file);
    if (!c)
      return c.takeError();
    counts = std::move(*c);
    if (counts.size() % p.pp)
      return fail(file + ": --pipeline-model-parallel-layout has " +
                  Twine(counts.size()) +
                  " stages, not a multiple of "
                  "--pipeline-model-parallel-size " +
                  Twine(p.pp));
    vpp = counts.size() / p.pp;
  } else if (flags.has("--num-virtual-stages-per-pipeline-rank")) {
    if (Error e = number("--num-virtual-stages-per-pipeline-rank", 1, vpp))
      return std::move(e);
  } else if (flags.has("--num-layers-per-virtual-pipeline-stage")) {
    unsigned per = 0;
    if (Error e = number("--num-layers-per-virtual-pipeline-stage", 1, per))
      return std::move(e);
    unsigned n = blocks.size();
    if (!n || n % (per * p.pp))
      return fail(file + ": --num-layers-per-virtual-pipeline-stage " +
                  Twine(per) + " does not divide the model's " + Twine(n) +
                  " transformer layers over " + Twine(p.pp) + " stages");
    vpp = n / (per * p.pp);
  }
  if (flags.has("--decoder-first-pipeline-num-layers") ||
      flags.has("--decoder-last-pipeline-num-layers")) {
    if (!counts.empty())
      return fail(file + ": give --pipeline-model-parallel-layout or "
                         "--decoder-first/last-pipeline-num-layers, not both");
    unsigned stages = p.pp * vpp, n = blocks.size(), firstN = 0, lastN = 0;
    bool hasFirst = flags.has("--decoder-first-pipeline-num-layers");
    bool hasLast = flags.has("--decoder-last-pipeline-num-layers");
    if (hasFirst)
      if (Error e = number("--decoder-first-pipeline-num-layers", 1, firstN))
        return std::move(e);
    if (hasLast)
      if (Error e = number("--decoder-last-pipeline-num-layers", 1, lastN))
        return std::move(e);
    // The uneven counts are per pipeline rank, split evenly over its
    // virtual stages; the middle ranks share the rest.
    unsigned middleRanks = p.pp - (hasFirst ? 1 : 0) - (hasLast ? 1 : 0);
    unsigned rest = n - (hasFirst ? firstN : 0) - (hasLast ? lastN : 0);
    if (firstN + lastN > n || (middleRanks && rest % middleRanks) ||
        (!middleRanks && rest) || (hasFirst && firstN % vpp) ||
        (hasLast && lastN % vpp) || (middleRanks && (rest / middleRanks) % vpp))
      return fail(file +
                  ": --decoder-first/last-pipeline-num-layers do not "
                  "split the model's " +
                  Twine(n) + " transformer layers evenly over the other " +
                  Twine(middleRanks) + " pipeline ranks and " + Twine(vpp) +
                  " virtual stages each");
    counts.assign(stages, 0);
    for (unsigned v = 0; v < stages; ++v) {
      unsigned rank = v % p.pp;
      unsigned perRank = hasFirst && rank == 0 ? firstN
                         : hasLast && rank == p.pp - 1
                             ? lastN
                             : rest / std::max(1u, middleRanks);
      counts[v] = perRank / vpp;
    }
  }
  p.chunks = vpp;
  if (p.pp > 1)
    p.setSchedule(vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB);
  if (!counts.empty()) {
    unsigned total = std::accumulate(counts.begin(), counts.end(), 0u);
    if (total != blocks.size())
      return fail(file + ": the pipeline layout places " + Twine(total) +
                  " transformer layers, and the model has " +
                  Twine(blocks.size()));
    unsigned b = 0;
    for (unsigned v = 0; v + 1 < counts.size(); ++v) {
      b += counts[v];
      p.cuts.push_back(blocks.layerOfBlock(b));
    }
  } else if (p.pp * vpp > 1 && blocks.size() &&
             blocks.size() % (p.pp * vpp) == 0) {
    // Megatron-LM splits the layers evenly; so do the cuts.
    unsigned per = blocks.size() / (p.pp * vpp);
    for (unsigned v = 1; v < p.pp * vpp; ++v)
      p.cuts.push_back(blocks.layerOfBlock(v * per));
  }

  // Recomputation.
  std::optional<std::string> granularity = flags.get("--recompute-granularity");
  if (flags.has("--recompute-activations"))
    granularity = "selective";
  if (granularity == "full") {
    p.recompute = cost::Recompute::Full;
    std::string method = flags.get("--recompute-method").value_or("");
    unsigned layers = 1;
    if (Error e = number("--recompute-num-layers", 1, layers))
      return std::move(e);
    if (method == "block")
      out.notes.push_back(
          "--recompute-method block recomputes " + std::to_string(layers) +
          " layers of each stage; DistOpt models every layer recomputed "
          "(recompute=full), an upper bound on the compute");
    else if (layers > 1)
      out.notes.push_back("--recompute-num-layers " + std::to_string(layers) +
                          " checkpoints groups of layers; DistOpt models each "
                          "layer checkpointed (recompute=full)");
  } else if (granularity == "selective") {
    p.recompute = cost::Recompute::Selective;
  } else if (granularity) {
    return fail(file + ": --recompute-granularity '" + *granularity +
                "': expected full or selective");
  }

  // Sharding.
  if (flags.has("--use-distributed-optimizer"))
    p.zero = 1;
  if (flags.has("--use-megatron-fsdp") || flags.has("--use-torch-fsdp2")) {
    std::string strategy = flags.get("--data-parallel-sharding-strategy")
                               .value_or("optim_grads_params");
    std::optional<unsigned> zero =
        StringSwitch<std::optional<unsigned>>(strategy)
            .Case("no_shard", 0u)
            .Case("optim", 1u)
            .Case("optim_grads", 2u)
            .Case("optim_grads_params", 3u)
            .Default(std::nullopt);
    if (!zero)
      return fail(file + ": --data-parallel-sharding-strategy '" + strategy +
                  "': expected no_shard, optim, optim_grads or "
                  "optim_grads_params");
    p.zero = flags.has("--use-torch-fsdp2") ? 3 : *zero;
  }

  p.sp = flags.has("--sequence-parallel") && p.tp > 1;
  p.tpOverlap = flags.has("--tp-comm-overlap");
  // Megatron-LM overlaps neither the gradient reduction nor the parameter
  // gather unless asked.
  p.overlapGradSync = flags.has("--overlap-grad-reduce");
  p.overlapParamGather = flags.has("--overlap-param-gather") && p.zero >= 1;
  p.overlapP2P = !flags.has("--no-overlap-p2p-communication");
  if (flags.has("--fp8-format"))
    p.dtype = cluster::DType::F8;
  else if (flags.has("--bf16"))
    p.dtype = cluster::DType::BF16;
  else if (flags.has("--fp16"))
    p.dtype = cluster::DType::F16;
  else
    p.dtype = cluster::DType::F32;
  std::string backend = flags.get("--attention-backend").value_or("");
  p.fusedAttention = flags.has("--use-flash-attn") || backend == "flash" ||
                     backend == "fused" || backend == "auto";

  // Parallel-looking flags this reader does not know would change the plan
  // unseen: name them.
  for (const auto &entry : flags.values) {
    StringRef f = entry.getKey();
    static const StringSet<> known = {"--tensor-model-parallel-size",
                                      "--pipeline-model-parallel-size",
                                      "--context-parallel-size",
                                      "--expert-model-parallel-size",
                                      "--micro-batch-size",
                                      "--global-batch-size",
                                      "--pipeline-model-parallel-layout",
                                      "--num-virtual-stages-per-pipeline-rank",
                                      "--num-layers-per-virtual-pipeline-stage",
                                      "--decoder-first-pipeline-num-layers",
                                      "--decoder-last-pipeline-num-layers",
                                      "--recompute-granularity",
                                      "--recompute-method",
                                      "--recompute-num-layers",
                                      "--recompute-activations",
                                      "--use-distributed-optimizer",
                                      "--use-megatron-fsdp",
                                      "--use-torch-fsdp2",
                                      "--data-parallel-sharding-strategy",
                                      "--sequence-parallel",
                                      "--overlap-grad-reduce",
                                      "--overlap-param-gather",
                                      "--tp-comm-overlap",
                                      "--no-overlap-p2p-communication",
                                      "--nproc-per-node",
                                      "--nnodes"};
    if (known.contains(f))
      continue;
    if (f.contains("parallel") || f.contains("pipeline") ||
        f.contains("recompute") || f.contains("batch-size"))
      out.notes.push_back(f.str() + " is not part of the plan DistOpt reads; "
                                    "the prediction leaves it out");
  }
  return out;
}
