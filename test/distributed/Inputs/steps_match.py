"""Compares the step lines of a training run with those of a reference run:
`steps_match.py REF GOT RTOL [EXACT_THROUGH]`.

Every line `step N NAME V ...` of REF must appear in GOT (the same names),
each value within RTOL of REF's (relative to the larger |value|, 1e-30 at
least); GOT may hold a step more than once (a step in flight when a rank
was lost, computed again by the resumed job): every occurrence must match.
Steps up to EXACT_THROUGH must match bit for bit (the same text). GOT must
hold no step REF does not. Prints the largest relative difference and the
steps seen more than once; exits 1 on a mismatch."""
import sys


def steps(path):
    out = []
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) >= 4 and words[0] == "step":
                out.append((int(words[1]), words[2:]))
    return out


ref, got = steps(sys.argv[1]), steps(sys.argv[2])
rtol = float(sys.argv[3])
exact = int(sys.argv[4]) if len(sys.argv) > 4 else 0
want = dict(ref)
if len(want) != len(ref) or not want:
    sys.exit("%s: no step lines, or a step twice" % sys.argv[1])
seen, twice, worst, bad = {}, [], 0.0, []
for n, words in got:
    if n not in want:
        bad.append("step %d is not in the reference" % n)
        continue
    if n in seen:
        twice.append(n)
    seen[n] = True
    w = want[n]
    if [x for x in words[0::2]] != [x for x in w[0::2]] or len(words) != len(w):
        bad.append("step %d: %s against %s" % (n, " ".join(words), " ".join(w)))
        continue
    if n <= exact and words != w:
        bad.append("step %d: %s, not bit for bit %s" % (n, " ".join(words), " ".join(w)))
    for a, b in zip(words[1::2], w[1::2]):
        a, b = float(a), float(b)
        d = abs(a - b) / max(abs(a), abs(b), 1e-30)
        worst = max(worst, d)
        if d > rtol:
            bad.append("step %d: %g against %g" % (n, a, b))
missing = sorted(set(want) - set(seen))
if missing:
    bad.append("steps missing: %s" % missing)
print("%d steps, max relative difference %.2e, computed twice: %s"
      % (len(seen), worst, twice or "none"))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
