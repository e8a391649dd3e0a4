//===- AttachCluster.cpp - The dist-attach-cluster pass ----------*- C++ -*-===//
//
// Part of DistOpt. Resolves a cluster preset or YAML file and records it on
// the module as #dist.cluster, the form every later planning pass reads.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Dist/DistDialect.h"
#include "lib/Cost/ProfileDB.h"

namespace distopt {
#define GEN_PASS_DEF_ATTACHCLUSTERPASS
#include "passes/Planning/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct AttachClusterPass
    : public distopt::impl::AttachClusterPassBase<AttachClusterPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ifMissing && dist::DistDialect::ClusterAttrHelper(&getContext())
                         .isAttrPresent(module))
      return;
    if (cluster.empty()) {
      emitError(module.getLoc())
          << "dist-attach-cluster needs cluster=PRESET[:NODES] or "
             "cluster=FILE.yaml (see dist-opt --list-clusters)";
      return signalPassFailure();
    }
    llvm::Expected<cluster::Cluster> resolved =
        cluster::resolveCluster(cluster);
    if (!resolved) {
      emitError(module.getLoc()) << llvm::toString(resolved.takeError());
      return signalPassFailure();
    }
    // A profile that cannot be read is reported now, not by the first pass
    // that costs an op.
    if (!profile.empty()) {
      llvm::Expected<cost::ProfileDB> db = cost::ProfileDB::load(profile);
      if (!db) {
        emitError(module.getLoc()) << llvm::toString(db.takeError());
        return signalPassFailure();
      }
    }
    MLIRContext *ctx = &getContext();
    ctx->getOrLoadDialect<dist::DistDialect>()
        ->getClusterAttrHelper()
        .setAttr(module, dist::ClusterAttr::get(ctx, *resolved, profile));
  }
};
} // namespace
