//===- TrainersImpl.h - What the trainer formats share ----------*- C++ -*-===//
//
// Part of DistOpt. One file per trainer (Megatron.cpp, Torchtitan.cpp,
// DeepSpeed.cpp) writes its format; these are the pieces they share.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_EXPORT_TRAINERSIMPL_H
#define DISTOPT_LIB_EXPORT_TRAINERSIMPL_H

#include "lib/Export/Trainers.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace distopt::exporting {

llvm::Expected<Export> exportMegatron(const schedule::Plan &plan,
                                      const cost::ModelDesc &model);
llvm::Expected<Export> exportTorchtitan(const schedule::Plan &plan,
                                        const cost::ModelDesc &model);
llvm::Expected<Export> exportDeepSpeed(const schedule::Plan &plan,
                                       const cost::ModelDesc &model);
llvm::Expected<ImportedPlan> importMegatron(llvm::StringRef text,
                                            llvm::StringRef file,
                                            const cost::ModelDesc &model,
                                            unsigned devices);

/// The blocks of \p model, for \p trainer (named in the message), which
/// pipelines transformer layers only: an error when \p plan pipelines a
/// model without them.
llvm::Expected<Blocks> pipelinedBlocks(const schedule::Plan &plan,
                                       const cost::ModelDesc &model,
                                       llvm::StringRef trainer);

/// Transformer blocks of every virtual stage of \p plan (finalized); a note
/// when a stage starts inside a block.
std::vector<unsigned> blocksPerStage(const schedule::Plan &plan,
                                     const Blocks &blocks,
                                     std::vector<std::string> &notes);

/// Notes for what no trainer here runs (per-stage replicas, uneven
/// micro-batch shares).
std::vector<std::string> unsupportedCommon(const schedule::Plan &plan,
                                           llvm::StringRef trainer);

/// The lines that open an exported file: model, plan, batch; each line
/// starts with \p comment.
std::string header(const schedule::Plan &plan, const cost::ModelDesc &model,
                   llvm::StringRef comment);

/// \p notes as comment lines at the end of \p text.
void appendNotes(std::string &text, const std::vector<std::string> &notes,
                 llvm::StringRef comment);

} // namespace distopt::exporting

#endif // DISTOPT_LIB_EXPORT_TRAINERSIMPL_H
