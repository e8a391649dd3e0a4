//===- WeightReferenceTest.cpp - graph.weight points at the bytes ---------===//
//
// Part of DistOpt. Imports a model built here and checks that every
// graph.weight's (file, offset, size) selects exactly the bytes of its
// initializer or Constant tensor in the serialized model.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"
#include "dist/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

using namespace mlir;

namespace {

onnx::TensorProto *addFloatTensor(onnx::TensorProto *t, const char *name,
                                  int rows, int cols, float seed) {
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(rows);
  t->add_dims(cols);
  std::string raw(size_t(rows) * cols * 4, '\0');
  for (int i = 0; i < rows * cols; ++i) {
    float v = seed + float(i);
    std::memcpy(&raw[size_t(i) * 4], &v, 4);
  }
  t->set_raw_data(raw);
  return t;
}

TEST(WeightReference, OffsetsSelectTheTensorBytes) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name("g");
  auto *x = g->add_input();
  x->set_name("x");
  auto *tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(16);
  addFloatTensor(g->add_initializer(), "w", 16, 32, 1.0f);
  addFloatTensor(g->add_initializer(), "b", 1, 32, 100.0f);
  onnx::NodeProto *c = g->add_node();
  c->set_op_type("Constant");
  c->set_name("big_const");
  c->add_output("k");
  onnx::AttributeProto *value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  addFloatTensor(value->mutable_t(), "k", 32, 8, -5.0f);
  for (auto [op, a, b, out] :
       {std::tuple("MatMul", "x", "w", "h"), std::tuple("Add", "h", "b", "hb"),
        std::tuple("MatMul", "hb", "k", "y")}) {
    onnx::NodeProto *n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    n->add_input(a);
    n->add_input(b);
    n->add_output(out);
  }
  g->add_output()->set_name("y");
  std::string bytes = model.SerializeAsString();

  MLIRContext context;
  auto module = distopt::importONNXBuffer(bytes, "model.onnx", ".", &context);
  ASSERT_TRUE(module);
  std::map<std::string, std::string> expected = {
      {"w", g->initializer(0).raw_data()},
      {"b", g->initializer(1).raw_data()},
      {"k", c->attribute(0).t().raw_data()}};
  unsigned seen = 0;
  module->walk([&](distopt::graph::WeightOp w) {
    ASSERT_TRUE(w.getFile().has_value()) << w.getSymName().str();
    EXPECT_EQ(*w.getFile(), "model.onnx");
    uint64_t offset = w.getOffsetAttr().getInt(),
             size = w.getSizeAttr().getInt();
    ASSERT_LE(offset + size, bytes.size());
    EXPECT_EQ(bytes.substr(offset, size), expected[w.getSymName().str()])
        << w.getSymName().str();
    ++seen;
  });
  EXPECT_EQ(seen, 3u);

  // Under WeightPolicy::Ignore nothing is referenced.
  distopt::ONNXImportOptions ignore;
  ignore.weights = distopt::WeightPolicy::Ignore;
  auto shapesOnly =
      distopt::importONNXBuffer(bytes, "model.onnx", ".", &context, ignore);
  ASSERT_TRUE(shapesOnly);
  shapesOnly->walk([&](distopt::graph::WeightOp w) {
    EXPECT_FALSE(w.getFile().has_value()) << w.getSymName().str();
  });
}

} // namespace
