//===- ShapeInference.cpp - ONNX shape inference, exception-safe -*- C++ -*-===//
//
// Part of DistOpt. Built with -fexceptions (see CMakeLists.txt): ONNX shape
// inference reports errors by throwing.
//
//===----------------------------------------------------------------------===//
#include "ShapeInference.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>
#include <map>
#include <mutex>

namespace {

/// True when ConvTranspose's inference can read its inputs' shapes safely.
/// ONNX 1.12's ConvTranspose inference (every version) reads W's dim 1 and
/// indexes the kernel, stride and pad lists by X's spatial rank without
/// checking that W has the rank of X: a rank-1 W crashes the process.
static bool convTransposeRanksAgree(onnx::InferenceContext &ctx) {
  if (ctx.getNumInputs() < 2)
    return false;
  const onnx::TypeProto *x = ctx.getInputType(0);
  const onnx::TypeProto *w = ctx.getInputType(1);
  if (!x || !w || !x->tensor_type().has_shape() ||
      !w->tensor_type().has_shape())
    return true; // the inference returns before reading shapes
  int xRank = x->tensor_type().shape().dim_size();
  int wRank = w->tensor_type().shape().dim_size();
  return wRank >= 2 && wRank == xRank;
}

/// ONNX's schema registry, except for the schemas whose inference reads
/// input shapes it has not checked. In ONNX 1.12 Shape-15's data
/// propagation reads getInputType(0) unchecked (a Shape node reading a
/// value whose inference failed, such as a MatMul of mismatched shapes,
/// crashes the process), and ConvTranspose's shape inference reads W as if
/// it had X's rank. Those schemas are copies that first check what the
/// original reads and otherwise skip it; that only loses static shape data,
/// and the importer then names the value it cannot type.
class GuardedRegistry final : public onnx::ISchemaRegistry {
public:
  const onnx::OpSchema *GetSchema(const std::string &key, const int version,
                                  const std::string &domain) const override {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Instance()->GetSchema(key, version, domain);
    if (!schema || !domain.empty())
      return schema;
    bool shape15 = key == "Shape" && schema->SinceVersion() >= 15 &&
                   schema->has_data_propagation_function();
    bool convTranspose = key == "ConvTranspose" &&
                         schema->has_type_and_shape_inference_function();
    if (!shape15 && !convTranspose)
      return schema;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = guarded.find(schema);
    if (it == guarded.end()) {
      onnx::OpSchema copy = *schema;
      if (shape15) {
        onnx::DataPropagationFunction inner =
            schema->GetDataPropagationFunction();
        copy.PartialDataPropagationFunction(
            [inner](onnx::DataPropagationContext &ctx) {
              if (ctx.getNumInputs() < 1 || !ctx.getInputType(0))
                return;
              inner(ctx);
            });
      } else {
        onnx::InferenceFunction inner =
            schema->GetTypeAndShapeInferenceFunction();
        copy.TypeAndShapeInferenceFunction(
            [inner](onnx::InferenceContext &ctx) {
              if (convTransposeRanksAgree(ctx))
                inner(ctx);
            });
      }
      it = guarded.emplace(schema, std::move(copy)).first;
    }
    return &it->second;
  }

private:
  mutable std::mutex mutex;
  mutable std::map<const onnx::OpSchema *, onnx::OpSchema> guarded;
};

} // namespace

llvm::Error distopt::import::inferShapes(onnx::ModelProto &model) {
  static GuardedRegistry registry;
  try {
    onnx::ShapeInferenceOptions options;
    options.check_type = false;
    // Nodes whose inference fails keep unknown outputs; the importer then
    // names the value it cannot type, which is a better message.
    options.error_mode = 0;
    options.enable_data_propagation = true;
    onnx::shape_inference::InferShapes(model, &registry, options);
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
