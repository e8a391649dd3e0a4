//===- CommBench.cpp - Link times through the runtime's communicator ------===//
//
// `distrt-comm-bench [-o FILE.json] [--max-bytes N]`, started by a launcher
// (mpirun -np N; dist-profile does it): times what generated programs call,
// distrt_send / distrt_recv between ranks 0 and 1 (a ping-pong: half a
// round trip is one message) and distrt_all_reduce (mean of f32) over every
// rank, for message sizes from 8 bytes to --max-bytes in steps of 4x. Each
// figure is the median over repetitions (the machine is shared). Rank 0
// writes the JSON that dist-profile fits latency and bandwidth to
// (docs/cost-model.md, "Measured profiles"):
//
//   {"format": "distrt-comm-bench", "version": 1, "ranks": 2,
//    "backend": "mpi", "p2p": [{"bytes": 8, "seconds": 2.1e-6}, ...],
//    "all_reduce": [{"bytes": 8, "seconds": 9e-6}, ...]}
//
//===----------------------------------------------------------------------===//
#include "distrt/distrt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Repetitions for a message of \p bytes: many for small ones (latency is
/// a few microseconds), a few for the largest.
int repetitions(size_t bytes) {
  size_t r = (size_t(16) << 20) / std::max<size_t>(bytes, 1);
  return (int)std::clamp<size_t>(r, 5, 200);
}

struct Bench {
  distrt_context *ctx = nullptr;
  distrt_comm *comm = nullptr;
  int32_t rank = 0, size = 1;

  bool check(distrt_status st, const char *what) {
    if (st == DISTRT_OK)
      return true;
    fprintf(stderr, "distrt-comm-bench: error: rank %d: %s failed: %s\n", rank,
            what, distrt_last_error(ctx));
    return false;
  }

  /// Median one-way time of a message of \p bytes from rank 0 to 1 and
  /// back (half the round trip); -1 on failure. Ranks above 1 wait.
  double pingPong(std::vector<char> &buf, size_t bytes) {
    int64_t n = (int64_t)bytes;
    distrt_tensor t = distrt_make_tensor(buf.data(), DISTRT_U8, 1, &n);
    std::vector<double> times;
    int reps = repetitions(bytes);
    for (int i = -1; i < reps; ++i) { // i = -1: warm-up
      double t0 = now();
      if (rank == 0) {
        if (!check(distrt_send(comm, &t, 1, 7), "distrt_send") ||
            !check(distrt_recv(comm, &t, 1, 8), "distrt_recv"))
          return -1;
      } else if (rank == 1) {
        if (!check(distrt_recv(comm, &t, 0, 7), "distrt_recv") ||
            !check(distrt_send(comm, &t, 0, 8), "distrt_send"))
          return -1;
      }
      if (i >= 0)
        times.push_back((now() - t0) / 2);
    }
    if (!check(distrt_barrier(comm), "distrt_barrier"))
      return -1;
    return median(times);
  }

  /// Median time of a mean all-reduce of \p bytes of f32 over every rank,
  /// each started together (a barrier before it); -1 on failure.
  double allReduce(std::vector<char> &buf, size_t bytes) {
    int64_t n = (int64_t)(bytes / 4);
    distrt_tensor t = distrt_make_tensor(buf.data(), DISTRT_F32, 1, &n);
    std::vector<double> times;
    int reps = repetitions(bytes);
    for (int i = -1; i < reps; ++i) {
      if (!check(distrt_barrier(comm), "distrt_barrier"))
        return -1;
      double t0 = now();
      if (!check(distrt_all_reduce(comm, &t, nullptr, DISTRT_REDUCE_MEAN),
                 "distrt_all_reduce"))
        return -1;
      if (i >= 0)
        times.push_back(now() - t0);
    }
    return median(times);
  }
};

int usage(const char *msg) {
  fprintf(stderr,
          "distrt-comm-bench: error: %s\nusage: mpirun -np N "
          "distrt-comm-bench [-o FILE.json] [--max-bytes N] (N >= 2 ranks; "
          "max-bytes from 8 to 1073741824, default 16777216)\n",
          msg);
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string out;
  size_t maxBytes = size_t(16) << 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-o" || a == "--max-bytes") && i + 1 >= argc)
      return usage((a + " needs a value").c_str());
    if (a == "-o") {
      out = argv[++i];
    } else if (a == "--max-bytes") {
      char *end = nullptr;
      unsigned long long v = strtoull(argv[++i], &end, 10);
      if (!end || *end || v < 8 || v > (1ull << 30))
        return usage("--max-bytes must be a whole number from 8 to "
                     "1073741824");
      maxBytes = (size_t)v;
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  Bench b;
  if (distrt_context_create(DISTRT_BACKEND_CPU, 0, &b.ctx) != DISTRT_OK) {
    fprintf(stderr, "distrt-comm-bench: error: cannot create a context: %s\n",
            distrt_last_error(nullptr));
    return 1;
  }
  if (!b.check(distrt_comm_create(b.ctx, &b.comm), "distrt_comm_create"))
    return 1;
  distrt_comm_rank(b.comm, &b.rank);
  distrt_comm_size(b.comm, &b.size);
  if (b.size < 2) {
    distrt_comm_destroy(b.comm);
    distrt_context_destroy(b.ctx);
    return usage("a world of one rank has no links to time; start it with "
                 "mpirun -np 2 (or more)");
  }
  std::vector<char> buf(maxBytes);
  for (size_t i = 0; i < buf.size(); i += 4) {
    float v = 1.0f + (float)(i % 97);
    memcpy(buf.data() + i, &v, std::min<size_t>(4, buf.size() - i));
  }
  std::vector<std::pair<size_t, double>> p2p, ar;
  int rc = 0;
  for (size_t bytes = 8; bytes <= maxBytes && !rc; bytes *= 4) {
    double t = b.pingPong(buf, bytes);
    double a = t < 0 ? -1 : b.allReduce(buf, bytes);
    if (t < 0 || a < 0)
      rc = 1;
    p2p.push_back({bytes, t});
    ar.push_back({bytes, a});
  }
  if (rc) {
    distrt_comm_abort(b.comm, 1);
    return 1;
  }
  if (b.rank == 0) {
    FILE *f = out.empty() ? stdout : fopen(out.c_str(), "w");
    if (!f) {
      fprintf(stderr, "distrt-comm-bench: error: cannot write '%s': %s\n",
              out.c_str(), strerror(errno));
      rc = 1;
    } else {
      fprintf(f,
              "{\"format\": \"distrt-comm-bench\", \"version\": 1, "
              "\"ranks\": %d, \"backend\": \"%s\",\n",
              b.size, distrt_comm_backend(b.comm));
      const char *names[2] = {"p2p", "all_reduce"};
      for (int k = 0; k < 2; ++k) {
        const auto &list = k ? ar : p2p;
        fprintf(f, " \"%s\": [", names[k]);
        for (size_t i = 0; i < list.size(); ++i)
          fprintf(f, "%s{\"bytes\": %zu, \"seconds\": %.9g}", i ? ", " : "",
                  list[i].first, list[i].second);
        fprintf(f, "]%s\n", k ? "}" : ",");
      }
      if (f != stdout && fclose(f)) {
        fprintf(stderr, "distrt-comm-bench: error: writing '%s' failed\n",
                out.c_str());
        rc = 1;
      }
    }
  }
  distrt_comm_destroy(b.comm);
  distrt_context_destroy(b.ctx);
  return rc;
}
