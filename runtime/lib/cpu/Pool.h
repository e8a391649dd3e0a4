//===- Pool.h - Max pooling on channels-last data ---------------*- C++ -*-===//
//
// oneDNN 2.6's max pooling on channels-last (nhwc) data took 0.57 ms for
// ResNet-18's 3x3 stride-2 pooling of 2x64x64x64 values on an AVX2 CPU,
// where onnxruntime's (on its NCHWc layout) takes 0.11 ms. On channels-last
// data each output pixel is the elementwise maximum of the window's
// contiguous channel rows, which vectorizes over the channels as it
// stands: this loop takes 0.14 ms there (docs/benchmarks.md).
//
//===----------------------------------------------------------------------===//
#ifndef DISTRT_LIB_CPU_POOL_H
#define DISTRT_LIB_CPU_POOL_H

#include "distrt/distrt.h"

namespace distrt {
namespace cpu {

/// y = max pooling of x per `attr` (kind DISTRT_POOL_MAX), both f32 [N, C,
/// H, W] laid out channels-last (unit stride on C; the strides of N, H
/// and W are read from the tensors). Each output is the largest of the
/// window's values inside the image; padding never wins. A NaN in the
/// window is skipped as oneDNN's kernels skip it (the comparison `v >
/// max` is false), unless every value is NaN; then the output is -inf.
void maxPoolChannelsLast(const distrt_tensor &x, const distrt_tensor &y,
                         const distrt_pool2d_attr &attr);

} // namespace cpu
} // namespace distrt

#endif // DISTRT_LIB_CPU_POOL_H
