//===- Constraints.cpp - Parse --dist-search constraints --------*- C++ -*-===//
//
// Part of DistOpt. "tp<=8,schedule=1f1b|interleaved,recompute=any" limits
// the space the plan search explores.
//
//===----------------------------------------------------------------------===//

#include "lib/Search/Search.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace distopt;
using namespace distopt::search;

bool IntRange::allows(unsigned v) const {
  if (v < min || v > max)
    return false;
  return only.empty() || llvm::is_contained(only, v);
}

bool IntRange::empty() const {
  if (min > max)
    return true;
  if (only.empty())
    return false;
  return llvm::none_of(only, [&](unsigned v) { return v >= min && v <= max; });
}

static Error constraintError(StringRef spec, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(),
                           ("--dist-search='" + spec + "': " + msg).str());
}

/// Splits "key<=value" into key, operator and value.
static bool splitItem(StringRef item, StringRef &key, StringRef &op,
                      StringRef &value) {
  size_t pos = item.find_first_of("<>=");
  if (pos == StringRef::npos || pos == 0)
    return false;
  key = item.take_front(pos).trim();
  StringRef rest = item.drop_front(pos);
  op = rest.starts_with("<=") || rest.starts_with(">=") ? rest.take_front(2)
                                                         : rest.take_front(1);
  value = rest.drop_front(op.size()).trim();
  return !value.empty();
}

/// Adds "pin=FIRST-LAST@KIND" (or "pin=LAYER@KIND") to \p c. Whether the
/// layers and the kind exist is checked against the model and the cluster
/// when the search starts (PinCheck::resolve).
static Error applyPin(StringRef spec, StringRef item, StringRef op,
                      StringRef value, Constraints &c) {
  auto bad = [&](const Twine &why) {
    return constraintError(spec, "'" + item + "': " + why +
                                     "; write pin=FIRST-LAST@KIND (layers "
                                     "counted from 0, both inclusive, e.g. "
                                     "pin=0-3@cortex-a72x4; KIND a device "
                                     "kind of the cluster, see "
                                     "--print-cluster)");
  };
  if (op != "=")
    return bad("pin takes '='");
  auto [range, kind] = value.split('@');
  range = range.trim();
  kind = kind.trim();
  if (!value.contains('@') || kind.empty())
    return bad("no device kind after '@'");
  auto [from, to] = range.split('-');
  if (!range.contains('-'))
    to = from;
  Pin pin;
  if (from.trim().getAsInteger(10, pin.first) ||
      to.trim().getAsInteger(10, pin.last))
    return bad("'" + range + "' is not a layer or a range of layers");
  if (pin.first > pin.last)
    return bad(
        formatv("the range {0}-{1} runs backwards", pin.first, pin.last).str());
  pin.kind = kind.str();
  c.pins.push_back(std::move(pin));
  return Error::success();
}

/// Sets \p field by the 0/1 switch "KEY=1" (\p on: what 1 keeps) or
/// "KEY=0".
static Error applySwitch(StringRef spec, StringRef item, StringRef key,
                         StringRef op, StringRef value, StringRef on,
                         bool &field) {
  if (op != "=" || (value != "0" && value != "1"))
    return constraintError(spec, "'" + item + "': use " + key + "=1 (" + on +
                                     ") or " + key + "=0");
  field = value == "1";
  return Error::success();
}

/// Narrows \p c by one item of \p spec ("tp<=8"); \p key is set to the
/// item's key in lower case.
static Error applyItem(StringRef spec, StringRef item, Constraints &c,
                       std::string &key) {
  StringRef name, op, value;
  if (!splitItem(item, name, op, value))
    return constraintError(spec, "'" + item +
                                     "' is not KEY=VALUE, KEY<=N or "
                                     "KEY>=N; e.g. tp<=8,schedule=1f1b");
  key = name.lower();
  const std::string &k = key;
  if (k == "pin")
    return applyPin(spec, item, op, value, c);
  if (k == "replicas") {
    if (op != "=" || (value != "uniform" && value != "any"))
      return constraintError(spec, "'" + item +
                                       "': use replicas=uniform (every "
                                       "stage gets the same data-parallel "
                                       "degree) or replicas=any");
    c.uniformReplicas = value == "uniform";
    return Error::success();
  }
  if (k == "cp-alone")
    return applySwitch(spec, item, k, op, value, "cp > 1 only with tp = 1",
                       c.cpAlone);
  if (k == "ep-alone")
    return applySwitch(spec, item, k, op, value,
                       "ep > 1 only with tp = 1 and cp = 1", c.epAlone);
  if (k == "ep-runs")
    return applySwitch(spec, item, k, op, value,
                       "ep > 1 only under synchronous schedules", c.epRuns);
  if (k == "cp-sp") {
    if (op != "=" || (value != "0" && value != "1"))
      return constraintError(spec, "'" + item +
                                       "': use cp-sp=0 (cp > 1 only "
                                       "with sp = 0) or cp-sp=1");
    c.cpNoSp = value == "0";
    return Error::success();
  }
  if (k == "offload") {
    if (op != "=")
      return constraintError(spec, "'" + item +
                                       "': offload takes '=' with values "
                                       "joined by '|' (e.g. "
                                       "offload=none|opt|opt+params)");
    if (value == "any") {
      c.offload.assign(cost::allOffloads().begin(), cost::allOffloads().end());
      return Error::success();
    }
    SmallVector<StringRef> vals;
    value.split(vals, '|');
    for (StringRef v : vals) {
      Expected<cost::Offload> o = cost::parseOffload(v.trim());
      if (!o)
        return constraintError(spec, toString(o.takeError()) + " (or any)");
      if (!llvm::is_contained(c.offload, *o))
        c.offload.push_back(*o);
    }
    return Error::success();
  }
  if (k == "schedule" || k == "recompute") {
    if (op != "=")
      return constraintError(spec, "'" + item + "': " + k +
                                       " takes '=' with values joined "
                                       "by '|'");
    if (value == "any")
      return Error::success();
    SmallVector<StringRef> vals;
    value.split(vals, '|');
    for (StringRef v : vals) {
      v = v.trim();
      if (k == "schedule") {
        schedule::ScheduleKind kind;
        if (!schedule::parseScheduleKind(v, kind))
          return constraintError(spec, "unknown schedule '" + v +
                                           "'; use " +
                                           schedule::scheduleNameList() +
                                           " (or any)");
        c.schedules.push_back(kind);
      } else if (v == "none") {
        c.recompute.push_back(cost::Recompute::None);
      } else if (v == "selective") {
        c.recompute.push_back(cost::Recompute::Selective);
      } else if (v == "full") {
        c.recompute.push_back(cost::Recompute::Full);
      } else {
        return constraintError(spec, "unknown recompute '" + v +
                                         "'; use none, selective, full or "
                                         "any");
      }
    }
    return Error::success();
  }
  IntRange *r = k == "dp"       ? &c.dp
                : k == "tp"     ? &c.tp
                : k == "pp"     ? &c.pp
                : k == "mbs"    ? &c.mbs
                : k == "chunks" ? &c.chunks
                : k == "zero"   ? &c.zero
                : k == "cp"     ? &c.cp
                : k == "ep"     ? &c.ep
                : k == "sp"     ? &c.sp
                                : nullptr;
  if (!r)
    return constraintError(spec, "unknown key '" + name +
                                     "'; known: dp, tp, pp, cp, ep, sp, "
                                     "mbs, chunks, zero, schedule, "
                                     "recompute, offload, replicas, "
                                     "cp-alone, cp-sp, ep-alone, ep-runs, "
                                     "pin");
  if (value == "any")
    return Error::success();
  SmallVector<StringRef> vals;
  value.split(vals, '|');
  if (vals.size() > 1 && op != "=")
    return constraintError(spec, "'" + item +
                                     "': a list of values needs '='");
  std::vector<unsigned> nums;
  for (StringRef v : vals) {
    unsigned n;
    if (v.trim().getAsInteger(10, n))
      return constraintError(spec, "'" + item + "': '" + v +
                                       "' is not a non-negative integer");
    nums.push_back(n);
  }
  if (r == &c.sp && llvm::any_of(nums, [](unsigned v) { return v > 1; }))
    return constraintError(spec, "'" + item +
                                     "': sp is 0 (no sequence parallelism) "
                                     "or 1");
  unsigned n = nums.front();
  if (op == "=") {
    if (!r->only.empty()) {
      // Two lists for one key: keep their intersection.
      std::vector<unsigned> both;
      for (unsigned v : nums)
        if (llvm::is_contained(r->only, v))
          both.push_back(v);
      nums = both;
      if (nums.empty())
        return constraintError(spec, "constraints on " + k +
                                         " are contradictory: the lists "
                                         "share no value");
    }
    r->only = nums;
  } else if (op == "<=") {
    r->max = std::min(r->max, n);
  } else if (op == "<") {
    if (n == 0)
      return constraintError(spec, "'" + item + "' leaves no value");
    r->max = std::min(r->max, n - 1);
  } else if (op == ">=") {
    r->min = std::max(r->min, n);
  } else if (op == ">") {
    r->min = std::max(r->min, n + 1);
  }
  if (r->empty())
    return constraintError(
        spec, formatv("constraints on {0} are contradictory: no value is "
                      "both >= {1} and <= {2}{3}; relax one of them",
                      k, r->min, r->max,
                      r->only.empty() ? "" : " and in the listed values")
                  .str());
  return Error::success();
}

Expected<Constraints> distopt::search::parseConstraints(StringRef spec,
                                                        StringRef defaults) {
  Constraints c;
  SmallVector<StringRef> items;
  spec.split(items, ',', -1, /*KeepEmpty=*/false);
  StringSet<> named;
  for (StringRef raw : items) {
    StringRef item = raw.trim();
    if (item.empty() || item == "1" || item == "true")
      continue; // a bare --dist-search
    std::string key;
    if (Error e = applyItem(spec, item, c, key))
      return std::move(e);
    named.insert(key);
  }
  // A default limit holds where the user's items leave its key alone.
  SmallVector<StringRef> fallback;
  defaults.split(fallback, ',', -1, /*KeepEmpty=*/false);
  for (StringRef raw : fallback) {
    StringRef item = raw.trim(), key, op, value;
    if (splitItem(item, key, op, value) && named.contains(key.lower()))
      continue;
    std::string ignored;
    if (Error e = applyItem(defaults, item, c, ignored))
      return std::move(e);
  }
  return c;
}
