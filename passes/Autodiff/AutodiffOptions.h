//===- AutodiffOptions.h - Global options of dist-autodiff ------*- C++ -*-===//
//
// Part of DistOpt. Global command-line options that the dist-autodiff pass
// reads besides its pass options (today `--dist-loss`). They register
// themselves when a tool links the pass; a tool that hides unrelated
// options (cl::HideUnrelatedOptions) keeps them visible by listing this
// category too.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_AUTODIFF_AUTODIFFOPTIONS_H
#define DIST_PASSES_AUTODIFF_AUTODIFFOPTIONS_H

#include "llvm/Support/CommandLine.h"

namespace distopt::autodiff {

/// The "dist-autodiff options" category holding `--dist-loss`.
llvm::cl::OptionCategory &autodiffOptionCategory();

} // namespace distopt::autodiff

#endif // DIST_PASSES_AUTODIFF_AUTODIFFOPTIONS_H
