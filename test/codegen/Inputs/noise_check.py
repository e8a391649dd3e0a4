"""The gradient noise scale of a linear model y = x @ w under mean-squared
error, trained with plain SGD, in plain Python (no numpy): the reference
of train-noise-scale.test.

    noise_check.py X.npy T.npy W.npy MICROBATCHES LR STEPS PRINTED

X holds MICROBATCHES blocks of rows, one per micro-batch; each step's
gradients are those of each block and their mean, which updates w. Checks
the program's printed line (its `noise scale V` value) against McCandlish
et al.'s estimates summed over the steps, within 1e-4 relative."""
import re
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import npy  # noqa: E402


def main():
    xp, tp, wp, k, lr, steps, printed = sys.argv[1:8]
    k, lr, steps = int(k), float(lr), int(steps)
    (rows_all, n), x = npy.read(xp)
    (_, c), t = npy.read(tp)
    _, w = npy.read(wp)
    # The .npy weight file holds w as [n, c] after its header.
    rows = rows_all // k
    signal = noise = 0.0
    for _ in range(steps):
        grads = []
        for j in range(k):
            g = [0.0] * (n * c)
            for r in range(j * rows, (j + 1) * rows):
                for q in range(c):
                    y = sum(x[r * n + i] * w[i * c + q] for i in range(n))
                    e = 2.0 * (y - t[r * c + q]) / (rows * c)
                    for i in range(n):
                        g[i * c + q] += x[r * n + i] * e
            grads.append(g)
        mean = [sum(g[i] for g in grads) / k for i in range(n * c)]
        small = sum(sum(v * v for v in g) for g in grads) / k
        big = sum(v * v for v in mean)
        bs, bb = float(rows), float(rows * k)
        signal += (bb * big - bs * small) / (bb - bs)
        noise += (small - big) / (1 / bs - 1 / bb)
        w = [wi - lr * gi for wi, gi in zip(w, mean)]
    want = noise / signal
    got = float(re.search(r"noise scale ([0-9.e+-]+)", open(printed).read()).group(1))
    rel = abs(got - want) / abs(want)
    print("noise scale %.6g, reference %.6g, relative difference %.2e" % (got, want, rel))
    sys.exit(0 if rel < 1e-4 else 1)


if __name__ == "__main__":
    main()
