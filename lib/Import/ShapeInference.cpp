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
#include <map>
#include <mutex>

namespace {

/// ONNX's schema registry, except for the schemas whose data propagation
/// dereferences an untyped input: in ONNX 1.12 Shape-15 reads
/// getInputType(0) without checking it, so a Shape node reading a value
/// whose inference failed (a MatMul of mismatched shapes) crashes the
/// process. Those schemas are copies whose propagation first checks that
/// input 0 has a type; skipping propagation only loses static shape data,
/// which the importer then reports as a value it cannot type.
class GuardedRegistry final : public onnx::ISchemaRegistry {
public:
  const onnx::OpSchema *GetSchema(const std::string &key, const int version,
                                  const std::string &domain) const override {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Instance()->GetSchema(key, version, domain);
    if (!schema || key != "Shape" || !domain.empty() ||
        schema->SinceVersion() < 15 || !schema->has_data_propagation_function())
      return schema;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = guarded.find(schema);
    if (it == guarded.end()) {
      onnx::OpSchema copy = *schema;
      onnx::DataPropagationFunction inner =
          schema->GetDataPropagationFunction();
      copy.PartialDataPropagationFunction(
          [inner](onnx::DataPropagationContext &ctx) {
            if (ctx.getNumInputs() < 1 || !ctx.getInputType(0))
              return;
            inner(ctx);
          });
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
