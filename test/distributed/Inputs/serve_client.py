"""A client of a serving job for the lit tests (no numpy needed).

    serve_client.py run DIR N INPUTS [--switch-at M --switch-file F]
                    [--bad K] [--pace S] [--stop-signal] -- COMMAND...
        starts COMMAND (dist-run --serve=DIR ...), writes requests 0..N-1
        into DIR while it runs (each DIR/<k>/<name>.npy per input of INPUTS,
        NAME:f4|i8:SHAPE,... or SHAPE alone for x:f4:SHAPE, values from k;
        written beside as DIR/.<k>, then renamed in), S seconds
        apart (default 0.03), once request 0 is answered (the service is
        up); after request M it creates F (the switch
        trigger; F = "signal": SIGUSR1 to COMMAND instead) and waits for
        DIR/.switch/g0/stop (the switch began) before writing more; request
        K (--bad) gets an input with one column too many. After the last
        request it writes DIR/stop (N-1), or with --stop-signal waits for
        its answer and sends COMMAND SIGUSR1; then it waits for COMMAND
        (120 s at most) and exits with its status; COMMAND's stderr and
        stdout pass through.
    serve_client.py check DIR N PROGRAM [--bad K]
        every request 0..N-1 is answered exactly once (DIR/<k>.out, or
        DIR/<k>.err for K), nothing else is, and each answer's files equal,
        PROGRAM's outputs (the single-process program) on that request's
        inputs: the same header, and float32 values within 1e-5 relative
        (1e-6 absolute; a job of another plan runs GEMMs of other shapes,
        whose kernels round differently on some CPUs), other values byte for
        byte.
"""
import os
import signal
import struct
import subprocess
import sys
import time


def npy(dtype, shape, values):
    header = "{'descr': '<%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, ", ".join(str(d) for d in shape) +
        ("," if len(shape) == 1 else ""))
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    code = {"f4": "f", "i8": "q"}[dtype]
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
            header.encode() + struct.pack("<%d%s" % (len(values), code),
                                          *values))


def npy_values(data):
    """(header, float32 values or None) of a little-endian .npy file."""
    if data[:6] != b"\x93NUMPY":
        return data, None
    major = data[6]
    size_len = 2 if major == 1 else 4
    (hlen,) = struct.unpack("<H" if major == 1 else "<I",
                            data[8:8 + size_len])
    start = 8 + size_len + hlen
    header = data[:start]
    if b"'descr': '<f4'" not in header or (len(data) - start) % 4:
        return header, None
    body = data[start:]
    return header, struct.unpack("<%df" % (len(body) // 4), body)


def same_answer(a, b):
    """Equal .npy answers: float32 values within 1e-5 relative (1e-6
    absolute), anything else byte for byte."""
    if a == b:
        return True
    ha, va = npy_values(a)
    hb, vb = npy_values(b)
    if va is None or vb is None or ha != hb or len(va) != len(vb):
        return False
    return all(abs(x - y) <= 1e-6 + 1e-5 * abs(y) for x, y in zip(va, vb))


def request_values(k, n, dtype):
    # Distinct per request; exact in float32; token ids below 17.
    if dtype == "i8":
        return [(k * 7 + i * 3) % 17 for i in range(n)]
    return [((k * 7 + i * 3) % 17 - 8) * 0.125 for i in range(n)]


def parse_inputs(spec):
    """NAME:DTYPE:SHAPE,... (or SHAPE alone: x:f4:SHAPE)."""
    out = []
    for one in spec.split(","):
        parts = one.split(":")
        if len(parts) == 1:
            parts = ["x", "f4", parts[0]]
        out.append((parts[0], parts[1], [int(d) for d in parts[2].split("x")]))
    return out


def write_request(folder, k, inputs, bad=False):
    tmp = os.path.join(folder, ".%d" % k)
    os.makedirs(tmp, exist_ok=True)
    for name, dtype, shape in inputs:
        if bad:
            shape = shape[:-1] + [shape[-1] + 1]
        n = 1
        for d in shape:
            n *= d
        with open(os.path.join(tmp, name + ".npy"), "wb") as f:
            f.write(npy(dtype, shape, request_values(k, n, dtype)))
    os.rename(tmp, os.path.join(folder, str(k)))


def wait_for(job, paths):
    """Waits (60 s at most) until one of `paths` exists; False when the job
    ended first."""
    t0 = time.time()
    while not any(os.path.exists(p) for p in paths):
        if job.poll() is not None:
            return False
        if time.time() - t0 > 60:
            job.kill()
            sys.exit("error: none of %s in 60 s" % paths)
        time.sleep(0.005)
    return True


def option(args, name, default=None):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def run(args):
    cmd = args[args.index("--") + 1:]
    args = args[:args.index("--")]
    switch_at = int(option(args, "--switch-at", -1))
    switch_file = option(args, "--switch-file")
    bad = int(option(args, "--bad", -1))
    pace = float(option(args, "--pace", 0.03))
    stop_signal = "--stop-signal" in args
    if stop_signal:
        args.remove("--stop-signal")
    folder, n, inputs = args[0], int(args[1]), parse_inputs(args[2])
    os.makedirs(folder, exist_ok=True)
    job = subprocess.Popen(cmd)
    try:
        for k in range(n):
            write_request(folder, k, inputs, k == bad)
            if k == 0 and not wait_for(
                    job, [os.path.join(folder, "0.out"),
                          os.path.join(folder, "0.err")]):
                return job.wait()
            if k == switch_at:
                if switch_file == "signal":
                    job.send_signal(signal.SIGUSR1)
                else:
                    open(switch_file, "w").close()
                if not wait_for(job, [os.path.join(folder, ".switch", "g0",
                                                   "stop")]):
                    return job.wait()
                continue
            time.sleep(pace)
        if stop_signal:
            last = os.path.join(folder, str(n - 1))
            if wait_for(job, [last + ".out", last + ".err"]):
                job.send_signal(signal.SIGUSR1)
        else:
            with open(os.path.join(folder, "stop"), "w") as f:
                f.write("%d\n" % (n - 1))
        return job.wait(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        sys.exit("error: '%s' did not end in 120 s after the stop file" %
                 " ".join(cmd))
    finally:
        if job.poll() is None:
            job.kill()


def check(args):
    bad = int(option(args, "--bad", -1))
    folder, n, program = args[0], int(args[1]), args[2]
    want = {"%d.out" % k if k != bad else "%d.err" % k for k in range(n)}
    got = {e for e in os.listdir(folder)
           if e.endswith(".out") or e.endswith(".err")}
    if got != want:
        sys.exit("error: answers %s, expected %s" %
                 (sorted(got - want), sorted(want - got)))
    ref = os.path.join(folder, ".ref")
    for k in range(n):
        if k == bad:
            continue
        out = os.path.join(ref, str(k))
        request = os.path.join(folder, str(k))
        subprocess.run([program] + [
            "%s=%s" % (f[:-4], os.path.join(request, f))
            for f in sorted(os.listdir(request))] + ["-o", out], check=True)
        served = os.path.join(folder, "%d.out" % k)
        if sorted(os.listdir(out)) != sorted(os.listdir(served)):
            sys.exit("error: request %d: answered with %s, one process "
                     "writes %s" % (k, sorted(os.listdir(served)),
                                    sorted(os.listdir(out))))
        for name in os.listdir(out):
            with open(os.path.join(out, name), "rb") as f:
                a = f.read()
            with open(os.path.join(served, name), "rb") as f:
                b = f.read()
            if not same_answer(a, b):
                sys.exit("error: request %d: the served %s differs from one "
                         "process's" % (k, name))
    print("%d request(s) answered once each, outputs equal to one process's"
          % (n - (1 if 0 <= bad < n else 0)))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("run", "check"):
        sys.exit(__doc__)
    sys.exit((run if sys.argv[1] == "run" else check)(sys.argv[2:]))
