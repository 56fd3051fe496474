"""Helpers for the Python tests (Debian's python3 + numpy): safetensors in and out, 16-bit
float storage, and running the turnip command. Independent of the C code."""
import json, struct, subprocess, sys
import numpy as np

ST_DT = {"F32": np.float32, "F16": np.float16, "BF16": "bf16", "I32": np.int32, "U8": np.uint8, "F64": np.float64, "I64": np.int64}
TG_DT = {"f32": "F32", "f16": "F16", "bf16": "BF16", "i32": "I32"}


def bf16_bits(a):
    """float32 array -> uint16 bfloat16 bits, round to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def store(a, dtype):
    """(bytes, f32 value after rounding to the storage dtype)"""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "f32":
        return a.tobytes(), a
    if dtype == "f16":
        h = a.astype(np.float16)
        return h.tobytes(), h.astype(np.float32)
    if dtype == "bf16":
        b = bf16_bits(a)
        return b.tobytes(), bf16_value(b)
    if dtype == "i32":
        i = np.asarray(a, dtype=np.int32)
        return i.tobytes(), i
    raise ValueError(dtype)


def write_st(path, tensors):
    """tensors: name -> (dtype 'f32'|'f16'|'bf16'|'i32', shape, raw bytes)"""
    header, off, blobs = {}, 0, []
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": TG_DT[dt], "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_st(path):
    """name -> f32 (or int) numpy array, plus name -> raw bytes"""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    vals, raws = {}, {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b0, b1 = e["data_offsets"]
        raw = data[base + b0:base + b1]
        raws[name] = raw
        dt = e["dtype"]
        if dt == "BF16":
            v = bf16_value(np.frombuffer(raw, dtype=np.uint16))
        else:
            v = np.frombuffer(raw, dtype=ST_DT[dt]).astype(np.float32 if dt in ("F16", "F32") else ST_DT[dt])
        vals[name] = v.reshape(e["shape"])
    return vals, raws


def run(turnip, args, check=True):
    r = subprocess.run([turnip] + args, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"turnip {' '.join(args)} -> exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def backend_flags(backend):
    """the turnip flags of a test's BACKEND argument, and whether it computes matmuls on tensor
    cores: cpu; cuda (--matmul exact: f32 arithmetic, the tolerances of the cpu backend);
    cuda-fast (the cuda default: 16-bit/TF32 matmul operands, looser tolerances)"""
    if backend == "cuda":
        return ["--backend", "cuda", "--matmul", "exact"], False
    if backend == "cuda-fast":
        return ["--backend", "cuda"], True
    return ["--backend", backend], False


def need_torch():
    """Debian's torch with 2 threads, or exit 77 (CTest's skip) when python3-torch is missing"""
    try:
        import torch
    except ImportError:
        print("skipped: python3-torch is not installed")
        sys.exit(77)
    torch.set_num_threads(2)
    return torch


def need_backend(turnip, backend):
    """exits 77 (CTest's skip) when `backend` is not built into turnip or has no device"""
    if backend == "cpu":
        return
    backend = backend.split("-")[0]
    v = subprocess.run([turnip, "--version"], capture_output=True, text=True).stdout
    line = next((l for l in v.splitlines() if l.startswith("backends:")), "")
    if f"{backend} (" not in line:
        print(f"skipped: the {backend} backend is not built in ({line})")
        sys.exit(77)
    if "no usable" in line:
        print(f"skipped: {line}")
        sys.exit(77)
    print(line)
