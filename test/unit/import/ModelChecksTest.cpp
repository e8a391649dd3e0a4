//===- ModelChecksTest.cpp - Pinning graph input shapes ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ModelChecks.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

using namespace distopt;
using namespace distopt::import;

namespace {

/// A dimension: a number, a dim_param, or "" for an unnamed open one.
struct Dim {
  Dim(int64_t value) : value(value) {}
  Dim(const char *param) : param(param) {}
  int64_t value = -1;
  std::string param;
};

void addInput(onnx::GraphProto &g, const char *name,
              std::initializer_list<Dim> dims) {
  onnx::ValueInfoProto *v = g.add_input();
  v->set_name(name);
  auto *tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto *shape = tensor->mutable_shape();
  for (const Dim &d : dims) {
    auto *dim = shape->add_dim();
    if (d.value >= 0)
      dim->set_dim_value(d.value);
    else if (!d.param.empty())
      dim->set_dim_param(d.param);
  }
}

std::vector<int64_t> shapeOf(const onnx::GraphProto &g, int input) {
  std::vector<int64_t> shape;
  for (const auto &d : g.input(input).type().tensor_type().shape().dim())
    shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return shape;
}

/// pinInputShapes' error message, or "" when it succeeds.
std::string pin(onnx::GraphProto &g, const ONNXImportOptions &options,
                std::vector<std::string> *remarks = nullptr) {
  std::vector<std::string> ignored;
  llvm::Error e = pinInputShapes(g, options, remarks ? *remarks : ignored);
  return e ? llvm::toString(std::move(e)) : "";
}

onnx::GraphProto bert() {
  onnx::GraphProto g;
  addInput(g, "input_ids", {"batch", "sequence"});
  addInput(g, "attention_mask", {"batch", "sequence"});
  addInput(g, "hidden", {"batch", "sequence", 16});
  return g;
}

TEST(InputDim, PinsTheNameInEveryInput) {
  onnx::GraphProto g = bert();
  ONNXImportOptions options;
  options.inputDims["batch"] = 2;
  options.inputDims["sequence"] = 128;
  std::vector<std::string> remarks;
  ASSERT_EQ(pin(g, options, &remarks), "");
  EXPECT_EQ(shapeOf(g, 0), (std::vector<int64_t>{2, 128}));
  EXPECT_EQ(shapeOf(g, 1), (std::vector<int64_t>{2, 128}));
  EXPECT_EQ(shapeOf(g, 2), (std::vector<int64_t>{2, 128, 16}));
  // Nothing was left to --default-batch.
  EXPECT_TRUE(remarks.empty());
}

TEST(InputDim, LeadingDimLeftToDefaultBatch) {
  onnx::GraphProto g = bert();
  ONNXImportOptions options;
  options.inputDims["sequence"] = 64;
  options.defaultBatch = 3;
  std::vector<std::string> remarks;
  ASSERT_EQ(pin(g, options, &remarks), "");
  EXPECT_EQ(shapeOf(g, 2), (std::vector<int64_t>{3, 64, 16}));
  ASSERT_EQ(remarks.size(), 3u);
  EXPECT_EQ(remarks[2], "input 'hidden': dynamic leading dimension 'batch' set "
                        "to 3; pin it with --input-dim batch=N or "
                        "--input-shape=hidden:BATCHx64x16");
}

TEST(InputDim, InputShapeMustAgree) {
  ONNXImportOptions options;
  options.inputDims["sequence"] = 128;
  options.inputShapes["input_ids"] = {4, 128};
  onnx::GraphProto g = bert();
  ASSERT_EQ(pin(g, options), "");
  EXPECT_EQ(shapeOf(g, 0), (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(shapeOf(g, 1), (std::vector<int64_t>{1, 128}));

  options.inputShapes["input_ids"] = {4, 64};
  g = bert();
  EXPECT_EQ(pin(g, options),
            "--input-shape=input_ids:4x64 sets dim 1 ('sequence') to 64 but "
            "--input-dim sequence=128 pins it; give both the same value, "
            "or drop one");
}

TEST(InputDim, UnknownNameListsTheInputsDims) {
  onnx::GraphProto g = bert();
  // An initializer listed as an input: its dims are not the inputs'.
  addInput(g, "w", {"rows", 16});
  g.add_initializer()->set_name("w");
  ONNXImportOptions options;
  options.inputDims["seq"] = 128;
  EXPECT_EQ(pin(g, options),
            "--input-dim names 'seq', which no graph input uses as a "
            "symbolic dimension (the graph inputs have 'batch', 'sequence')");
  options.inputDims.clear();
  options.inputDims["rows"] = 4;
  g = bert();
  addInput(g, "w", {"rows", 16});
  g.add_initializer()->set_name("w");
  EXPECT_NE(pin(g, options).find("names 'rows'"), std::string::npos);

  onnx::GraphProto fixed;
  addInput(fixed, "x", {2, 8});
  EXPECT_EQ(pin(fixed, options),
            "--input-dim names 'rows', which no graph input uses as a "
            "symbolic dimension (the graph inputs have none)");
}

TEST(InputDim, UnpinnedDimNamesTheOptionAndInventsNothing) {
  onnx::GraphProto g;
  addInput(g, "state", {2, "batch", 128});
  EXPECT_EQ(pin(g, {}),
            "input 'state' has symbolic dimension 'batch' (dim 1), which is "
            "not the leading (batch) dimension; pin it with --input-dim "
            "batch=N (every input that uses it) or "
            "--input-shape=state:2xBATCHx128");

  // Open dims another --input-dim pins show its value; unnamed ones and
  // names that are not identifiers get Dk, and such a name is quoted.
  onnx::GraphProto h;
  addInput(h, "x", {"b", "s0*2", "", "len"});
  ONNXImportOptions options;
  options.inputDims["len"] = 7;
  EXPECT_EQ(pin(h, options),
            "input 'x' has symbolic dimension 's0*2' (dim 1), which is not "
            "the leading (batch) dimension; pin it with --input-dim "
            "'s0*2=N' (every input that uses it) or "
            "--input-shape=x:BxD1xD2x7");
  onnx::GraphProto u;
  addInput(u, "x", {"n", "", 4});
  std::vector<std::string> remarks;
  EXPECT_EQ(pin(u, {}, &remarks),
            "input 'x' has an unnamed dynamic dimension (dim 1), which is not "
            "the leading (batch) dimension; pin it with "
            "--input-shape=x:NxD1x4");
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(remarks[0], "input 'x': dynamic leading dimension 'n' set to 1; "
                        "pin it with --input-dim n=SIZE or "
                        "--input-shape=x:NxD1x4");
}

} // namespace
