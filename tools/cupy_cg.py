# CuPy's conjugate gradient on the 7-point Laplacian of a k^3 grid, timed as docs/solvers.md
# compares it: python3 tools/cupy_cg.py [k=160] [iterations=500] (needs CuPy and SciPy).
import sys, time
import numpy as np, scipy.sparse as sp, cupy as cp
import cupyx.scipy.sparse as csp
from cupyx.scipy.sparse.linalg import cg
k = int(sys.argv[1]) if len(sys.argv) > 1 else 160
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 500
T = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(k, k))
I = sp.identity(k)
A = (sp.kron(sp.kron(T, I), I) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(I, I), T)).tocsr().astype(np.float32)
A.sort_indices()
n = A.shape[0]
dA = csp.csr_matrix(A)
b = cp.ones(n, dtype=cp.float32)
for rep in range(3):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    x, info = cg(dA, b, tol=0.0, atol=0.0, maxiter=iters) if 'tol' in cg.__code__.co_varnames else cg(dA, b, rtol=0.0, atol=0.0, maxiter=iters)
    cp.cuda.Device().synchronize()
    dt = time.perf_counter() - t
    print(f"cupy cg {k}^3: n={n} nnz={A.nnz} {iters} iterations {dt*1e3:.1f} ms = {dt*1e3/iters:.4f} ms/iter (run {rep})")
# One SpMV, for the floor.
y = dA @ b
cp.cuda.Device().synchronize()
t = time.perf_counter()
for _ in range(200):
    y = dA @ b
cp.cuda.Device().synchronize()
print(f"cupy A@x: {(time.perf_counter()-t)*1e3/200:.4f} ms")
