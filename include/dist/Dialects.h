//===- Dialects.h - DistOpt's dialects for client compilers -----*- C++ -*-===//
//
// Part of DistOpt. The three dialects with their ops, attributes and
// interfaces, for a client that builds or reads DistOpt IR in C++:
//
//   graph  the model: tensors, weights and the ops of deep-learning graphs
//          (distopt::graph::MatmulOp, WeightOp, UnaryOp, ...)
//   dist   the plan and its execution: #dist.plan, #dist.cluster, stages,
//          the schedule's actions, send/recv and collectives
//          (distopt::dist::PlanAttr, ScheduleOp, CollectiveOpInterface, ...)
//   emit   what the program emitters print (kernels, views, memory plans)
//
// Reference: docs/dialects/. Register them with registerAllDialects
// (dist/InitAll.h).
//
//===----------------------------------------------------------------------===//
#ifndef DIST_DIALECTS_H
#define DIST_DIALECTS_H

#include "dialects/Dist/DistDialect.h"
#include "dialects/Dist/DistOps.h"
#include "dialects/Emit/EmitDialect.h"
#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"

#endif // DIST_DIALECTS_H
