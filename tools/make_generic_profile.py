import math, sys
"""Writes generic.txt as a blend of nvidia.txt and cpu.txt:
python3 ../../../tools/make_generic_profile.py 0.7 generic.txt (run in src/select/profiles)."""
a=float(sys.argv[1]); out_path=sys.argv[2]
def load(p):
    d={}
    for l in open(p):
        t=l.split()
        if t and t[0]=='method':
            d[t[1]]=(float(t[3]),[float(x) for x in t[5:8]],[float(x) for x in t[9:]])
    return d
n=load('nvidia.txt'); c=load('cpu.txt')
out=["wgspmv-profile 1","name generic",
"note not fitted on one adapter: each weight is %g x the nvidia fit's + %g x the cpu (lavapipe) fit's,"%(a,1-a),
"note the blend with the best worst case over both adapters' suite measurements (docs/auto.md); launch",
"note times the weighted geometric mean, setup coefficients the larger of the two. Matches every",
"note adapter and names no vendor. Calibrate (examples/calibrate) for an adapter that matters.",
"cache_bytes 8388608.0",
"regressors bias ln_mean ln_cv long_share empty_frac scatter ln_x_cache aspect ln_mnnz ln_max_rel f64"]
for m in n:
    ln,sn,wn=n[m]; lc,sc,wc=c[m]
    w=[a*x+(1-a)*y for x,y in zip(wn,wc)]
    s=[max(x,y) for x,y in zip(sn,sc)]
    out.append("method %s launch_ms %r setup %r %r %r weights %s"%(m,math.exp(a*math.log(max(ln,1e-4))+(1-a)*math.log(max(lc,1e-4))),s[0],s[1],s[2]," ".join(repr(x) for x in w)))
open(out_path,'w').write("\n".join(out)+"\n")
