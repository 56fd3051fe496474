#!/usr/bin/python3
"""`turnip plan` from a TaskGraph file to a written MemGraph (issue 15's target: 10^6 vertices in
under 10 s and 600 MB peak): generates a layered TaskGraph (`turnip gen layered`, 122 vertices
a layer; 8,200 layers make 10^6 vertices), then plans it RUNS times per output format and prints
min / median / max of the wall time and of the peak RSS of each run (os.wait4's ru_maxrss of
that child alone), with the machine and its load average before and after.

usage: bench/plan_file.py [--turnip build/turnip] [--layers 8200] [--runs 3] [--device-mem 64MiB]
                          [--formats json,binary] [--keep DIR]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

from generate_bench import machine  # the CPU model and core count, one writer for the benches

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(argv):
    """runs argv; returns (seconds, peak RSS in bytes of that process alone)"""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        sys.exit("%s failed (%d): %s" % (" ".join(argv), p.returncode, err))
    return dt, ru.ru_maxrss * 1024


def mmm(xs):
    return min(xs), statistics.median(xs), max(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turnip", default=os.path.join(ROOT, "build", "turnip"))
    ap.add_argument("--layers", type=int, default=8200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device-mem", default="64MiB")
    ap.add_argument("--formats", default="json,binary")
    ap.add_argument("--keep", help="write the files here and keep them (default: a temporary folder)")
    a = ap.parse_args()
    if a.runs < 1 or a.layers < 1:
        sys.exit("--runs and --layers must be positive")
    d = a.keep or tempfile.mkdtemp(prefix="tp-planfile-")
    os.makedirs(d, exist_ok=True)
    tg = os.path.join(d, "layered.json")
    try:
        print("machine:", machine())
        print("load average before:", " ".join("%.2f" % x for x in os.getloadavg()))
        gen_s, _ = timed([a.turnip, "gen", "layered", "--layers", str(a.layers), "-o", tg])
        with open(tg, "rb") as f:
            nv = f.read().count(b'"kind": ')
        print("TaskGraph: %d layers, %d vertices, %.1f MB (generated in %.1f s)" % (a.layers, nv, os.path.getsize(tg) / 1e6, gen_s))
        print("turnip plan TASKGRAPH --device-mem %s -o OUT --format F, %d runs each:" % (a.device_mem, a.runs))
        print("%-7s %26s %30s %12s" % ("format", "seconds min/median/max", "peak RSS MB min/median/max", "output MB"))
        for fmt in a.formats.split(","):
            out = os.path.join(d, "plan." + fmt)
            ts, rs = [], []
            for _ in range(a.runs):
                t, r = timed([a.turnip, "plan", tg, "--device-mem", a.device_mem, "-o", out, "--format", fmt])
                ts.append(t)
                rs.append(r / 1e6)
            print("%-7s %26s %30s %12.1f" % (fmt, "%.2f / %.2f / %.2f" % mmm(ts), "%.0f / %.0f / %.0f" % mmm(rs),
                                            os.path.getsize(out) / 1e6))
            print("        per vertex: %.2f us, %.0f bytes of peak RSS (median); target < 10 s and < 600 MB: %s" %
                  (statistics.median(ts) / nv * 1e6, statistics.median(rs) * 1e6 / nv,
                   "met" if max(ts) < 10 and max(rs) < 600 else "NOT met"))
        print("load average after:", " ".join("%.2f" % x for x in os.getloadavg()))
    finally:
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
