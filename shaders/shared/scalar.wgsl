// The value type of a kernel assembled per value type (SpMV kernels, vector operations): `SCALAR`
// is replaced by f32 or f64 when the module is assembled.
alias scalar = SCALAR;
