#!/usr/bin/python3
"""Paper-scale schedules (issue 16): LLaMA prefill in simulation on the paper's machines, each
residual decomposition (gather, scatter) against each dispatch policy, side by side.

Per point, decomposition and policy: one run without jitter (the deterministic latency and
makespan / bound), then SEEDS runs with jitter J (kernel times and copy sizes x exp(J N(0,1)),
seeded): makespan / bound as min / median / max and mean. Then the any-versus-fixed ablation
on the same runs: makespan(any) / makespan(fixed) per seed. Writes a CSV of every run.
usage: bench/paper_schedules.py [--turnip build/turnip] [--seeds 20] [--jitter 0.3] [--csv FILE]
       [--points a100x8:8:65b:4096,...] [--residual gather,scatter] [--policies any,fixed,priority]
       bench/paper_schedules.py --from-csv A.csv[,B.csv]   (the tables again, from earlier runs)"""
import argparse, csv, os, platform, re, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from atomic_write import write_atomic  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--turnip", default="build/turnip")
ap.add_argument("--seeds", type=int, default=20)
ap.add_argument("--jitter", type=float, default=0.3)
ap.add_argument("--csv", default=None)
ap.add_argument("--points", default="a100x8:8:65b:4096,a100x8:8:65b:16384,a100x8:8:65b:32768,a100x8:8:7b:16384,"
                                    "p100x4:4:65b:4096,p100x4:4:65b:16384,p100x4:4:65b:32768,p100x4:4:7b:16384")
ap.add_argument("--residual", default="gather,scatter")
ap.add_argument("--attention", default="fused", choices=["fused", "scores"],
                help="turnip llama --attention (docs/sim/schedules-*.csv were taken with scores, the default then)")
ap.add_argument("--policies", default=None, help="default: every policy of `turnip llama --help` but random")
ap.add_argument("--from-csv", default=None, help="FILE[,FILE..]: print the tables of earlier runs (their CSVs) instead of running")
a = ap.parse_args()
if not 0 <= a.seeds <= 1000:
    ap.error("--seeds: an integer in [0, 1000]")
if not 0 <= a.jitter <= 10:  # NaN fails too; the sim's own limit (TP_SIM_JITTER_MAX)
    ap.error("--jitter: a number in [0, 10]")
for p in a.points.split(","):
    f = p.split(":")
    if len(f) != 4 or not re.fullmatch(r"[A-Za-z0-9_.-]+", f[0]) or not re.fullmatch(r"[a-z0-9-]+", f[2]) \
            or not (f[1].isdigit() and 1 <= int(f[1]) <= 64) or not (f[3].isdigit() and 1 <= int(f[3]) <= 1 << 20):
        ap.error("--points: MACHINE:DEVICES:PRESET:SEQ, DEVICES in [1, 64], SEQ in [1, 2^20]; got %r" % p)

if a.from_csv:
    policies = a.policies.split(",") if a.policies else None
else:
    helptext = subprocess.run([a.turnip, "llama", "--help"], capture_output=True, text=True, timeout=60).stdout
    policies = a.policies.split(",") if a.policies else [p for p in ("any", "fixed", "priority") if p + ":" in helptext or p + " (default)" in helptext]
RUN = re.compile(r"makespan ([0-9.]+) ms .*lower bound ([0-9.]+) ms")
PARTS = re.compile(r"resources ([0-9.]+) ms, critical path ([0-9.]+) ms")


def sim(machine, D, model, T, res, pol, seed, jitter):
    args = [a.turnip, "llama", "--preset", model, "--seq-len", str(T), "--devices", str(D), "--backend", "sim", "--machine", machine,
            "--residual", res, "--attention", a.attention, "--order", pol, "--seed", str(seed)] + (["--jitter", str(jitter)] if jitter else [])
    r = subprocess.run(args, capture_output=True, text=True, timeout=3600)
    line = next((l for l in r.stdout.splitlines() if l.startswith("run:")), None)
    if r.returncode or not line:
        sys.exit(f"{' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    m = RUN.search(line)
    p = PARTS.search(line)
    return float(m.group(1)) / 1e3, float(m.group(2)) / 1e3, (float(p.group(1)) / 1e3, float(p.group(2)) / 1e3) if p else (None, None)


rows = []
if a.from_csv:
    num = ("makespan", "bound", "resources", "critical", "jitter")
    for path in a.from_csv.split(","):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                r.update({k: float(r[k]) if r[k] not in ("", "None") else None for k in num})
                r["seed"] = int(r["seed"])
                rows.append(r)
    points = list(dict.fromkeys((r["machine"], r["devices"], r["model"], r["seq"]) for r in rows))
    policies = policies or list(dict.fromkeys(r["policy"] for r in rows))
    seeds = sorted(set(r["seed"] for r in rows if r["seed"] > 0))  # the ablation's: the CSV's, not the flags'
    jitter = max(r["jitter"] for r in rows)
    print(f"# from {a.from_csv}: seeds 1-{max(r['seed'] for r in rows)}, jitter {jitter}; policies {', '.join(policies)}")
else:
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {platform.node()}, {os.cpu_count()} cores; simulated (no BLAS involved); "
          f"seeds 1-{a.seeds}, jitter {a.jitter}; policies {', '.join(policies)}")
    seeds, jitter = list(range(1, a.seeds + 1)), a.jitter
    t0 = time.time()
    points = [tuple(p.split(":")) for p in a.points.split(",")]
    for machine, D, model, T in points:
        for res in a.residual.split(","):
            for pol in policies:
                lat, bnd, parts = sim(machine, D, model, T, res, pol, 0, 0)
                rows.append(dict(machine=machine, devices=D, model=model, seq=T, residual=res, policy=pol, seed=0, jitter=0, makespan=lat,
                                 bound=bnd, resources=parts[0], critical=parts[1]))
                for s in range(1, a.seeds + 1):
                    m, b, parts = sim(machine, D, model, T, res, pol, s, a.jitter)
                    rows.append(dict(machine=machine, devices=D, model=model, seq=T, residual=res, policy=pol, seed=s, jitter=a.jitter,
                                     makespan=m, bound=b, resources=parts[0], critical=parts[1]))
                print(f"#   {model} {machine} {T} {res} {pol} done ({time.time() - t0:.0f} s)", file=sys.stderr)

if a.csv and not a.from_csv:
    def write(f):
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    write_atomic(a.csv, write, newline="")


def sel(**k):
    return [r for r in rows if all(r[x] == v for x, v in k.items())]


def fmt(xs):
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"


print("\n| point | residual | policy | latency s | makespan / bound | with jitter: min / median / max | mean |")
print("|---|---|---|---:|---:|---:|---:|")
for machine, D, model, T in points:
    for res in a.residual.split(","):
        for pol in policies:
            base = sel(machine=machine, model=model, seq=T, residual=res, policy=pol, seed=0)
            if not base:
                continue
            base = base[0]
            js = [r["makespan"] / r["bound"] for r in sel(machine=machine, model=model, seq=T, residual=res, policy=pol) if r["seed"] > 0]
            extra = ""
            if base["critical"] is not None:
                extra = f" (res {base['resources']:.2f}, cp {base['critical']:.2f})"
            print(f"| {model} {machine} {int(T) // 1024}K | {res} | {pol} | {base['makespan']:.3f} | {base['makespan'] / base['bound']:.3f}{extra} | "
                  f"{fmt(js) if js else '-'} | {statistics.mean(js) if js else 0:.3f} |")

if "any" in policies and "fixed" in policies and any(r["seed"] > 0 for r in rows):
    print(f"\nablation: makespan(any) / makespan(fixed), jitter {jitter}, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})")
    print("| point | residual | mean | sd | min | median | max | any faster by |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for machine, D, model, T in points:
        for res in a.residual.split(","):
            if not sel(machine=machine, model=model, seq=T, residual=res, policy="fixed"):
                continue
            q = [sel(machine=machine, model=model, seq=T, residual=res, policy="any", seed=s)[0]["makespan"] /
                 sel(machine=machine, model=model, seq=T, residual=res, policy="fixed", seed=s)[0]["makespan"] for s in seeds]
            sd = statistics.stdev(q) if len(q) > 1 else 0
            print(f"| {model} {machine} {int(T) // 1024}K | {res} | {statistics.mean(q):.4f} | {sd:.4f} | {min(q):.4f} | "
                  f"{statistics.median(q):.4f} | {max(q):.4f} | {(1 / statistics.mean(q) - 1) * 100:.1f}% |")
