//===- Passes.h - DistOpt's passes for client compilers ---------*- C++ -*-===//
//
// Part of DistOpt. Every pass's factory and typed options, for a client
// that builds its own pass pipeline:
//
//   distopt::AttachClusterPassOptions cluster;
//   cluster.cluster = "dgx-h100:2";
//   pm.addPass(distopt::createAttachClusterPass(cluster));
//   pm.addPass(distopt::createAnnotateLayersPass());
//
// (create<Name>Pass and <Name>PassOptions for each pass of
// `dist-opt --help`; docs/cli.md). registerDistPasses() registers them for
// textual pipelines; the two registered pipelines are in dist/Pipelines.h.
//
//===----------------------------------------------------------------------===//
#ifndef DIST_PASSES_H
#define DIST_PASSES_H

#include "dist/Dialects.h"
#include "passes/Passes.h"

#endif // DIST_PASSES_H
