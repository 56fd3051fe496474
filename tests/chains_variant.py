#!/usr/bin/python3
"""chains_variant.py - scripts/gen_chains.py's sensitivity variant (--bytes 2 --paper-times,
docs/weight-offload.md "How the instances decide") checked against numbers written here: each
chain's compute sum is the paper's Table 1 sum u_j, uf : ub is 1 : 3, a weight is 2 bytes per
parameter of a 3072-wide block, an activation 2 bytes per value of batch x sequence x 3072, and
a flag value the script does not take exits 2.
usage: chains_variant.py SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

SUM_U = {"gpt2-74-b64": 47421, "gpt2-56-b64": 35553, "gpt2-38-b64": 23694, "gpt2-74-b32": 23697,
         "gpt2-56-b32": 17762, "gpt2-38-b32": 11840, "gpt2-74-b16": 11612, "gpt2-56-b16": 8697,
         "gpt2-38-b16": 5794, "bert-144-b64": 34486, "bert-96-b64": 22965, "bert-144-b32": 17443,
         "bert-96-b32": 11617, "bert-144-b16": 9090, "bert-96-b16": 6058}


def main(src):
    script = os.path.join(src, "scripts", "gen_chains.py")
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, script, "--bytes", "2", "--paper-times", "--out", d], check=True,
                       stdout=subprocess.DEVNULL, timeout=120)
        for name, ms in sorted(SUM_U.items()):
            with open(os.path.join(d, name + ".json")) as f:
                c = json.load(f)
            seq = 128 if name.startswith("gpt2") else 48
            batch = int(name.rsplit("-b", 1)[1])
            s = sum(x["uf"] + x["ub"] for x in c["layers"])
            ok = abs(s * 1e3 - ms) <= 1e-6 * ms
            ok &= all(abs(x["ub"] - 3 * x["uf"]) <= 1e-12 * x["ub"] for x in c["layers"])
            ok &= all(x["w"] == 2 * (12 * 3072 * 3072 + 13 * 3072) for x in c["layers"])
            ok &= all(x["a"] == 2 * batch * seq * 3072 for x in c["layers"]) and c["a0"] == 2 * batch * seq * 3072
            if not ok:
                print("FAIL %s: sum %.6f s (want %.3f), layer 0 %s" % (name, s, ms / 1e3, c["layers"][0]))
                fails += 1
    p = subprocess.run([sys.executable, script, "--bytes", "3"], capture_output=True, text=True, timeout=60)
    if p.returncode != 2:
        print("FAIL: --bytes 3 exited %d" % p.returncode)
        fails += 1
    print("chains_variant: %d of %d chains checked, %d failures" % (len(SUM_U), len(SUM_U), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
