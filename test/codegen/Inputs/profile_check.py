"""Checks a generated program's `--profile` report (docs/codegen.md,
"Profiling") for consistency between its wall and CPU columns:

    profile_check.py REPORT THREADS MIN_OPS [--bounds]

- the report names THREADS threads and has at least MIN_OPS op rows, and
  the ops took CPU time (a report of zeros fails);
- the op kinds' counts and times add up to the op rows', and those to the
  header's per-run totals (each within what printing rounds);
- the shares (CPU %) are each row's part of the CPU total, and the rows are
  ranked by CPU time;
- with --bounds, the CPU time of the first run, the median run, the ops'
  total and every kind and op row is at most THREADS x its wall time. (A
  one-thread report only: with several threads the process clock learns
  another thread's time at its next scheduler tick or block, up to a tick
  late, so an op or a run can be charged time its neighbours ran, and
  spinning workers keep the true figure right at THREADS x wall.)

Exits 1 naming the first rule a report breaks."""
import re
import sys

NUM = r"([0-9]+(?:\.[0-9]+)?)"


def fail(msg):
    sys.exit("profile_check: " + msg)


def parse(text):
    head = re.search(r"^profile: (\d+) run\(s\); first " + NUM +
                     r" ms; median of the others " + NUM + r" ms; ops " + NUM +
                     r" ms per run$", text, re.M)
    cpu = re.search(r"^profile CPU time \(the process's user \+ system, (\d+) "
                    r"thread\(s\), [^)]*\): first " + NUM +
                    r" ms; median of the others " + NUM + r" ms; ops " + NUM +
                    r" ms per run$", text, re.M)
    if not head or not cpu:
        fail("no 'profile:' and 'profile CPU time' header lines")
    lines = text.splitlines()
    start = lines.index(next(l for l in lines if l.startswith("op kind")))
    kinds, ops = [], []
    i = start + 1
    while i < len(lines) and not re.match(r"^\s+op\s+wall ms/run", lines[i]):
        m = re.match(r"^(.*\S)\s+(\d+)\s+" + NUM + r"\s+" + NUM + r"\s+" + NUM +
                     r"$", lines[i])
        if not m:
            fail(f"unreadable op kind row: {lines[i]!r}")
        kinds.append((m[1], int(m[2]), float(m[3]), float(m[4]), float(m[5])))
        i += 1
    for line in lines[i + 1:]:
        m = re.match(r"^\s*(\d+)\s+" + NUM + r"\s+" + NUM + r"\s+" + NUM +
                     r"\s+(\S.*)$", line)
        if not m:
            break
        ops.append((int(m[1]), float(m[2]), float(m[3]), float(m[4]), m[5]))
    return head, cpu, kinds, ops


def main():
    if len(sys.argv) not in (4, 5) or (len(sys.argv) == 5 and
                                       sys.argv[4] != "--bounds"):
        sys.exit(__doc__)
    threads, min_ops = int(sys.argv[2]), int(sys.argv[3])
    bounded = len(sys.argv) == 5
    with open(sys.argv[1]) as f:
        head, cpu, kinds, ops = parse(f.read())
    if int(cpu[1]) != threads:
        fail(f"the report names {cpu[1]} thread(s), the program ran {threads}")
    if len(ops) < min_ops:
        fail(f"{len(ops)} op rows, expected at least {min_ops}")
    total_wall, total_cpu = float(head[4]), float(cpu[4])
    if total_cpu <= 0 or not any(o[2] > 0 for o in ops):
        fail("the ops took no CPU time")
    # Rows print 4 decimals (ms), the header 3: sums of n rows may differ
    # from the printed total by n half-units of the rows plus one of the
    # header.
    row, hdr = 0.5e-4, 0.5e-3
    bounds = [("the first run", float(cpu[2]), float(head[2]), hdr),
              ("the median run", float(cpu[3]), float(head[3]), hdr),
              ("the ops' total", total_cpu, total_wall, hdr)]
    bounds += [(f"kind '{k[0]}'", k[3], k[2], row) for k in kinds]
    bounds += [(f"op {o[0]} ({o[4]})", o[2], o[1], row) for o in ops]
    for what, c, w, r in bounds if bounded else []:
        if c > w * threads + r * (1 + threads):
            fail(f"{what}: {c} ms of CPU time in {w} ms of wall time "
                 f"on {threads} thread(s)")
    if sum(k[1] for k in kinds) != len(ops):
        fail(f"the kinds count {sum(k[1] for k in kinds)} ops, "
             f"the op table lists {len(ops)}")
    for col, name in ((2, "wall"), (3, "CPU")):
        by_kind = sum(k[col] for k in kinds)
        by_op = sum(o[col - 1] for o in ops)
        if abs(by_kind - by_op) > row * (len(kinds) + len(ops)):
            fail(f"{name}: the kinds add up to {by_kind:.4f} ms, "
                 f"the ops to {by_op:.4f}")
        total = total_wall if col == 2 else total_cpu
        if abs(by_op - total) > row * len(ops) + hdr:
            fail(f"{name}: the ops add up to {by_op:.4f} ms, "
                 f"the header says {total:.3f}")
    for what, rows, col in (("kind", kinds, 3), ("op", ops, 2)):
        for r in rows:
            want = 100 * r[col] / total_cpu
            if abs(r[col + 1] - want) > 0.05 + 100 * row / total_cpu + \
                    100 * r[col] * hdr / total_cpu ** 2:
                fail(f"{what} row {r}: share {r[col + 1]}%, its CPU time is "
                     f"{want:.2f}% of the total")
        times = [r[col] for r in rows]
        if times != sorted(times, reverse=True):
            fail(f"the {what} rows are not ranked by CPU time")
    print(f"profile_check: {len(ops)} ops, {len(kinds)} kinds, "
          f"{total_cpu:.3f} ms CPU and {total_wall:.3f} ms wall per run: "
          "consistent")


if __name__ == "__main__":
    main()
