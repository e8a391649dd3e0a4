//===- Models.h - Analytic models and tables for the search bench -*- C++ -*-=//
//
// Layer-level cost descriptions of the PipeDream networks (VGG-16,
// ResNet-50, a GNMT-like LSTM stack) and BERT-Large, built from the op
// builders of lib/Cost, and the bench tables that use them.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_BENCH_SEARCH_MODELS_H
#define DISTOPT_BENCH_SEARCH_MODELS_H

#include "lib/Cost/ModelDesc.h"

#include "llvm/ADT/StringRef.h"

namespace distopt::bench {

/// VGG-16 on 224x224 images: one layer per convolution (with its ReLU and
/// pooling), three fully connected layers, softmax loss.
cost::ModelDesc buildVgg16(cluster::DType dt);
/// ResNet-50 on 224x224 images: the stem, one layer per bottleneck block
/// (a residual block is never cut), the classifier.
cost::ModelDesc buildResnet50(cluster::DType dt);
/// GNMT-like stand-in: embedding, 8 encoder + 8 decoder LSTM layers of 1024
/// units over 50 steps (gate matmuls and elementwise gates), the 32k-word
/// softmax. The recurrence is costed by its FLOPs and bytes only.
cost::ModelDesc buildGnmtLike(cluster::DType dt);
/// BERT-Large (24 x 1024, 16 heads, sequence 512, 30522 words) as
/// transformer blocks of the same cost as GPT blocks.
cost::ModelDesc buildBertLarge();

bool pipedreamTable();
bool mixedTable();
/// The search-speed rows whose model name contains \p only (all when
/// empty): `dist-bench-search speed "GPT 1T"` times one row, e.g. under a
/// profiler.
bool speedTable(llvm::StringRef only = "");

} // namespace distopt::bench

#endif // DISTOPT_BENCH_SEARCH_MODELS_H
