//===- Vision.cpp - MLP, ResNet and VGG-16 graphs ---------------*- C++ -*-===//
//
// Part of DistOpt. ResNet and VGG-16 follow torchvision's topology and
// parameter names (eval-mode export: BatchNormalization with running
// statistics, no Dropout); Linear layers are Gemm with transB=1 and weights
// [out, in], as torch.onnx writes them.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace distopt::modelgen;

/// torch.nn.Linear as exported: Gemm(x, W[out, in], b, transB=1).
static std::string gemm(GraphBuilder &b, const std::string &x,
                        const std::string &name, int64_t in, int64_t out) {
  return b.node("Gemm",
                {x, b.weight(name + ".weight", {out, in}),
                 b.weight(name + ".bias", {out})},
                {attrInt("transB", 1)});
}

/// `layers` Gemm+Relu layers of `hidden` after \p x (\p width features),
/// scoped `<scope>.<i>`; \p width becomes `hidden`.
static std::string reluLayers(GraphBuilder &b, std::string x, int64_t &width,
                              int64_t layers, int64_t hidden,
                              const std::string &scope) {
  for (int64_t i = 0; i < layers; ++i) {
    b.setScope(scope + "." + std::to_string(i));
    x = b.node("Relu", {gemm(b, x, "linear", width, hidden)});
    width = hidden;
  }
  return x;
}

/// The Gemm classifier `<scope>.linear` after \p x, output \p name.
static void classifier(GraphBuilder &b, const std::string &x, int64_t width,
                       const std::string &scope, const std::string &name) {
  const ModelOptions &o = b.opts();
  b.setScope(scope);
  b.rename(gemm(b, x, "linear", width, o.classes), name);
  b.output(name, b.elemType(), {b.batch(), o.classes});
}

void distopt::modelgen::buildMlp(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  b.input("input", b.elemType(), {b.batch(), o.input});
  int64_t width = o.input;
  std::string x = reluLayers(b, "input", width, o.layers, o.hidden, "layers");
  classifier(b, x, width, "head", "logits");
}

/// A hierarchical DNN: a trunk of `layers` Gemm+Relu layers shared by
/// `branches` heads, each `branch-layers` Gemm+Relu layers of
/// `branch-hidden` and a Gemm classifier (outputs logits0, logits1, ...).
/// The heads are independent after the trunk: a branch-level placement
/// runs them on different devices at once (docs/search.md).
void distopt::modelgen::buildTrunkBranches(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  b.input("input", b.elemType(), {b.batch(), o.input});
  int64_t width = o.input;
  std::string x = reluLayers(b, "input", width, o.layers, o.hidden, "trunk");
  for (int64_t k = 0; k < o.branches; ++k) {
    std::string branch = "branch" + std::to_string(k);
    int64_t w = width;
    std::string y = reluLayers(b, x, w, o.branchLayers, o.branchHidden, branch);
    classifier(b, y, w, branch + ".head", "logits" + std::to_string(k));
  }
}

namespace {
/// Emits torchvision ResNet blocks, tracking channels and spatial size.
struct ResNetEmitter {
  GraphBuilder &b;

  std::string conv(const std::string &x, const std::string &name, int64_t cin,
                   int64_t cout, int64_t k, int64_t stride, bool bias = false) {
    int64_t pad = k / 2;
    std::vector<std::string> ins = {
        x, b.weight(name + ".weight", {cout, cin, k, k})};
    if (bias)
      ins.push_back(b.weight(name + ".bias", {cout}));
    return b.node("Conv", ins,
                  {attrInts("kernel_shape", {k, k}),
                   attrInts("strides", {stride, stride}),
                   attrInts("pads", {pad, pad, pad, pad}),
                   attrInts("dilations", {1, 1}), attrInt("group", 1)});
  }

  std::string bn(const std::string &x, const std::string &name, int64_t c) {
    return b.node("BatchNormalization",
                  {x, b.weight(name + ".weight", {c}),
                   b.weight(name + ".bias", {c}),
                   b.weight(name + ".running_mean", {c}, /*trainable=*/false),
                   b.weight(name + ".running_var", {c}, /*trainable=*/false)},
                  {attrFloat("epsilon", 1e-5f), attrFloat("momentum", 0.9f)});
  }

  std::string relu(const std::string &x) { return b.node("Relu", {x}); }

  /// BasicBlock (expansion 1) or Bottleneck (expansion 4, stride on the 3x3
  /// conv as in torchvision / ResNet v1.5).
  std::string block(const std::string &x, bool bottleneck, int64_t &inplanes,
                    int64_t planes, int64_t stride) {
    int64_t outplanes = bottleneck ? planes * 4 : planes;
    std::string y;
    if (bottleneck) {
      y = relu(bn(conv(x, "conv1", inplanes, planes, 1, 1), "bn1", planes));
      y = relu(bn(conv(y, "conv2", planes, planes, 3, stride), "bn2", planes));
      y = bn(conv(y, "conv3", planes, outplanes, 1, 1), "bn3", outplanes);
    } else {
      y = relu(
          bn(conv(x, "conv1", inplanes, planes, 3, stride), "bn1", planes));
      y = bn(conv(y, "conv2", planes, planes, 3, 1), "bn2", planes);
    }
    std::string identity = x;
    if (stride != 1 || inplanes != outplanes)
      identity = bn(conv(x, "downsample.0", inplanes, outplanes, 1, stride),
                    "downsample.1", outplanes);
    inplanes = outplanes;
    return relu(b.node("Add", {y, identity}));
  }
};
} // namespace

void distopt::modelgen::buildResNet(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  b.input("input", b.elemType(), {b.batch(), 3, o.image, o.image});
  ResNetEmitter e{b};
  std::string x =
      e.relu(e.bn(e.conv("input", "conv1", 3, 64, 7, 2), "bn1", 64));
  x = b.node("MaxPool", {x},
             {attrInts("kernel_shape", {3, 3}), attrInts("strides", {2, 2}),
              attrInts("pads", {1, 1, 1, 1})});

  bool bottleneck = o.depth >= 50;
  std::vector<int64_t> counts;
  switch (o.depth) {
  case 18:
    counts = {2, 2, 2, 2};
    break;
  case 34:
  case 50:
    counts = {3, 4, 6, 3};
    break;
  case 101:
    counts = {3, 4, 23, 3};
    break;
  default: // 152; validateOptions admits nothing else.
    counts = {3, 8, 36, 3};
    break;
  }
  int64_t inplanes = 64;
  for (int64_t stage = 0; stage < 4; ++stage) {
    int64_t planes = 64 << stage;
    for (int64_t i = 0; i < counts[stage]; ++i) {
      b.setScope("layer" + std::to_string(stage + 1) + "." + std::to_string(i));
      int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      x = e.block(x, bottleneck, inplanes, planes, stride);
    }
  }
  b.setScope("");
  x = b.node("GlobalAveragePool", {x});
  x = b.node("Flatten", {x}, {attrInt("axis", 1)});
  b.rename(gemm(b, x, "fc", inplanes, o.classes), "logits");
  b.output("logits", b.elemType(), {b.batch(), o.classes});
}

void distopt::modelgen::buildVgg16(GraphBuilder &b) {
  const ModelOptions &o = b.opts();
  b.input("input", b.elemType(), {b.batch(), 3, o.image, o.image});
  ResNetEmitter e{b};
  // torchvision cfg "D"; 0 is a max-pool. Layer indices count every module
  // (conv, relu, pool) so weight names match torchvision's state_dict.
  const int64_t cfg[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                         0,  512, 512, 512, 0,   512, 512, 512, 0};
  std::string x = "input";
  int64_t channels = 3, index = 0;
  b.setScope("features");
  for (int64_t width : cfg) {
    if (width == 0) {
      x = b.node(
          "MaxPool", {x},
          {attrInts("kernel_shape", {2, 2}), attrInts("strides", {2, 2})});
      ++index;
      continue;
    }
    x = e.relu(e.conv(x, std::to_string(index), channels, width, 3, 1,
                      /*bias=*/true));
    channels = width;
    index += 2;
  }
  // AdaptiveAvgPool2d((7, 7)) is the identity for 224x224 inputs, the case
  // torchvision's classifier is sized for; other sizes keep their
  // image/32 grid and the first Linear grows with it.
  int64_t grid = o.image / 32;
  b.setScope("classifier");
  x = b.node("Flatten", {x}, {attrInt("axis", 1)});
  x = e.relu(gemm(b, x, "0", 512 * grid * grid, 4096));
  x = e.relu(gemm(b, x, "3", 4096, 4096));
  b.rename(gemm(b, x, "6", 4096, o.classes), "logits");
  b.output("logits", b.elemType(), {b.batch(), o.classes});
}
