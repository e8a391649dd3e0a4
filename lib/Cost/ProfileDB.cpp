//===- ProfileDB.cpp - Measured op times ------------------------*- C++ -*-===//

#include "lib/Cost/ProfileDB.h"
#include "lib/Support/JSONFile.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace distopt::cost {

std::string ProfileDB::key(StringRef device, StringRef signature, unsigned mbs,
                           unsigned tp) {
  return formatv("{0}|{1}|{2}|{3}", device, signature, mbs, tp).str();
}

void ProfileDB::add(StringRef device, StringRef signature, unsigned mbs,
                    unsigned tp, Entry e) {
  entries[key(device, signature, mbs, tp)] =
      Stored{device.str(), signature.str(), mbs, tp, e};
}

std::optional<double> ProfileDB::lookup(StringRef device, StringRef signature,
                                        unsigned mbs, unsigned tp,
                                        Phase phase) const {
  auto it = entries.find(key(device, signature, mbs, tp));
  if (it == entries.end())
    return std::nullopt;
  const Entry &e = it->second.e;
  double v = phase == Phase::Forward         ? e.fwd
             : phase == Phase::BackwardInput ? e.bwdInput
                                             : e.bwdWeight;
  if (v < 0)
    return std::nullopt;
  return v;
}

std::optional<double> ProfileDB::optimizerPerParameter(StringRef device) const {
  auto it = optimizer.find(device.str());
  if (it == optimizer.end())
    return std::nullopt;
  return it->second;
}

void ProfileDB::setOptimizerPerParameter(StringRef device, double seconds) {
  optimizer[device.str()] = seconds;
}

ProfileDB ProfileDB::mean(ArrayRef<ProfileDB> dbs) {
  struct Acc {
    const Stored *first = nullptr;
    double sum[3] = {0, 0, 0};
    int n[3] = {0, 0, 0};
  };
  std::map<std::string, Acc> acc;
  std::map<std::string, std::pair<double, int>> opt;
  for (const ProfileDB &db : dbs) {
    for (const auto &kv : db.entries) {
      Acc &a = acc[kv.first().str()];
      if (!a.first)
        a.first = &kv.second;
      const Entry &e = kv.second.e;
      double v[3] = {e.fwd, e.bwdInput, e.bwdWeight};
      for (int p = 0; p < 3; ++p)
        if (v[p] >= 0) {
          a.sum[p] += v[p];
          a.n[p] += 1;
        }
    }
    for (const auto &[device, s] : db.optimizer) {
      opt[device].first += s;
      opt[device].second += 1;
    }
  }
  ProfileDB out;
  for (const auto &[k, a] : acc) {
    Entry e;
    double *slot[3] = {&e.fwd, &e.bwdInput, &e.bwdWeight};
    for (int p = 0; p < 3; ++p)
      if (a.n[p])
        *slot[p] = a.sum[p] / a.n[p];
    out.add(a.first->device, a.first->signature, a.first->mbs, a.first->tp, e);
  }
  for (const auto &[device, s] : opt)
    out.optimizer[device] = s.first / s.second;
  return out;
}

Expected<ProfileDB> ProfileDB::parse(StringRef text, StringRef fileName) {
  Expected<json::Value> root = json::parse(text);
  if (!root)
    return createStringError(inconvertibleErrorCode(),
                             fileName + ": invalid JSON (" +
                                 toString(root.takeError()) +
                                 "); write {\"version\": 1, \"entries\": "
                                 "[...]}");
  return fromJSON(*root, fileName);
}

Expected<ProfileDB> ProfileDB::fromJSON(const json::Value &root,
                                        StringRef fileName) {
  auto fail = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(),
                             (fileName + ": " + msg).str());
  };
  const json::Object *obj = root.getAsObject();
  if (!obj)
    return fail("the top level must be an object with 'version' and "
                "'entries'");
  std::optional<int64_t> version = obj->getInteger("version");
  if (!version || *version != 1)
    return fail("'version' must be 1");
  const json::Array *list = obj->getArray("entries");
  if (!list)
    return fail("missing 'entries' array");
  ProfileDB db;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string where = formatv("entries[{0}]", i).str();
    const json::Object *entry = (*list)[i].getAsObject();
    if (!entry)
      return fail(where + " is not an object");
    std::optional<StringRef> device = entry->getString("device");
    std::optional<StringRef> sig = entry->getString("signature");
    if (!device || !sig)
      return fail(where + ": 'device' and 'signature' must be strings");
    std::optional<int64_t> mbs = entry->getInteger("micro_batch");
    std::optional<int64_t> tp = entry->getInteger("tp");
    if (!mbs || *mbs < 1)
      return fail(where + ": 'micro_batch' must be an integer >= 1");
    if (tp && *tp < 1)
      return fail(where + ": 'tp' must be an integer >= 1");
    Entry e;
    bool any = false;
    for (auto [name, slot] : {std::pair<StringRef, double *>{"fwd_s", &e.fwd},
                              {"bwd_input_s", &e.bwdInput},
                              {"bwd_weight_s", &e.bwdWeight}}) {
      if (const json::Value *v = entry->get(name)) {
        std::optional<double> d = v->getAsNumber();
        if (!d || *d < 0)
          return fail(where + ": '" + name +
                      "' must be a non-negative number of seconds");
        *slot = *d;
        any = true;
      }
    }
    if (!any)
      return fail(where + ": give at least one of fwd_s, bwd_input_s, "
                          "bwd_weight_s");
    db.add(*device, *sig, *mbs, tp ? *tp : 1, e);
  }
  if (const json::Value *optValue = obj->get("optimizer")) {
    const json::Array *opt = optValue->getAsArray();
    if (!opt)
      return fail("'optimizer' must be an array of {\"device\": ..., "
                  "\"seconds_per_parameter\": ...}");
    for (size_t i = 0; i < opt->size(); ++i) {
      std::string where = formatv("optimizer[{0}]", i).str();
      const json::Object *o = (*opt)[i].getAsObject();
      std::optional<StringRef> device =
          o ? o->getString("device") : std::nullopt;
      std::optional<double> s =
          o ? o->getNumber("seconds_per_parameter") : std::nullopt;
      if (!device)
        return fail(where + ": 'device' must be a string");
      if (!s || *s < 0)
        return fail(where + ": 'seconds_per_parameter' must be a "
                            "non-negative number");
      db.optimizer[device->str()] = *s;
    }
  }
  return db;
}

Expected<ProfileDB> ProfileDB::load(StringRef path) {
  Expected<json::Value> root = readJSONFile(path, "profile database");
  if (!root)
    return createStringError(inconvertibleErrorCode(),
                             toString(root.takeError()) +
                                 "; a profile database is {\"version\": 1, "
                                 "\"entries\": [...]} as dist-profile "
                                 "writes it");
  return fromJSON(*root, path);
}

void ProfileDB::write(raw_ostream &os) const {
  std::vector<const Stored *> sorted;
  for (const auto &kv : entries)
    sorted.push_back(&kv.second);
  llvm::sort(sorted, [](const Stored *a, const Stored *b) {
    return std::tie(a->device, a->signature, a->mbs, a->tp) <
           std::tie(b->device, b->signature, b->mbs, b->tp);
  });
  json::Array list;
  for (const Stored *s : sorted) {
    json::Object o{{"device", s->device},
                   {"signature", s->signature},
                   {"micro_batch", s->mbs},
                   {"tp", s->tp}};
    if (s->e.fwd >= 0)
      o["fwd_s"] = s->e.fwd;
    if (s->e.bwdInput >= 0)
      o["bwd_input_s"] = s->e.bwdInput;
    if (s->e.bwdWeight >= 0)
      o["bwd_weight_s"] = s->e.bwdWeight;
    list.push_back(std::move(o));
  }
  json::Object root{{"version", 1}, {"entries", std::move(list)}};
  if (!optimizer.empty()) {
    json::Array opt;
    for (const auto &[device, s] : optimizer)
      opt.push_back(
          json::Object{{"device", device}, {"seconds_per_parameter", s}});
    root["optimizer"] = std::move(opt);
  }
  os << formatv("{0:2}", json::Value(std::move(root)));
}

} // namespace distopt::cost
