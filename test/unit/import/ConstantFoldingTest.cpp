//===- ConstantFoldingTest.cpp - Shape-subgraph folding ---------*- C++ -*-===//
//
// Part of DistOpt.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/SmallTensor.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

using namespace distopt::import;

namespace {

onnx::NodeProto *addNode(onnx::GraphProto &g, const char *op,
                         std::initializer_list<const char *> in,
                         const char *out) {
  onnx::NodeProto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (const char *i : in)
    n->add_input(i);
  n->add_output(out);
  return n;
}

void addInt64Initializer(onnx::GraphProto &g, const char *name,
                         std::initializer_list<int64_t> values,
                         bool scalar = false) {
  onnx::TensorProto *t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar)
    t->add_dims(values.size());
  for (int64_t v : values)
    t->add_int64_data(v);
}

/// The value a Constant node named `name` holds after folding.
std::optional<SmallTensor> folded(const onnx::GraphProto &g,
                                  const std::string &name) {
  for (const auto &n : g.node())
    if (n.output(0) == name && n.op_type() == "Constant")
      return readSmallTensor(n.attribute(0).t());
  return std::nullopt;
}

TEST(ConstantFolding, ShapeGatherUnsqueezeConcat) {
  onnx::GraphProto g;
  auto *x = g.add_input();
  x->set_name("x");
  auto *tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {2, 8, 768})
    tt->mutable_shape()->add_dim()->set_dim_value(d);
  addInt64Initializer(g, "zero", {0}, /*scalar=*/true);
  addInt64Initializer(g, "axes", {0});
  addInt64Initializer(g, "tail", {12, -1});
  addNode(g, "Shape", {"x"}, "s");
  addNode(g, "Gather", {"s", "zero"}, "b");
  addNode(g, "Unsqueeze", {"b", "axes"}, "ub");
  addNode(g, "Concat", {"ub", "tail"}, "shape")
      ->add_attribute()
      ->set_name("axis");
  addNode(g, "Mul", {"b", "b"}, "b2");
  EXPECT_EQ(foldConstants(g, 13), 5u);
  auto shape = folded(g, "shape");
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->ints, (llvm::SmallVector<int64_t>{2, 12, -1}));
  auto b2 = folded(g, "b2");
  ASSERT_TRUE(b2);
  EXPECT_TRUE(b2->shape.empty());
  EXPECT_EQ(b2->ints, (llvm::SmallVector<int64_t>{4}));
}

TEST(ConstantFolding, SliceCastRangeAndBroadcast) {
  onnx::GraphProto g;
  addInt64Initializer(g, "v", {10, 20, 30, 40, 50});
  addInt64Initializer(g, "st", {-1});
  addInt64Initializer(g, "en", {-100});
  addInt64Initializer(g, "ax", {0});
  addInt64Initializer(g, "sp", {-2});
  addNode(g, "Slice", {"v", "st", "en", "ax", "sp"}, "rev");
  auto *cast = addNode(g, "Cast", {"rev"}, "f");
  auto *to = cast->add_attribute();
  to->set_name("to");
  to->set_i(onnx::TensorProto::FLOAT);
  addInt64Initializer(g, "r0", {1}, true);
  addInt64Initializer(g, "r1", {7}, true);
  addInt64Initializer(g, "r2", {2}, true);
  addNode(g, "Range", {"r0", "r1", "r2"}, "range");
  addNode(g, "Add", {"range", "rev"}, "sum");
  foldConstants(g, 13);
  auto rev = folded(g, "rev");
  ASSERT_TRUE(rev);
  EXPECT_EQ(rev->ints, (llvm::SmallVector<int64_t>{50, 30, 10}));
  auto f = folded(g, "f");
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->isFloat());
  EXPECT_EQ(f->floats[1], 30.0);
  auto range = folded(g, "range");
  ASSERT_TRUE(range);
  EXPECT_EQ(range->ints, (llvm::SmallVector<int64_t>{1, 3, 5}));
  auto sum = folded(g, "sum");
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->ints, (llvm::SmallVector<int64_t>{51, 33, 15}));
}

TEST(ConstantFolding, LeavesNonConstantsAndLargeResults) {
  onnx::GraphProto g;
  g.add_input()->set_name("x"); // no shape: Shape(x) is unknown
  addNode(g, "Shape", {"x"}, "s");
  addInt64Initializer(g, "big", {100, 100});
  addNode(g, "ConstantOfShape", {"big"}, "zeros");
  EXPECT_EQ(foldConstants(g, 13), 0u);
  EXPECT_EQ(g.node(0).op_type(), "Shape");
  EXPECT_EQ(g.node(1).op_type(), "ConstantOfShape");
}

TEST(ConstantFolding, DivisionByZeroIsNotFolded) {
  onnx::GraphProto g;
  addInt64Initializer(g, "a", {4});
  addInt64Initializer(g, "z", {0});
  addNode(g, "Div", {"a", "z"}, "q");
  EXPECT_EQ(foldConstants(g, 13), 0u);
}

} // namespace
