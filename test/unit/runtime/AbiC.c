/*===- AbiC.c - The ABI header compiles and links as C -------------*- C -*-===//
 *
 * Generated programs may be C: this file is compiled by the C compiler and
 * drives one kernel through the ABI; AbiTest.cpp calls it.
 *
 *===----------------------------------------------------------------------===*/
#include "distrt/distrt.h"

int distrt_test_c_relu(void) {
  float x[4] = {-1.0f, 2.0f, -3.0f, 4.0f}, y[4] = {0};
  int64_t dims[1] = {4};
  distrt_tensor tx = distrt_make_tensor(x, DISTRT_F32, 1, dims);
  distrt_tensor ty = distrt_make_tensor(y, DISTRT_F32, 1, dims);
  distrt_context *ctx = NULL;
  distrt_status st = distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx);
  if (st != DISTRT_OK)
    return -1;
  st = distrt_unary(ctx, DISTRT_UNARY_RELU, &tx, &ty);
  distrt_context_destroy(ctx);
  if (st != DISTRT_OK)
    return -2;
  return (y[0] == 0.0f && y[1] == 2.0f && y[2] == 0.0f && y[3] == 4.0f) ? 0
                                                                       : -3;
}
