//===- PlanOptionTableTest.cpp - One table, three spellings -----*- C++ -*-===//
//
// Part of DistOpt. dist-plan-pipeline's options are spelled as PlanOptions
// fields, as the pipeline's textual options and as the tools' flags, all
// made from one table (passes/PlanOptionTable.h). Setting every option to a
// value other than its default through each spelling must give the same
// PlanOptions, with each value in its own field.
//
//===----------------------------------------------------------------------===//
#include "passes/PlanOptionTable.h"
#include "tools/Init/ToolFlags.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"

#include <gtest/gtest.h>

using namespace distopt;

namespace {

/// A value for \p spec's field that differs from the default and from every
/// other row's value.
std::string testValue(const PlanOptionSpec &spec, unsigned row) {
  return std::visit(
      [&](auto member) -> std::string {
        PlanOptions defaults;
        using T = std::remove_reference_t<decltype(defaults.*member)>;
        if constexpr (std::is_same_v<T, bool>)
          return defaults.*member ? "false" : "true";
        else if constexpr (std::is_same_v<T, unsigned>)
          return std::to_string(defaults.*member + 100 + row);
        else
          return "v" + std::to_string(row) + "-" + spec.name.str();
      },
      spec.field);
}

/// \p field of \p o, printed as testValue prints it.
std::string valueOf(const PlanOptions &o, PlanOptionField field) {
  return std::visit(
      [&](auto member) -> std::string {
        using T =
            std::remove_cv_t<std::remove_reference_t<decltype(o.*member)>>;
        if constexpr (std::is_same_v<T, bool>)
          return o.*member ? "true" : "false";
        else if constexpr (std::is_same_v<T, unsigned>)
          return std::to_string(o.*member);
        else
          return o.*member;
      },
      field);
}

TEST(PlanOptionTable, NamesAndFieldsAreUnique) {
  llvm::StringSet<> names, flags;
  std::vector<PlanOptionField> fields;
  for (const PlanOptionSpec &spec : planOptionSpecs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name.str();
    if (!spec.flag.empty()) {
      EXPECT_TRUE(flags.insert(spec.flag).second) << spec.flag.str();
      EXPECT_TRUE(spec.flag.starts_with("dist-")) << spec.flag.str();
    }
    EXPECT_FALSE(spec.help.empty()) << spec.name.str();
    for (const PlanOptionField &f : fields)
      EXPECT_FALSE(f == spec.field) << spec.name.str() << " repeats a field";
    fields.push_back(spec.field);
  }
  EXPECT_EQ(
      spellPlanOption(&PlanOptions::memoryLimit, PlanOptionSpelling::Pipeline),
      "memory-limit");
  EXPECT_EQ(
      spellPlanOption(&PlanOptions::memoryLimit, PlanOptionSpelling::Flag),
      "--dist-memory-limit");
  EXPECT_EQ(
      spellPlanOption(&PlanOptions::printLayers, PlanOptionSpelling::Flag),
      "--dist-print-model");
  // Options the tools decide themselves keep their pipeline name.
  EXPECT_EQ(spellPlanOption(&PlanOptions::stages, PlanOptionSpelling::Flag),
            "stages");
}

TEST(PlanOptionTable, PipelineTextAndFlagsFillTheSameFields) {
  std::string text;
  std::vector<std::string> argStorage = {"tool"};
  unsigned row = 0;
  for (const PlanOptionSpec &spec : planOptionSpecs()) {
    std::string value = testValue(spec, row++);
    text += spec.name.str() + "=" + value + " ";
    if (!spec.flag.empty())
      argStorage.push_back("--" + spec.flag.str() + "=" + value);
  }
  PlanOptions fromText;
  ASSERT_TRUE(parsePlanPipelineOptions(text, fromText)) << text;

  PlanFlags flags;
  std::vector<const char *> argv;
  for (const std::string &arg : argStorage)
    argv.push_back(arg.c_str());
  std::string errors;
  llvm::raw_string_ostream errs(errors);
  ASSERT_TRUE(
      llvm::cl::ParseCommandLineOptions(argv.size(), argv.data(), "", &errs))
      << errors;
  PlanOptions fromFlags = flags.values();

  row = 0;
  for (const PlanOptionSpec &spec : planOptionSpecs()) {
    std::string value = testValue(spec, row++);
    EXPECT_EQ(valueOf(fromText, spec.field), value) << spec.name.str();
    if (!spec.flag.empty()) {
      EXPECT_EQ(valueOf(fromFlags, spec.field), value) << spec.flag.str();
    }
  }
  EXPECT_TRUE(flags.searching());
}

TEST(PlanOptionTable, MessagesNameTheOptionAsTheUserSpelledIt) {
  PlanOptions o;
  o.mode = "serve";
  std::string error;
  EXPECT_FALSE(checkPlanOptions(o, PlanOptionSpelling::Flag, error));
  EXPECT_EQ(error, "unknown --dist-mode='serve': expected train or infer");
  EXPECT_FALSE(checkPlanOptions(o, PlanOptionSpelling::Pipeline, error));
  EXPECT_EQ(error, "unknown mode='serve': expected train or infer");
  o = PlanOptions();
  o.dtype = "i8";
  EXPECT_FALSE(checkPlanOptions(o, PlanOptionSpelling::Flag, error));
  EXPECT_EQ(
      error,
      "unknown --dist-dtype='i8': expected fp32, tf32, fp16, bf16 or fp8");
  EXPECT_TRUE(checkPlanOptions(PlanOptions(), PlanOptionSpelling::Flag, error));
}

} // namespace
