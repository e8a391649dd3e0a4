//===- CommTest.cpp - Communicator ABI on CPU contexts ----------*- C++ -*-===//
//
// Runs in any world: alone (rank 0 of 1, no MPI) or under
// `mpirun -np N`. Expected values are written in terms of the world size,
// so the same assertions check the local path and the MPI path.
//
//===----------------------------------------------------------------------===//
#include "CommFixture.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

class CommTest : public WithWorld<::testing::Test> {
protected:
  distrt_tensor f32(std::vector<float> &v) {
    int64_t n = (int64_t)v.size();
    return distrt_make_tensor(v.data(), DISTRT_F32, 1, &n);
  }
  std::string error() const { return distrt_last_error(ctx); }
};

TEST_F(CommTest, WorldMatchesTheLauncherEnvironment) {
  int32_t r = -1, s = 0, local = -1;
  ASSERT_EQ(distrt_comm_env(&r, &s, &local), DISTRT_OK);
  EXPECT_EQ(r, rank);
  EXPECT_EQ(s, size);
  EXPECT_GE(local, 0);
  EXPECT_STREQ(distrt_comm_backend(comm), size == 1 ? "local" : "mpi");
}

TEST_F(CommTest, AllReduceSumAndMeanInPlace) {
  // Rank r contributes (r + 1) * (i + 1).
  std::vector<float> v(37);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float((rank + 1) * (i + 1));
  std::vector<float> m = v;
  distrt_tensor t = f32(v), tm = f32(m);
  ASSERT_EQ(distrt_all_reduce(comm, &t, nullptr, DISTRT_REDUCE_SUM), DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce(comm, &tm, &tm, DISTRT_REDUCE_MEAN), DISTRT_OK)
      << error();
  float ranks = float(size * (size + 1) / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i], ranks * float(i + 1)) << "element " << i;
    EXPECT_FLOAT_EQ(m[i], ranks * float(i + 1) / float(size)) << "element " << i;
  }
}

TEST_F(CommTest, AllReduceOutOfPlaceMaxMinLeavesInput) {
  std::vector<float> in = {float(rank), -float(rank), 5.f};
  std::vector<float> mx(3), mn(3);
  distrt_tensor ti = f32(in), tx = f32(mx), tn = f32(mn);
  ASSERT_EQ(distrt_all_reduce(comm, &ti, &tx, DISTRT_REDUCE_MAX), DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce(comm, &ti, &tn, DISTRT_REDUCE_MIN), DISTRT_OK)
      << error();
  EXPECT_EQ(mx, (std::vector<float>{float(size - 1), 0.f, 5.f}));
  EXPECT_EQ(mn, (std::vector<float>{0.f, -float(size - 1), 5.f}));
  EXPECT_EQ(in, (std::vector<float>{float(rank), -float(rank), 5.f}));
}

TEST_F(CommTest, AllReduceIntegers) {
  std::vector<int64_t> v = {rank, 1, int64_t(1) << 40};
  int64_t n = 3;
  distrt_tensor t = distrt_make_tensor(v.data(), DISTRT_I64, 1, &n);
  ASSERT_EQ(distrt_all_reduce(comm, &t, nullptr, DISTRT_REDUCE_SUM), DISTRT_OK)
      << error();
  EXPECT_EQ(v[0], int64_t(size) * (size - 1) / 2);
  EXPECT_EQ(v[1], size);
  EXPECT_EQ(v[2], int64_t(size) << 40);
  std::vector<int32_t> w = {rank * 3};
  int64_t one = 1;
  distrt_tensor tw = distrt_make_tensor(w.data(), DISTRT_I32, 1, &one);
  ASSERT_EQ(distrt_all_reduce(comm, &tw, nullptr, DISTRT_REDUCE_MAX), DISTRT_OK);
  EXPECT_EQ(w[0], (size - 1) * 3);
}

TEST_F(CommTest, MeanIsBitIdenticalOnEveryRank) {
  // Values whose sum rounds: every rank must still hold the same bits.
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(float(i) * 0.37f + float(rank) * 1.3f) * 1e-3f + 0.1f;
  distrt_tensor t = f32(v);
  ASSERT_EQ(distrt_all_reduce(comm, &t, nullptr, DISTRT_REDUCE_MEAN),
            DISTRT_OK);
  std::vector<float> hi = v, lo = v;
  distrt_tensor th = f32(hi), tl = f32(lo);
  ASSERT_EQ(distrt_all_reduce(comm, &th, nullptr, DISTRT_REDUCE_MAX), DISTRT_OK);
  ASSERT_EQ(distrt_all_reduce(comm, &tl, nullptr, DISTRT_REDUCE_MIN), DISTRT_OK);
  EXPECT_EQ(0, std::memcmp(hi.data(), lo.data(), hi.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(hi.data(), v.data(), hi.size() * sizeof(float)));
}

TEST_F(CommTest, BroadcastFromTheLastRank) {
  std::vector<float> v = {float(rank), float(rank) * 2};
  distrt_tensor t = f32(v);
  ASSERT_EQ(distrt_broadcast(comm, &t, size - 1), DISTRT_OK) << error();
  EXPECT_EQ(v, (std::vector<float>{float(size - 1), float(size - 1) * 2}));
  EXPECT_EQ(distrt_barrier(comm), DISTRT_OK);
}

TEST_F(CommTest, LocalArgumentErrorsNameTheProblem) {
  std::vector<float> a(4), b(3);
  distrt_tensor ta = f32(a), tb = f32(b);
  EXPECT_EQ(distrt_all_reduce(comm, &ta, &tb, DISTRT_REDUCE_SUM),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(error().find("input's dtype and element count"), std::string::npos)
      << error();
  std::vector<int32_t> ints(4);
  int64_t n = 4;
  distrt_tensor ti = distrt_make_tensor(ints.data(), DISTRT_I32, 1, &n);
  EXPECT_EQ(distrt_all_reduce(comm, &ti, nullptr, DISTRT_REDUCE_MEAN),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(error().find("mean of i32"), std::string::npos) << error();
  distrt_tensor overlap = distrt_make_tensor(a.data() + 1, DISTRT_F32, 1, &n);
  EXPECT_EQ(distrt_all_reduce(comm, &ta, &overlap, DISTRT_REDUCE_SUM),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("overlaps"), std::string::npos) << error();
  EXPECT_EQ(distrt_broadcast(comm, &ta, size), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("is not a rank"), std::string::npos) << error();
  EXPECT_EQ(distrt_all_reduce(comm, &ta, nullptr, (distrt_reduce_op)9),
            DISTRT_ERROR_INVALID_ARGUMENT);
}

TEST(CommNullTest, NullCommunicatorIsAnError) {
  std::vector<float> a(2);
  int64_t n = 2;
  distrt_tensor t = distrt_make_tensor(a.data(), DISTRT_F32, 1, &n);
  EXPECT_EQ(distrt_all_reduce(nullptr, &t, nullptr, DISTRT_REDUCE_SUM),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(distrt_last_error(nullptr)).find("distrt_comm_create"),
            std::string::npos);
  int32_t r;
  EXPECT_EQ(distrt_comm_rank(nullptr, &r), DISTRT_ERROR_INVALID_ARGUMENT);
  distrt_comm *c = nullptr;
  EXPECT_EQ(distrt_comm_create(nullptr, &c), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(distrt_comm_destroy(nullptr), DISTRT_OK);
}

TEST_F(CommTest, MismatchedSizesAcrossRanksAreReportedOnEveryRank) {
  if (size == 1)
    GTEST_SKIP() << "needs two ranks (mpirun -np 2)";
  // Rank 0 passes 4 elements, the others 5: nobody moves data, all fail.
  std::vector<float> v(rank == 0 ? 4 : 5, 1.f);
  distrt_tensor t = f32(v);
  EXPECT_EQ(distrt_all_reduce(comm, &t, nullptr, DISTRT_REDUCE_SUM),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(error().find("mismatched arguments across ranks"),
            std::string::npos)
      << error();
  EXPECT_EQ(v[0], 1.f);
  // The communicator still works afterwards.
  std::vector<float> w = {1.f};
  distrt_tensor tw = f32(w);
  ASSERT_EQ(distrt_all_reduce(comm, &tw, nullptr, DISTRT_REDUCE_SUM), DISTRT_OK);
  EXPECT_EQ(w[0], float(size));
}

/// The 16-bit bits of \p f, which must be exact in both formats: f16 and
/// bf16 share f32's sign and keep its top mantissa bits.
static uint16_t toHalfBits(float f, distrt_dtype dt) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (dt == DISTRT_BF16 || f == 0.0f)
    return (uint16_t)(u >> 16);
  uint32_t exponent = ((u >> 23) & 0xff) - 127 + 15;
  return (uint16_t)(((u >> 16) & 0x8000) | (exponent << 10) |
                    ((u >> 13) & 0x3ff));
}

static float fromHalfBits(uint16_t h, distrt_dtype dt) {
  uint32_t u = dt == DISTRT_BF16 ? (uint32_t)h << 16
               : (h & 0x7fff) == 0
                   ? (uint32_t)(h & 0x8000) << 16
                   : ((uint32_t)(h & 0x8000) << 16) |
                         ((((h >> 10) & 0x1f) - 15 + 127) << 23) |
                         ((uint32_t)(h & 0x3ff) << 13);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A mixed-precision forward under tensor parallelism sums its 16-bit
// partial products: MPI has no type for them, the ring reduces them.
TEST_F(CommTest, HalfPrecisionReducesWithEveryOp) {
  for (distrt_dtype dt : {DISTRT_F16, DISTRT_BF16}) {
    SCOPED_TRACE(dt == DISTRT_F16 ? "f16" : "bf16");
    float r = (float)(rank + 1);
    std::vector<uint16_t> v = {toHalfBits(r, dt), toHalfBits(-0.25f * r, dt),
                               toHalfBits(0.0f, dt)};
    int64_t n = (int64_t)v.size();
    distrt_tensor t = distrt_make_tensor(v.data(), dt, 1, &n);
    std::vector<uint16_t> out(v.size());
    distrt_tensor o = distrt_make_tensor(out.data(), dt, 1, &n);
    float total = size * (size + 1) / 2.0f;
    ASSERT_EQ(distrt_all_reduce(comm, &t, &o, DISTRT_REDUCE_MAX), DISTRT_OK)
        << error();
    EXPECT_EQ(fromHalfBits(out[0], dt), (float)size);
    EXPECT_EQ(fromHalfBits(out[1], dt), -0.25f);
    ASSERT_EQ(distrt_all_reduce(comm, &t, &o, DISTRT_REDUCE_MIN), DISTRT_OK)
        << error();
    EXPECT_EQ(fromHalfBits(out[0], dt), 1.0f);
    ASSERT_EQ(distrt_all_reduce(comm, &t, &o, DISTRT_REDUCE_MEAN), DISTRT_OK)
        << error();
    EXPECT_EQ(fromHalfBits(out[0], dt), total / size);
    ASSERT_EQ(distrt_all_reduce(comm, &t, nullptr, DISTRT_REDUCE_SUM),
              DISTRT_OK)
        << error();
    EXPECT_EQ(fromHalfBits(v[0], dt), total);
    EXPECT_EQ(fromHalfBits(v[1], dt), -0.25f * total);
    EXPECT_EQ(fromHalfBits(v[2], dt), 0.0f);
  }
}

// A broadcast copies the root's bytes: 16-bit floats arrive bit for bit,
// NaN payloads and the sign of zero included (no arithmetic touches them).
TEST_F(CommTest, HalfPrecisionBroadcastCarriesTheRootsBits) {
  for (distrt_dtype dt : {DISTRT_F16, DISTRT_BF16}) {
    SCOPED_TRACE(dt == DISTRT_F16 ? "f16" : "bf16");
    const int32_t root = size - 1;
    auto bitsOf = [](int32_t r) {
      // Every element a function of its index and the rank.
      std::vector<uint16_t> v(1001);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = (uint16_t)(i * 40503u + (uint32_t)r * 977u);
      v[0] = 0x8000;               // -0
      v[1] = 0x7fc1 ^ (uint16_t)r; // a NaN (in both formats) with a payload
      return v;
    };
    std::vector<uint16_t> v = bitsOf(rank);
    int64_t n = (int64_t)v.size();
    distrt_tensor t = distrt_make_tensor(v.data(), dt, 1, &n);
    ASSERT_EQ(distrt_broadcast(comm, &t, root), DISTRT_OK) << error();
    EXPECT_EQ(v, bitsOf(root));
  }
}

TEST_F(CommTest, SendRecvBetweenRanks) {
  if (size == 1)
    GTEST_SKIP() << "needs two ranks (mpirun -np 2)";
  // Rank 0 sends floats (tag 5) and i64 (tag 6) to rank 1, which answers
  // with f16 bits (tag 5: tags are per direction). Other ranks idle.
  std::vector<float> f(37);
  std::vector<int64_t> l(3);
  std::vector<uint16_t> h(4);
  int64_t nl = 3, nh = 4;
  distrt_tensor tf = f32(f);
  distrt_tensor tl = distrt_make_tensor(l.data(), DISTRT_I64, 1, &nl);
  distrt_tensor th = distrt_make_tensor(h.data(), DISTRT_F16, 1, &nh);
  if (rank == 0) {
    for (size_t i = 0; i < f.size(); ++i)
      f[i] = 0.5f * float(i) - 3.f;
    l = {1, -2, int64_t(1) << 40};
    ASSERT_EQ(distrt_send(comm, &tf, 1, 5), DISTRT_OK) << error();
    ASSERT_EQ(distrt_send(comm, &tl, 1, 6), DISTRT_OK) << error();
    ASSERT_EQ(distrt_recv(comm, &th, 1, 5), DISTRT_OK) << error();
    EXPECT_EQ(h, (std::vector<uint16_t>{0x3c00, 0x4000, 0xbc00, 0x7bff}));
  } else if (rank == 1) {
    ASSERT_EQ(distrt_recv(comm, &tf, 0, 5), DISTRT_OK) << error();
    ASSERT_EQ(distrt_recv(comm, &tl, 0, 6), DISTRT_OK) << error();
    for (size_t i = 0; i < f.size(); ++i)
      EXPECT_EQ(f[i], 0.5f * float(i) - 3.f) << i;
    EXPECT_EQ(l, (std::vector<int64_t>{1, -2, int64_t(1) << 40}));
    h = {0x3c00, 0x4000, 0xbc00, 0x7bff};
    ASSERT_EQ(distrt_send(comm, &th, 0, 5), DISTRT_OK) << error();
  }
}

TEST_F(CommTest, SendRecvArgumentErrors) {
  std::vector<float> v(2, 1.f);
  distrt_tensor t = f32(v);
  EXPECT_EQ(distrt_send(comm, &t, size, 0), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("distrt_send: peer " + std::to_string(size) +
                         " is not a rank of this world of " +
                         std::to_string(size)),
            std::string::npos)
      << error();
  EXPECT_EQ(distrt_recv(comm, &t, -1, 0), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("peer -1 is not a rank"), std::string::npos)
      << error();
  EXPECT_EQ(distrt_send(comm, &t, rank, 0), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("is this rank itself"), std::string::npos) << error();
  EXPECT_EQ(distrt_recv(comm, &t, rank, 0), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("distrt_recv: peer"), std::string::npos) << error();
  if (size > 1) {
    EXPECT_EQ(distrt_send(comm, &t, (rank + 1) % size, -3),
              DISTRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(error().find("tag -3 is outside"), std::string::npos) << error();
  }
  EXPECT_EQ(distrt_send(nullptr, &t, 0, 0), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(v, (std::vector<float>{1.f, 1.f}));
}

TEST_F(CommTest, RecvOfAnotherSizeNamesBothSidesAndWritesNothing) {
  if (size == 1)
    GTEST_SKIP() << "needs two ranks (mpirun -np 2)";
  if (rank == 0) {
    std::vector<float> five = {1, 2, 3, 4, 5}, four = {6, 7, 8, 9};
    distrt_tensor t5 = f32(five), t4 = f32(four);
    ASSERT_EQ(distrt_send(comm, &t5, 1, 9), DISTRT_OK) << error();
    // The channel still works after the receiver refused a message.
    ASSERT_EQ(distrt_send(comm, &t4, 1, 9), DISTRT_OK) << error();
    std::vector<int32_t> i = {42};
    int64_t one = 1;
    distrt_tensor ti = distrt_make_tensor(i.data(), DISTRT_I32, 1, &one);
    ASSERT_EQ(distrt_send(comm, &ti, 1, 9), DISTRT_OK) << error();
  } else if (rank == 1) {
    // The tensor covers the first 4 of 8 floats: nothing may be written.
    std::vector<float> buf(8, -1.f);
    int64_t four = 4;
    distrt_tensor t = distrt_make_tensor(buf.data(), DISTRT_F32, 1, &four);
    EXPECT_EQ(distrt_recv(comm, &t, 0, 9), DISTRT_ERROR_SHAPE_MISMATCH);
    EXPECT_NE(error().find("distrt_recv: rank 1 receives f32 x 4 elements "
                           "from rank 0 (tag 9) but rank 0 sent f32 x 5 "
                           "elements"),
              std::string::npos)
        << error();
    EXPECT_EQ(buf, std::vector<float>(8, -1.f));
    ASSERT_EQ(distrt_recv(comm, &t, 0, 9), DISTRT_OK) << error();
    EXPECT_EQ(buf, (std::vector<float>{6, 7, 8, 9, -1, -1, -1, -1}));
    // Same byte count, other dtype: refused as well.
    EXPECT_EQ(distrt_recv(comm, &t, 0, 9), DISTRT_ERROR_SHAPE_MISMATCH);
    EXPECT_NE(error().find("rank 0 sent i32 x 1 elements"), std::string::npos)
        << error();
    EXPECT_EQ(buf[0], 6.f);
  }
}

TEST_F(CommTest, GroupsReduceOverTheirOwnRanks) {
  // Ranks of the same parity form a group, listed from the highest rank
  // down: group rank k is the k-th listed world rank.
  std::vector<int32_t> members;
  for (int32_t r = size - 1; r >= 0; --r)
    if (r % 2 == rank % 2)
      members.push_back(r);
  distrt_comm *g = nullptr;
  ASSERT_EQ(distrt_comm_group(comm, members.data(), (int32_t)members.size(),
                              &g),
            DISTRT_OK)
      << error();
  int32_t grank = -1, gsize = 0;
  ASSERT_EQ(distrt_comm_rank(g, &grank), DISTRT_OK);
  ASSERT_EQ(distrt_comm_size(g, &gsize), DISTRT_OK);
  EXPECT_EQ(gsize, (int32_t)members.size());
  EXPECT_EQ(members[(size_t)grank], rank);
  EXPECT_STREQ(distrt_comm_backend(g), gsize == 1 ? "local" : "mpi");
  std::vector<float> v(5, float(rank + 1));
  distrt_tensor t = f32(v);
  ASSERT_EQ(distrt_all_reduce(g, &t, nullptr, DISTRT_REDUCE_SUM), DISTRT_OK)
      << error();
  float want = 0;
  for (int32_t r : members)
    want += float(r + 1);
  EXPECT_EQ(v, std::vector<float>(5, want));
  EXPECT_EQ(distrt_comm_destroy(g), DISTRT_OK);
  // Every rank, in reverse: an MPI group as large as the world.
  std::vector<int32_t> reversed;
  for (int32_t r = size - 1; r >= 0; --r)
    reversed.push_back(r);
  ASSERT_EQ(distrt_comm_group(comm, reversed.data(), size, &g), DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_comm_rank(g, &grank), DISTRT_OK);
  EXPECT_EQ(grank, size - 1 - rank);
  std::vector<float> sent(3, float(10 + grank)), got(3, 0.f);
  distrt_tensor ts = f32(sent), tg = f32(got);
  if (size > 1 && grank == 0) {
    ASSERT_EQ(distrt_send(g, &ts, 1, 3), DISTRT_OK) << error();
  }
  if (size > 1 && grank == 1) {
    ASSERT_EQ(distrt_recv(g, &tg, 0, 3), DISTRT_OK) << error();
    EXPECT_EQ(got, std::vector<float>(3, 10.f));
  }
  EXPECT_EQ(distrt_comm_destroy(g), DISTRT_OK);
  // The world still works after the groups are gone.
  std::vector<float> w(1, 1.f);
  distrt_tensor tw = f32(w);
  ASSERT_EQ(distrt_all_reduce(comm, &tw, nullptr, DISTRT_REDUCE_SUM),
            DISTRT_OK)
      << error();
  EXPECT_EQ(w[0], float(size));
}

TEST_F(CommTest, GroupArgumentErrors) {
  distrt_comm *g = nullptr;
  int32_t twice[2] = {rank, rank};
  EXPECT_EQ(distrt_comm_group(comm, twice, 2, &g),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find(size == 1 ? "a group of 2 rank(s) in a world of 1"
                                   : "is listed twice"),
            std::string::npos)
      << error();
  int32_t outside[1] = {size};
  EXPECT_EQ(distrt_comm_group(comm, outside, 1, &g),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("outside the world"), std::string::npos) << error();
  if (size > 1) {
    int32_t other[1] = {(rank + 1) % size};
    EXPECT_EQ(distrt_comm_group(comm, other, 1, &g),
              DISTRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(error().find("is not in the group it joins"), std::string::npos)
        << error();
  }
  EXPECT_EQ(g, nullptr);
}

TEST_F(CommTest, ReceiveFromASilentPeerTimesOut) {
  EXPECT_EQ(distrt_comm_set_timeout(comm, -1), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("-1 is not a number of seconds"), std::string::npos)
      << error();
  if (size == 1)
    GTEST_SKIP() << "needs two ranks (mpirun -np 2)";
  ASSERT_EQ(distrt_comm_set_timeout(comm, 0.2), DISTRT_OK);
  // Rank 1 never sends tag 77: rank 0's receive gives up and says whom it
  // waited for.
  if (rank == 0) {
    std::vector<float> v(3, 0.f);
    distrt_tensor t = f32(v);
    EXPECT_EQ(distrt_recv(comm, &t, 1, 77), DISTRT_ERROR_TIMEOUT);
    EXPECT_NE(error().find("distrt_recv: rank 0 waited 0.2 s for a message "
                           "from rank 1 and got nothing"),
              std::string::npos)
        << error();
  }
  ASSERT_EQ(distrt_comm_set_timeout(comm, 60), DISTRT_OK);
  ASSERT_EQ(distrt_barrier(comm), DISTRT_OK) << error();
}

TEST_F(CommTest, ReduceScatterGivesEachRankItsBlock) {
  // Rank r contributes r + 1 + i at element i of size blocks of 5.
  const int64_t block = 5;
  std::vector<float> in((size_t)(block * size)), out((size_t)block, -1.f);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(rank + 1) + float(i);
  distrt_tensor ti = f32(in), to = f32(out);
  ASSERT_EQ(distrt_reduce_scatter(comm, &ti, &to, DISTRT_REDUCE_SUM),
            DISTRT_OK)
      << error();
  float ranksSum = float(size) * float(size + 1) / 2;
  for (int64_t k = 0; k < block; ++k)
    EXPECT_EQ(out[(size_t)k],
              ranksSum + float(size) * float(rank * block + k))
        << k;
  ASSERT_EQ(distrt_reduce_scatter(comm, &ti, &to, DISTRT_REDUCE_MEAN),
            DISTRT_OK)
      << error();
  EXPECT_FLOAT_EQ(out[0], ranksSum / float(size) + float(rank * block));
  // The output must be one block.
  std::vector<float> wrong((size_t)block + 1);
  distrt_tensor tw = f32(wrong);
  EXPECT_EQ(distrt_reduce_scatter(comm, &ti, &tw, DISTRT_REDUCE_SUM),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(error().find("the input needs " + std::to_string(size) +
                         " x the output's elements"),
            std::string::npos)
      << error();
}

TEST_F(CommTest, AllGatherConcatenatesInRankOrder) {
  std::vector<int64_t> mine = {10 * rank, 10 * rank + 1, 10 * rank + 2};
  std::vector<int64_t> all((size_t)(3 * size), -1);
  int64_t n3 = 3, nAll = 3 * size;
  distrt_tensor ti = distrt_make_tensor(mine.data(), DISTRT_I64, 1, &n3);
  distrt_tensor to = distrt_make_tensor(all.data(), DISTRT_I64, 1, &nAll);
  ASSERT_EQ(distrt_all_gather(comm, &ti, &to), DISTRT_OK) << error();
  for (int32_t r = 0; r < size; ++r)
    for (int64_t k = 0; k < 3; ++k)
      EXPECT_EQ(all[(size_t)(3 * r + k)], 10 * r + k);
}

TEST_F(CommTest, AllToAllExchangesPiecesAlongEveryPairOfAxes) {
  // Input [2n, 3n, 2n] of rank r holds value(r, i, j, k); after the
  // exchange, output piece p along the concat axis is rank p's piece r
  // along the split axis.
  const int64_t n = size;
  const int64_t dims[3] = {2 * n, 3 * n, 2 * n};
  auto value = [](int64_t r, int64_t i, int64_t j, int64_t k) {
    return float(r * 10000 + i * 1000 + j * 10 + k);
  };
  std::vector<float> in((size_t)(dims[0] * dims[1] * dims[2]));
  for (int64_t i = 0; i < dims[0]; ++i)
    for (int64_t j = 0; j < dims[1]; ++j)
      for (int64_t k = 0; k < dims[2]; ++k)
        in[(size_t)((i * dims[1] + j) * dims[2] + k)] = value(rank, i, j, k);
  for (int32_t split = 0; split < 3; ++split)
    for (int32_t concat = 0; concat < 3; ++concat) {
      int64_t od[3] = {dims[0], dims[1], dims[2]};
      od[split] /= n;
      int64_t piece = od[split];
      od[concat] *= n;
      std::vector<float> out(in.size(), -1.f);
      distrt_tensor ti = distrt_make_tensor(in.data(), DISTRT_F32, 3, dims);
      distrt_tensor to = distrt_make_tensor(out.data(), DISTRT_F32, 3, od);
      ASSERT_EQ(distrt_all_to_all(comm, &ti, &to, split, concat), DISTRT_OK)
          << error();
      int64_t concatPiece = od[concat] / n;
      for (int64_t i = 0; i < od[0]; ++i)
        for (int64_t j = 0; j < od[1]; ++j)
          for (int64_t k = 0; k < od[2]; ++k) {
            int64_t at[3] = {i, j, k};
            // The sending rank and its coordinates.
            int64_t from = at[concat] / concatPiece;
            at[concat] %= concatPiece;
            at[split] += rank * piece;
            ASSERT_EQ(out[(size_t)((i * od[1] + j) * od[2] + k)],
                      value(from, at[0], at[1], at[2]))
                << "split " << split << " concat " << concat << " at " << i
                << "," << j << "," << k;
          }
    }
}

TEST_F(CommTest, AllToAllArgumentErrors) {
  const int64_t n = size;
  std::vector<float> in((size_t)(2 * n * 3)), out(in.size());
  int64_t dims[2] = {2 * n, 3}, od[2] = {2, 3 * n};
  distrt_tensor ti = distrt_make_tensor(in.data(), DISTRT_F32, 2, dims);
  distrt_tensor to = distrt_make_tensor(out.data(), DISTRT_F32, 2, od);
  EXPECT_EQ(distrt_all_to_all(comm, &ti, &to, 0, 2),
            DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("distrt_all_to_all: split axis 0 and concat axis 2 "
                         "of a rank-2 input"),
            std::string::npos)
      << error();
  // The output must have the exchanged shape.
  std::vector<float> wrong(in.size() + 1);
  int64_t wd[2] = {2, 3 * n + 1};
  distrt_tensor tw = distrt_make_tensor(wrong.data(), DISTRT_F32, 2, wd);
  EXPECT_EQ(distrt_all_to_all(comm, &ti, &tw, 0, 1),
            DISTRT_ERROR_SHAPE_MISMATCH);
  if (size > 1) {
    // n + 1 rows cannot be shared by the ranks.
    int64_t odd[2] = {n + 1, 2};
    distrt_tensor tu = distrt_make_tensor(in.data(), DISTRT_F32, 2, odd);
    EXPECT_EQ(distrt_all_to_all(comm, &tu, &to, 0, 1),
              DISTRT_ERROR_SHAPE_MISMATCH);
    EXPECT_NE(error().find("cannot share equally"), std::string::npos)
        << error();
  }
}

TEST_F(CommTest, RingAllReduceOfUnevenBlocksIsBitIdentical) {
  // 1000003 elements: blocks of unequal length on any world size; values
  // whose sum depends on the order, so every rank must hold the one
  // reduction's bits.
  std::vector<float> v(1000003);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(float(i) * 0.37f + float(rank)) * 1e3f + 1e-3f * float(i);
  distrt_tensor t = f32(v);
  ASSERT_EQ(distrt_all_reduce(comm, &t, nullptr, DISTRT_REDUCE_MEAN),
            DISTRT_OK)
      << error();
  // Rank 0's result everywhere: broadcast it and compare bits.
  std::vector<float> root = v;
  distrt_tensor tr = f32(root);
  ASSERT_EQ(distrt_broadcast(comm, &tr, 0), DISTRT_OK) << error();
  EXPECT_EQ(std::memcmp(root.data(), v.data(), v.size() * sizeof(float)), 0);
  double want = 0;
  for (int32_t r = 0; r < size; ++r)
    want += std::sin(float(12345) * 0.37f + float(r)) * 1e3f +
            1e-3f * float(12345);
  EXPECT_NEAR(v[12345], want / size, 1e-3);
}

//===----------------------------------------------------------------------===//
// Started all-reduces (distrt_all_reduce_start, distrt_wait)
//===----------------------------------------------------------------------===//

/// Values whose sum depends on the order of the reduction, so equal bits
/// mean the same reduction.
std::vector<float> roundingValues(size_t n, int32_t rank, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(float(i) * 0.37f + float(rank) * 1.3f + seed) * 1e3f +
           1e-3f * float(i % 1000);
  return v;
}

TEST_F(CommTest, StartedAllReducesGiveTheBlockingCallsBits) {
  // Sum in place, mean out of place, a large mean in place (4 MB), and an
  // integer max out of place: the blocking call on copies first, then the
  // same started together, with local work in between, waited in order.
  std::vector<float> a = roundingValues(37, rank, 0.f);
  std::vector<float> b = roundingValues(1000, rank, 1.f);
  std::vector<float> bOut(b.size(), -1.f);
  std::vector<float> big = roundingValues((size_t(1) << 20) + 3, rank, 2.f);
  std::vector<int32_t> ints = {rank, -rank, 7};
  int64_t nInts = 3;
  std::vector<int32_t> intsOut(3, -1);

  std::vector<float> wantA = a, wantB(b.size()), wantBig = big;
  std::vector<int32_t> wantInts(3);
  distrt_tensor twa = f32(wantA), tb = f32(b), twb = f32(wantB),
                twbig = f32(wantBig);
  distrt_tensor ti = distrt_make_tensor(ints.data(), DISTRT_I32, 1, &nInts);
  distrt_tensor twi =
      distrt_make_tensor(wantInts.data(), DISTRT_I32, 1, &nInts);
  ASSERT_EQ(distrt_all_reduce(comm, &twa, nullptr, DISTRT_REDUCE_SUM),
            DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce(comm, &tb, &twb, DISTRT_REDUCE_MEAN), DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce(comm, &twbig, &twbig, DISTRT_REDUCE_MEAN),
            DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce(comm, &ti, &twi, DISTRT_REDUCE_MAX), DISTRT_OK)
      << error();

  distrt_tensor ta = f32(a), tbo = f32(bOut), tbig = f32(big);
  distrt_tensor tio = distrt_make_tensor(intsOut.data(), DISTRT_I32, 1, &nInts);
  distrt_request *ra = nullptr, *rb = nullptr, *rbig = nullptr, *ri = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(comm, &ta, nullptr, DISTRT_REDUCE_SUM, &ra),
            DISTRT_OK)
      << error();
  ASSERT_NE(ra, nullptr);
  ASSERT_EQ(distrt_all_reduce_start(comm, &tb, &tbo, DISTRT_REDUCE_MEAN, &rb),
            DISTRT_OK)
      << error();
  // Local work while the collectives run (the descriptors may go).
  double local = 0;
  for (int k = 0; k < 200000; ++k)
    local += std::sqrt(double(k));
  ASSERT_EQ(
      distrt_all_reduce_start(comm, &tbig, &tbig, DISTRT_REDUCE_MEAN, &rbig),
      DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce_start(comm, &ti, &tio, DISTRT_REDUCE_MAX, &ri),
            DISTRT_OK)
      << error();
  for (int k = 0; k < 200000; ++k)
    local += std::cbrt(double(k));
  EXPECT_GT(local, 0.0);
  EXPECT_EQ(distrt_wait(ra), DISTRT_OK) << error();
  EXPECT_EQ(distrt_wait(rb), DISTRT_OK) << error();
  EXPECT_EQ(distrt_wait(rbig), DISTRT_OK) << error();
  EXPECT_EQ(distrt_wait(ri), DISTRT_OK) << error();
  EXPECT_EQ(std::memcmp(a.data(), wantA.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(bOut.data(), wantB.data(), b.size() * sizeof(float)),
            0);
  EXPECT_EQ(std::memcmp(big.data(), wantBig.data(), big.size() * sizeof(float)),
            0);
  EXPECT_EQ(intsOut, wantInts);
  EXPECT_EQ(intsOut, (std::vector<int32_t>{size - 1, 0, 7}));
  EXPECT_EQ(ints, (std::vector<int32_t>{rank, -rank, 7}));
  EXPECT_EQ(b, roundingValues(1000, rank, 1.f)) << "the input was written";
}

TEST_F(CommTest, BlockingCollectivesRunAfterTheStartedOnes) {
  // Each blocking collective is called while a started all-reduce is
  // pending: both give their answers, in the order every rank issued them.
  std::vector<float> pending(1000, float(rank + 1));
  distrt_tensor tp = f32(pending);
  float ranks = float(size * (size + 1) / 2);
  distrt_request *r = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(comm, &tp, nullptr, DISTRT_REDUCE_SUM, &r),
            DISTRT_OK)
      << error();
  std::vector<float> now(5, float(rank));
  distrt_tensor tn = f32(now);
  ASSERT_EQ(distrt_all_reduce(comm, &tn, nullptr, DISTRT_REDUCE_MAX), DISTRT_OK)
      << error();
  EXPECT_EQ(now, std::vector<float>(5, float(size - 1)));
  ASSERT_EQ(distrt_wait(r), DISTRT_OK) << error();
  EXPECT_EQ(pending, std::vector<float>(1000, ranks));

  // In place over the same data: the blocking call sees the started one's
  // result.
  std::vector<float> v(300, 1.f);
  distrt_tensor tv = f32(v);
  ASSERT_EQ(distrt_all_reduce_start(comm, &tv, nullptr, DISTRT_REDUCE_SUM, &r),
            DISTRT_OK)
      << error();
  std::vector<float> root = {float(rank)};
  distrt_tensor tr = f32(root);
  ASSERT_EQ(distrt_broadcast(comm, &tr, size - 1), DISTRT_OK) << error();
  EXPECT_EQ(root[0], float(size - 1));
  ASSERT_EQ(distrt_barrier(comm), DISTRT_OK) << error();
  ASSERT_EQ(distrt_wait(r), DISTRT_OK) << error();
  EXPECT_EQ(v, std::vector<float>(300, float(size)));

  // Started, started, blocking, waited in reverse.
  std::vector<float> x(10, 1.f), y(10, 2.f), z(10, 3.f);
  distrt_tensor tx = f32(x), ty = f32(y), tz = f32(z);
  distrt_request *rx = nullptr, *ry = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(comm, &tx, nullptr, DISTRT_REDUCE_SUM, &rx),
            DISTRT_OK);
  ASSERT_EQ(
      distrt_all_reduce_start(comm, &ty, nullptr, DISTRT_REDUCE_MEAN, &ry),
      DISTRT_OK);
  ASSERT_EQ(distrt_all_reduce(comm, &tz, nullptr, DISTRT_REDUCE_SUM), DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_wait(ry), DISTRT_OK) << error();
  ASSERT_EQ(distrt_wait(rx), DISTRT_OK) << error();
  EXPECT_EQ(x, std::vector<float>(10, float(size)));
  EXPECT_EQ(y, std::vector<float>(10, 2.f));
  EXPECT_EQ(z, std::vector<float>(10, 3.f * float(size)));
}

TEST_F(CommTest, SendRecvWhileAnAllReduceIsPending) {
  if (size == 1)
    GTEST_SKIP() << "needs two ranks (mpirun -np 2)";
  // A large ring all-reduce in flight on the worker while ranks 0 and 1
  // exchange messages on the caller's thread.
  std::vector<float> grads((size_t(1) << 20) + 7, float(rank + 1));
  distrt_tensor tg = f32(grads);
  distrt_request *r = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(comm, &tg, nullptr, DISTRT_REDUCE_SUM, &r),
            DISTRT_OK)
      << error();
  std::vector<float> msg(100);
  distrt_tensor tm = f32(msg);
  for (int round = 0; round < 5; ++round) {
    if (rank == 0) {
      for (size_t i = 0; i < msg.size(); ++i)
        msg[i] = float(round * 1000 + (int)i);
      ASSERT_EQ(distrt_send(comm, &tm, 1, round), DISTRT_OK) << error();
      ASSERT_EQ(distrt_recv(comm, &tm, 1, round), DISTRT_OK) << error();
      EXPECT_EQ(msg[99], -float(round * 1000 + 99));
    } else if (rank == 1) {
      ASSERT_EQ(distrt_recv(comm, &tm, 0, round), DISTRT_OK) << error();
      EXPECT_EQ(msg[99], float(round * 1000 + 99));
      for (float &m : msg)
        m = -m;
      ASSERT_EQ(distrt_send(comm, &tm, 0, round), DISTRT_OK) << error();
    }
  }
  ASSERT_EQ(distrt_wait(r), DISTRT_OK) << error();
  EXPECT_EQ(grads,
            std::vector<float>(grads.size(), float(size * (size + 1) / 2)));
}

TEST_F(CommTest, StartArgumentErrorsFailAtOnce) {
  std::vector<float> a(4), b(3);
  distrt_tensor ta = f32(a), tb = f32(b);
  distrt_request *r = reinterpret_cast<distrt_request *>(&a);
  EXPECT_EQ(
      distrt_all_reduce_start(comm, &ta, nullptr, DISTRT_REDUCE_SUM, nullptr),
      DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("distrt_all_reduce_start: argument 'request' is NULL"),
            std::string::npos)
      << error();
  EXPECT_EQ(distrt_all_reduce_start(comm, &ta, &tb, DISTRT_REDUCE_SUM, &r),
            DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(error().find("distrt_all_reduce_start: output is f32 [3] but "
                         "input is f32 [4]"),
            std::string::npos)
      << error();
  EXPECT_EQ(r, nullptr);
  std::vector<int32_t> ints(4);
  int64_t n = 4;
  distrt_tensor ti = distrt_make_tensor(ints.data(), DISTRT_I32, 1, &n);
  EXPECT_EQ(distrt_all_reduce_start(comm, &ti, nullptr, DISTRT_REDUCE_MEAN, &r),
            DISTRT_ERROR_UNSUPPORTED);
  EXPECT_NE(error().find("mean of i32"), std::string::npos) << error();
  EXPECT_EQ(
      distrt_all_reduce_start(nullptr, &ta, nullptr, DISTRT_REDUCE_SUM, &r),
      DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(distrt_last_error(nullptr)).find("distrt_comm_create"),
            std::string::npos);
  EXPECT_EQ(distrt_wait(nullptr), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(distrt_last_error(nullptr))
                .find("distrt_wait: request is NULL"),
            std::string::npos)
      << distrt_last_error(nullptr);
  // No collective was issued: the communicator still agrees across ranks.
  std::vector<float> w = {1.f};
  distrt_tensor tw = f32(w);
  ASSERT_EQ(distrt_all_reduce(comm, &tw, nullptr, DISTRT_REDUCE_SUM), DISTRT_OK)
      << error();
  EXPECT_EQ(w[0], float(size));
}

TEST_F(CommTest, StartedMismatchFailsAtWaitOnEveryRank) {
  if (size == 1)
    GTEST_SKIP() << "needs two ranks (mpirun -np 2)";
  // Rank 0 starts 4 elements, the others 5; a good one is started behind
  // it and still runs.
  std::vector<float> v(rank == 0 ? 4 : 5, 1.f), w = {1.f};
  distrt_tensor t = f32(v), tw = f32(w);
  distrt_request *bad = nullptr, *good = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(comm, &t, nullptr, DISTRT_REDUCE_SUM, &bad),
            DISTRT_OK)
      << error();
  ASSERT_EQ(
      distrt_all_reduce_start(comm, &tw, nullptr, DISTRT_REDUCE_SUM, &good),
      DISTRT_OK)
      << error();
  EXPECT_EQ(distrt_wait(bad), DISTRT_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(error().find("distrt_all_reduce_start: mismatched arguments "
                         "across ranks"),
            std::string::npos)
      << error();
  EXPECT_NE(std::string(distrt_last_error(nullptr))
                .find("mismatched arguments across ranks"),
            std::string::npos);
  EXPECT_EQ(v[0], 1.f);
  EXPECT_EQ(distrt_wait(good), DISTRT_OK) << error();
  EXPECT_EQ(w[0], float(size));
}

TEST_F(CommTest, StartedTimeoutIsReportedByWaitOnly) {
  if (size == 1)
    GTEST_SKIP() << "needs two ranks (mpirun -np 2)";
  // A group of ranks 0 and 1 where rank 1 never joins rank 0's all-reduce:
  // the worker gives up after the timeout, leaves the context alone, and
  // distrt_wait names the silent peer.
  int32_t pair[2] = {0, 1};
  distrt_comm *g = nullptr;
  if (rank <= 1) {
    ASSERT_EQ(distrt_comm_group(comm, pair, 2, &g), DISTRT_OK) << error();
    ASSERT_EQ(distrt_comm_set_timeout(g, 0.2), DISTRT_OK);
  }
  if (rank == 0) {
    std::vector<float> v(8, 1.f);
    distrt_tensor t = f32(v);
    distrt_request *r = nullptr;
    EXPECT_EQ(distrt_all_reduce(nullptr, &t, nullptr, DISTRT_REDUCE_SUM),
              DISTRT_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ(distrt_comm_set_timeout(comm, -1), DISTRT_ERROR_INVALID_ARGUMENT);
    std::string before = error();
    ASSERT_EQ(distrt_all_reduce_start(g, &t, nullptr, DISTRT_REDUCE_SUM, &r),
              DISTRT_OK)
        << error();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(error(), before) << "the worker wrote the context";
    EXPECT_EQ(distrt_wait(r), DISTRT_ERROR_TIMEOUT);
    EXPECT_NE(error().find("distrt_all_reduce_start: rank 0 waited 0.2 s for"),
              std::string::npos)
        << error();
    EXPECT_NE(error().find("rank(s) of its group"), std::string::npos)
        << error();
  }
  if (g) {
    EXPECT_EQ(distrt_comm_destroy(g), DISTRT_OK);
  }
  ASSERT_EQ(distrt_barrier(comm), DISTRT_OK) << error();
}

TEST_F(CommTest, StartedAllReducesOnAGroupAndTheWorld) {
  // Ranks of the same parity form a group: an all-reduce started on it
  // and one on the world run side by side; destroying the group completes
  // its pending one, whose request is still waited.
  std::vector<int32_t> members;
  for (int32_t r = 0; r < size; ++r)
    if (r % 2 == rank % 2)
      members.push_back(r);
  distrt_comm *g = nullptr;
  ASSERT_EQ(
      distrt_comm_group(comm, members.data(), (int32_t)members.size(), &g),
      DISTRT_OK)
      << error();
  std::vector<float> gv(5000, float(rank + 1)), wv(5000, 1.f),
      gv2(70, float(rank));
  distrt_tensor tg = f32(gv), tw = f32(wv), tg2 = f32(gv2);
  distrt_request *rg = nullptr, *rw = nullptr, *rg2 = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(g, &tg, nullptr, DISTRT_REDUCE_SUM, &rg),
            DISTRT_OK)
      << error();
  ASSERT_EQ(
      distrt_all_reduce_start(comm, &tw, nullptr, DISTRT_REDUCE_MEAN, &rw),
      DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce_start(g, &tg2, nullptr, DISTRT_REDUCE_MAX, &rg2),
            DISTRT_OK)
      << error();
  EXPECT_EQ(distrt_wait(rg), DISTRT_OK) << error();
  EXPECT_EQ(distrt_comm_destroy(g), DISTRT_OK);
  EXPECT_EQ(distrt_wait(rg2), DISTRT_OK) << error();
  EXPECT_EQ(distrt_wait(rw), DISTRT_OK) << error();
  float want = 0;
  for (int32_t r : members)
    want += float(r + 1);
  EXPECT_EQ(gv, std::vector<float>(5000, want));
  EXPECT_EQ(gv2, std::vector<float>(70, float(members.back())));
  EXPECT_EQ(wv, std::vector<float>(5000, 1.f));
}

TEST_F(CommTest, WithoutAWorkerStartedAllReducesRunWhenWaitedFor) {
  // distrt_comm_set_overlap(comm, 0): nothing runs until a wait needs it
  // (the waited one alone) or a blocking collective or a change of the
  // setting does (every pending one, first started first).
  ASSERT_EQ(distrt_comm_set_overlap(comm, 0), DISTRT_OK) << error();
  std::vector<float> x(10, 1.f), y(4000, float(rank)), z(3, 2.f);
  distrt_tensor tx = f32(x), ty = f32(y), tz = f32(z);
  distrt_request *rx = nullptr, *ry = nullptr, *rz = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(comm, &tx, nullptr, DISTRT_REDUCE_SUM, &rx),
            DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_all_reduce_start(comm, &ty, nullptr, DISTRT_REDUCE_MAX, &ry),
            DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_wait(ry), DISTRT_OK) << error();
  EXPECT_EQ(y, std::vector<float>(4000, float(size - 1)));
  ASSERT_EQ(
      distrt_all_reduce_start(comm, &tz, nullptr, DISTRT_REDUCE_MEAN, &rz),
      DISTRT_OK)
      << error();
  // The same setting again completes the pending ones too.
  std::vector<float> w(3, 1.f);
  distrt_tensor tw = f32(w);
  distrt_request *rw = nullptr;
  ASSERT_EQ(distrt_all_reduce_start(comm, &tw, nullptr, DISTRT_REDUCE_SUM, &rw),
            DISTRT_OK)
      << error();
  ASSERT_EQ(distrt_comm_set_overlap(comm, 0), DISTRT_OK) << error();
  EXPECT_EQ(w, std::vector<float>(3, float(size)));
  EXPECT_EQ(distrt_wait(rw), DISTRT_OK) << error();
  // Back to the worker: completes the pending one first.
  ASSERT_EQ(distrt_comm_set_overlap(comm, 1), DISTRT_OK) << error();
  EXPECT_EQ(z, std::vector<float>(3, 2.f));
  EXPECT_EQ(distrt_wait(rz), DISTRT_OK) << error();
  EXPECT_EQ(distrt_wait(rx), DISTRT_OK) << error();
  EXPECT_EQ(x, std::vector<float>(10, float(size)));

  EXPECT_EQ(distrt_comm_set_overlap(comm, 2), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("thread is 2; pass 1"), std::string::npos) << error();
  EXPECT_NE(distrt_comm_set_overlap(nullptr, 0), DISTRT_OK);
}

TEST(CommEnvTest, ABadCommThreadSettingIsAnError) {
  distrt_context *ctx = nullptr;
  ASSERT_EQ(distrt_context_create(DISTRT_BACKEND_CPU, 0, &ctx), DISTRT_OK);
  const char *old = std::getenv("DISTRT_COMM_THREAD");
  std::string saved = old ? old : "";
  setenv("DISTRT_COMM_THREAD", "yes", 1);
  distrt_comm *comm = nullptr;
  EXPECT_EQ(distrt_comm_create(ctx, &comm), DISTRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(distrt_last_error(ctx))
                .find("DISTRT_COMM_THREAD='yes' is neither 0"),
            std::string::npos)
      << distrt_last_error(ctx);
  if (old)
    setenv("DISTRT_COMM_THREAD", saved.c_str(), 1);
  else
    unsetenv("DISTRT_COMM_THREAD");
  distrt_context_destroy(ctx);
}

} // namespace
