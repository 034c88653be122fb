#!/usr/bin/env python3
"""cuSPARSE's transposition (csr2cscEx2, through CuPy's `tocsc()`), timed on a folder of Matrix
Market files: what a plan of Aᵀ's setup compares with (`wgspmv bench --op spmv-t`).

  python3 tools/csr2csc_probe.py DIR [--f64]

One CSV row per matrix: its size and the mean of 10 transpositions after 3 warm-ups, GPU events
around each whole call (the outputs allocated by every call, as a setup allocates them once).
"""
import sys, os, glob, numpy as np, scipy.io, cupy as cp, cupyx.scipy.sparse as csp

d = [a for a in sys.argv[1:] if not a.startswith("--")][0]
dt = np.float64 if "--f64" in sys.argv else np.float32
s, e = cp.cuda.Event(), cp.cuda.Event()
print("matrix,rows,cols,nnz,csr2csc_ms")
for f in sorted(glob.glob(os.path.join(d, "*.mtx"))):
    a = csp.csr_matrix(scipy.io.mmread(f).tocsr().astype(dt))
    for _ in range(3):
        a.tocsc()
    s.record()
    for _ in range(10):
        t = a.tocsc()
    e.record(); e.synchronize()
    ms = cp.cuda.get_elapsed_time(s, e) / 10
    name = os.path.basename(f)[:-4]
    print(f"{name},{a.shape[0]},{a.shape[1]},{a.nnz},{ms:.4f}", flush=True)
