//===- ModelScannerTest.cpp - Protobuf wire-format scanner ------*- C++ -*-===//
//
// Part of DistOpt. The scanner must record payload positions exactly, keep
// everything else byte-for-byte, and report truncation without reading out
// of bounds.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ModelScanner.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

using namespace distopt::import;

namespace {

/// A model with one 1 KiB initializer and one small one.
std::string makeModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("g");
  onnx::TensorProto *big = graph->add_initializer();
  big->set_name("big");
  big->set_data_type(onnx::TensorProto::FLOAT);
  big->add_dims(256);
  std::string raw(1024, '\0');
  for (size_t i = 0; i < raw.size(); ++i)
    raw[i] = char(i * 7);
  big->set_raw_data(raw);
  onnx::TensorProto *small = graph->add_initializer();
  small->set_name("small");
  small->set_data_type(onnx::TensorProto::INT64);
  small->add_dims(2);
  small->add_int64_data(3);
  small->add_int64_data(4);
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type("Relu");
  node->add_input("big");
  node->add_output("y");
  return model.SerializeAsString();
}

TEST(WireReader, ReadsVarints) {
  std::string bytes;
  appendVarint(bytes, 300);
  appendVarint(bytes, 1ull << 40);
  WireReader reader(bytes);
  EXPECT_EQ(*reader.readVarint(), 300u);
  EXPECT_EQ(*reader.readVarint(), 1ull << 40);
  EXPECT_TRUE(reader.atEnd());
}

TEST(WireReader, ReportsTruncatedVarint) {
  WireReader reader(llvm::StringRef("\x80\x80", 2));
  auto v = reader.readVarint();
  ASSERT_FALSE(v);
  EXPECT_NE(llvm::toString(v.takeError()).find("truncated"), std::string::npos);
}

TEST(WireReader, RejectsGroupsAndFieldZero) {
  uint32_t field, wire;
  WireReader groups(llvm::StringRef("\x0b", 1)); // field 1, start group
  llvm::Error g = groups.readTag(field, wire);
  ASSERT_TRUE(bool(g));
  EXPECT_NE(llvm::toString(std::move(g)).find("invalid field tag"),
            std::string::npos);
  WireReader zero(llvm::StringRef("\x00", 1));
  llvm::Error e = zero.readTag(field, wire);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("invalid field tag"),
            std::string::npos);
}

TEST(ScanModel, RecordsPayloadAndStripsIt) {
  std::string bytes = makeModel();
  auto scan = scanModel(bytes, /*stripThreshold=*/64);
  ASSERT_TRUE(bool(scan)) << llvm::toString(scan.takeError());
  EXPECT_EQ(scan->numInitializers, 2u);
  ASSERT_EQ(scan->payloads.count(0), 1u);
  EXPECT_EQ(scan->payloads.count(1), 0u); // int64_data below the threshold
  TensorDataRef ref = scan->payloads.lookup(0);
  ASSERT_EQ(ref.size, 1024u);
  ASSERT_LE(ref.offset + ref.size, bytes.size());
  for (size_t i = 0; i < 1024; ++i)
    ASSERT_EQ(bytes[ref.offset + i], char(i * 7)) << i;
  EXPECT_LT(scan->stripped.size(), bytes.size() - 1000);

  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(scan->stripped));
  EXPECT_EQ(parsed.graph().initializer(0).name(), "big");
  EXPECT_FALSE(parsed.graph().initializer(0).has_raw_data());
  EXPECT_EQ(parsed.graph().initializer(1).int64_data(1), 4);
  EXPECT_EQ(parsed.graph().node(0).op_type(), "Relu");
}

TEST(ScanModel, EveryTruncationIsAnError) {
  std::string bytes = makeModel();
  // Cutting inside the graph field must always fail cleanly.
  for (size_t cut = 1; cut + 1 < bytes.size(); cut += 7) {
    auto scan = scanModel(llvm::StringRef(bytes).take_front(cut));
    if (scan)
      continue; // a cut between top-level fields before the graph
    std::string message = llvm::toString(scan.takeError());
    EXPECT_FALSE(message.empty());
  }
  auto whole = scanModel(bytes);
  EXPECT_TRUE(bool(whole));
  if (!whole)
    llvm::consumeError(whole.takeError());
}

TEST(ScanModel, TextIsNotAModel) {
  auto scan = scanModel("This is not an ONNX model.\n");
  ASSERT_FALSE(bool(scan));
  llvm::consumeError(scan.takeError());
}

} // namespace
