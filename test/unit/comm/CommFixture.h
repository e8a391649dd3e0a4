//===- CommFixture.h - A CPU context and its world communicator -*- C++ -*-===//
//
// What every communicator test starts from: a CPU context, the world's
// communicator on it (rank 0 of 1 alone, or the launcher's world under
// mpirun), this process's rank and the world's size.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TEST_UNIT_COMM_COMMFIXTURE_H
#define DISTOPT_TEST_UNIT_COMM_COMMFIXTURE_H

#include "distrt/distrt.h"

#include <gtest/gtest.h>

/// `Base` (::testing::Test or a TestWithParam) with the world set up.
template <typename Base> class WithWorld : public Base {
protected:
  void SetUp() override {
    ASSERT_EQ(distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx), DISTRT_OK);
    ASSERT_EQ(distrt_comm_create(ctx, &comm), DISTRT_OK)
        << distrt_last_error(ctx);
    ASSERT_EQ(distrt_comm_rank(comm, &rank), DISTRT_OK);
    ASSERT_EQ(distrt_comm_size(comm, &size), DISTRT_OK);
  }
  void TearDown() override {
    EXPECT_EQ(distrt_comm_destroy(comm), DISTRT_OK);
    distrt_context_destroy(ctx);
  }

  distrt_context *ctx = nullptr;
  distrt_comm *comm = nullptr;
  int32_t rank = -1, size = 0;
};

#endif // DISTOPT_TEST_UNIT_COMM_COMMFIXTURE_H
