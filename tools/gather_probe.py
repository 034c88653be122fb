"""The CUDA twin of examples/gather_probe.rs: y[i] = x[idx[i]] over the same index patterns,
timed with CUDA events, once with plain loads and once with L1-no-allocate loads of x.

    python3 tools/gather_probe.py [X_MIB,...]

Prints CSV: x_mib,pattern,loads,ms,gathers_per_ns. Needs CuPy and NumPy (the GPU machine)."""

import sys

import cupy as cp
import numpy as np

N = 1 << 24
GROUP = 32
REPS = 50
PATTERNS = ["stream", "random", "sorted32", "sorted256", "sorted2048", "window2m", "window64k",
            "window4k"]

SOURCE = r"""
extern "C" __global__ void plain(const unsigned* idx, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.y * gridDim.x * 256u + blockIdx.x * 256u + threadIdx.x;
    if (i < n) y[i] = x[idx[i]];
}
extern "C" __global__ void no_allocate(const unsigned* idx, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.y * gridDim.x * 256u + blockIdx.x * 256u + threadIdx.x;
    if (i < n) {
        float v;
        asm volatile("ld.global.L1::no_allocate.f32 %0, [%1];" : "=f"(v) : "l"(x + idx[i]));
        y[i] = v;
    }
}
"""


def hash32(v):
    """The integer hash of examples/gather_probe.rs, on uint32 arrays."""
    v = v.astype(np.uint32)
    v ^= v >> np.uint32(16)
    v *= np.uint32(0x7FEB352D)
    v ^= v >> np.uint32(15)
    v *= np.uint32(0x846CA68B)
    return v ^ (v >> np.uint32(16))


def indices(pattern, length):
    i = np.arange(N, dtype=np.uint32)
    if pattern == "stream":
        return i % np.uint32(length)
    window = {"random": length, "sorted32": length, "sorted256": length, "sorted2048": length,
              "window4k": 1024,
              "window64k": 16 * 1024, "window2m": 512 * 1024}[pattern]
    window = min(window, length)
    windows = np.uint32(length // window)
    base = hash32((i // np.uint32(GROUP)) ^ np.uint32(0x9E3779B9)) % windows * np.uint32(window)
    idx = base + hash32(i) % np.uint32(window)
    if pattern.startswith("sorted"):
        chunk = int(pattern[len("sorted"):])
        idx = np.sort(idx.reshape(-1, chunk), axis=1).reshape(-1)
    return idx


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "8,32,128").split(",")]
    module = cp.RawModule(code=SOURCE)
    kernels = {name: module.get_function(name) for name in ("plain", "no_allocate")}
    y = cp.empty(N, dtype=cp.float32)
    grid = (N // 256 // 64, 64)
    print("x_mib,pattern,loads,ms,gathers_per_ns")
    settled = False
    for mib in sizes:
        length = mib * 1024 * 1024 // 4
        x = cp.arange(length, dtype=cp.float32)
        for pattern in PATTERNS:
            idx = cp.asarray(indices(pattern, length))
            for name, kernel in kernels.items():
                args = (idx, x, y, np.uint32(N))
                if not settled:
                    for _ in range(2000):
                        kernel(grid, (256,), args)
                    settled = True
                best = float("inf")
                for _ in range(3):
                    start, end = cp.cuda.Event(), cp.cuda.Event()
                    start.record()
                    for _ in range(REPS):
                        kernel(grid, (256,), args)
                    end.record()
                    end.synchronize()
                    best = min(best, cp.cuda.get_elapsed_time(start, end) / REPS)
                assert cp.array_equal(y, x[idx]), (mib, pattern, name)
                print(f"{mib},{pattern},{name},{best:.4f},{N / (best * 1e6):.1f}")


if __name__ == "__main__":
    main()
