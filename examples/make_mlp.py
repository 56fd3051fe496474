#!/usr/bin/python3
"""Writes examples/mlp.json: a residual SwiGLU-free MLP stack split Megatron-style over two
devices, with real ops and bf16 storage (the README's main job runs it under a memory cap).
Per layer: x goes to device 1; each device computes silu(x @ w1_d) @ w2_d on its half of the
hidden units; device 1's partial comes back; x' = rmsnorm(x + p0 + p1, g)."""
import json

T, H, F, L = 128, 256, 1024, 4
V = [{"id": "x0", "kind": "input", "device": 0, "dtype": "bf16", "shape": [T, H]}]
x = "x0"
for l in range(L):
    parts = []
    for d in range(2):
        xd = x if d == 0 else f"L{l}.x@1"
        if d == 1:
            V.append({"id": xd, "kind": "transfer", "device": 1, "inputs": [x]})
        V += [{"id": f"L{l}.w1.d{d}", "kind": "input", "device": d, "dtype": "bf16", "shape": [H, F // 2]},
              {"id": f"L{l}.w2.d{d}", "kind": "input", "device": d, "dtype": "bf16", "shape": [F // 2, H]},
              {"id": f"L{l}.up.d{d}", "kind": "kernel", "device": d, "op": "matmul", "inputs": [xd, f"L{l}.w1.d{d}"],
               "dtype": "bf16", "shape": [T, F // 2], "flops": 2 * T * H * F // 2},
              {"id": f"L{l}.act.d{d}", "kind": "kernel", "device": d, "op": "silu", "inputs": [f"L{l}.up.d{d}"],
               "dtype": "bf16", "shape": [T, F // 2]},
              {"id": f"L{l}.down.d{d}", "kind": "kernel", "device": d, "op": "matmul",
               "inputs": [f"L{l}.act.d{d}", f"L{l}.w2.d{d}"], "dtype": "f32", "shape": [T, H], "flops": 2 * T * F // 2 * H}]
        parts.append(f"L{l}.down.d{d}")
    V.append({"id": f"L{l}.down.d1@0", "kind": "transfer", "device": 0, "inputs": [parts[1]]})
    V.append({"id": f"L{l}.resid", "kind": "kernel", "device": 0, "op": "cast", "inputs": [x], "dtype": "f32", "shape": [T, H]})
    V.append({"id": f"L{l}.sum", "kind": "kernel", "device": 0, "op": "sum",
              "inputs": [f"L{l}.resid", parts[0], f"L{l}.down.d1@0"], "dtype": "f32", "shape": [T, H]})
    V.append({"id": f"L{l}.norm", "kind": "input", "device": 0, "dtype": "bf16", "shape": [H]})
    V.append({"id": f"L{l}.out", "kind": "kernel", "device": 0, "op": "rmsnorm", "inputs": [f"L{l}.sum", f"L{l}.norm"],
              "dtype": "bf16", "shape": [T, H], "attrs": {"eps": 1e-5}})
    x = f"L{l}.out"
json.dump({"format": "turnip.taskgraph/1", "devices": 2, "vertices": V, "outputs": [x]}, open("examples/mlp.json", "w"), indent=0)
