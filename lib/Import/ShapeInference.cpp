//===- ShapeInference.cpp - ONNX shape inference, exception-safe -*- C++ -*-===//
//
// Part of DistOpt. Built with -fexceptions (see CMakeLists.txt): ONNX shape
// inference reports errors by throwing.
//
//===----------------------------------------------------------------------===//
#include "ShapeInference.h"

#include "EinsumEquation.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <functional>
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

/// Spatial extents whose SAME padding ONNX 1.12 computes by repeated
/// subtraction stay below this many strides (a few hundred milliseconds).
constexpr int64_t kMaxSamePadSteps = int64_t(1) << 28;

/// True when a convolution's or pool's inference ends in reasonable time.
/// ONNX 1.12's convPoolShapeInference finds the SAME_UPPER / SAME_LOWER
/// padding of each spatial axis by subtracting the stride from the input
/// extent until it is smaller: an extent of 2^63-1 (dist-fuzz) never ends.
static bool samePaddingIsCheap(onnx::InferenceContext &ctx) {
  // ONNX takes every value but NOTSET and VALID for SAME (the importer
  // refuses the others first: SchemaChecks.cpp).
  const onnx::AttributeProto *pad = ctx.getAttribute("auto_pad");
  if (!pad || pad->s() == "NOTSET" || pad->s() == "VALID")
    return true;
  const onnx::TypeProto *x =
      ctx.getNumInputs() > 0 ? ctx.getInputType(0) : nullptr;
  if (!x || !x->tensor_type().has_shape())
    return true;
  const onnx::AttributeProto *strides = ctx.getAttribute("strides");
  const auto &dims = x->tensor_type().shape().dim();
  for (int i = 2; i < dims.size(); ++i) {
    int64_t stride = 1;
    if (strides && i - 2 < strides->ints_size())
      stride = std::max<int64_t>(1, strides->ints(i - 2));
    if (dims[i].has_dim_value() &&
        dims[i].dim_value() / stride > kMaxSamePadSteps)
      return false;
  }
  return true;
}

/// True when a convolution's filter has its input's rank (or either shape
/// is unknown, when the inference reads neither). ONNX 1.12's
/// convPoolShapeInference takes the kernel's extents from the filter's
/// dims 2.. and indexes them, and the dilations, by the input's spatial
/// rank: a 4-D filter on a 3-D input (dist-fuzz) reads past the kernel's
/// list and crashes the process; a filter of lower rank gives the output
/// a shape made of whatever it read. `filter` is W's input index (Conv,
/// ConvInteger: 1; QLinearConv: 3), -1 for the pools, which have no
/// filter.
static bool filterRankAgrees(onnx::InferenceContext &ctx, int filter) {
  if (filter < 0 || ctx.getNumInputs() <= static_cast<size_t>(filter))
    return true;
  const onnx::TypeProto *x = ctx.getInputType(0);
  const onnx::TypeProto *w = ctx.getInputType(filter);
  if (!x || !w || !x->tensor_type().has_shape() ||
      !w->tensor_type().has_shape())
    return true;
  return x->tensor_type().shape().dim_size() ==
         w->tensor_type().shape().dim_size();
}

/// True when every constant input of a Range holds an element. ONNX 1.12's
/// Range inference reads the first element of a constant start, limit or
/// delta without checking that it has one: a Constant with no data
/// (dist-fuzz) crashes the process.
static bool rangeInputsHaveData(onnx::InferenceContext &ctx) {
  for (size_t i = 0; i < ctx.getNumInputs() && i < 3; ++i) {
    const onnx::TensorProto *t = ctx.getInputData(i);
    if (!t)
      continue;
    bool any = !t->raw_data().empty() || t->float_data_size() > 0 ||
               t->int64_data_size() > 0 || t->int32_data_size() > 0 ||
               t->double_data_size() > 0;
    if (!any)
      return false;
  }
  return true;
}

/// Einsum's output dimensions, which ONNX 1.12's inference leaves unknown
/// (it gives the rank only): from the equation (EinsumEquation, the parse
/// the importer lowers with) when every input shape is static. Anything
/// it cannot size stays unknown; the importer then names the problem.
static void completeEinsumShape(onnx::InferenceContext &ctx) {
  const onnx::AttributeProto *equation = ctx.getAttribute("equation");
  if (!equation || ctx.getNumOutputs() < 1)
    return;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    const onnx::TypeProto *t = ctx.getInputType(i);
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape())
      return;
    std::vector<int64_t> shape;
    for (const auto &d : t->tensor_type().shape().dim()) {
      if (!d.has_dim_value())
        return;
      shape.push_back(d.dim_value());
    }
    shapes.push_back(std::move(shape));
  }
  distopt::import::EinsumEquation eq;
  std::string error;
  if (!eq.parse(equation->s(), shapes, error))
    return;
  onnx::TypeProto *out = ctx.getOutputType(0);
  if (!out)
    return;
  auto *shape = out->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : eq.shapeOf(eq.output))
    shape->add_dim()->set_dim_value(d);
}

/// The ops whose inference is ONNX's convPoolShapeInference.
static bool usesConvPoolInference(const std::string &key) {
  return key == "Conv" || key == "ConvInteger" || key == "QLinearConv" ||
         key == "MaxPool" || key == "AveragePool" || key == "LpPool";
}

/// The input index of a convPoolShapeInference op's filter, -1 for none.
static int filterInput(const std::string &key) {
  return key == "QLinearConv"                    ? 3
         : key == "Conv" || key == "ConvInteger" ? 1
                                                 : -1;
}

/// ONNX's schema registry, except for Einsum's, whose inference is
/// completed with its output's dimensions, and for the schemas whose inference
/// reads input shapes it has not checked. In ONNX 1.12 Shape-15's data
/// propagation reads getInputType(0) unchecked (a Shape node reading a
/// value whose inference failed, such as a MatMul of mismatched shapes,
/// crashes the process), ConvTranspose's and the convolutions' shape
/// inference reads W as if it had X's rank, convolutions and pools with
/// SAME padding loop over the input's extent, and Range reads an element
/// of constant inputs that may have none. Those schemas are copies that first
/// check what the original reads and otherwise skip it; that only loses static
/// shape data, and the importer then names the value it cannot type.
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
    bool convPool = usesConvPoolInference(key) &&
                    schema->has_type_and_shape_inference_function();
    bool range =
        key == "Range" && schema->has_type_and_shape_inference_function();
    bool einsum =
        key == "Einsum" && schema->has_type_and_shape_inference_function();
    if (!shape15 && !convTranspose && !convPool && !range && !einsum)
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
      } else if (einsum) {
        onnx::InferenceFunction inner =
            schema->GetTypeAndShapeInferenceFunction();
        copy.TypeAndShapeInferenceFunction(
            [inner](onnx::InferenceContext &ctx) {
              inner(ctx);
              completeEinsumShape(ctx);
            });
      } else {
        onnx::InferenceFunction inner =
            schema->GetTypeAndShapeInferenceFunction();
        int filter = filterInput(key);
        std::function<bool(onnx::InferenceContext &)> safe;
        if (convTranspose)
          safe = convTransposeRanksAgree;
        else if (range)
          safe = rangeInputsHaveData;
        else
          safe = [filter](onnx::InferenceContext &ctx) {
            return filterRankAgrees(ctx, filter) && samePaddingIsCheap(ctx);
          };
        copy.TypeAndShapeInferenceFunction(
            [inner, safe](onnx::InferenceContext &ctx) {
              if (safe(ctx))
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
  // ONNX 1.12's inference indexes with declared sizes (GatherND with the
  // last dimension of its indices): a negative one crashes it.
  const onnx::GraphProto &graph = model.graph();
  for (const auto *values :
       {&graph.input(), &graph.output(), &graph.value_info()})
    for (const onnx::ValueInfoProto &v : *values) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
        continue;
      const onnx::TensorShapeProto &shape = v.type().tensor_type().shape();
      for (int d = 0; d < shape.dim_size(); ++d)
        if (shape.dim(d).has_dim_value() && shape.dim(d).dim_value() < 0)
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              "value '" + v.name() + "' is declared with dimension " +
                  std::to_string(d) + " of size " +
                  std::to_string(shape.dim(d).dim_value()) +
                  "; sizes are at least 0 (a symbolic size is a dim_param): "
                  "fix the model's shapes");
    }
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
