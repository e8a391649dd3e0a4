//===- ShapeInference.cpp - ONNX shape inference, exception-safe -*- C++
//-*-===//
//
// Part of DistOpt. Built with -fexceptions (see CMakeLists.txt): ONNX shape
// inference reports errors by throwing.
//
//===----------------------------------------------------------------------===//
#include "ShapeInference.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>

llvm::Error distopt::import::inferShapes(onnx::ModelProto &model) {
  try {
    onnx::ShapeInferenceOptions options;
    options.check_type = false;
    // Nodes whose inference fails keep unknown outputs; the importer then
    // names the value it cannot type, which is a better message.
    options.error_mode = 0;
    options.enable_data_propagation = true;
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        std::string("ONNX shape inference failed: ") + e.what() +
            "; the model's declared shapes or attributes contradict its "
            "ops: fix the model (or its --input-shape pins)");
  } catch (...) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "ONNX shape inference failed with an "
                                   "unknown exception");
  }
  return llvm::Error::success();
}
