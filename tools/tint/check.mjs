// Compiles every WGSL file in a folder with Tint (Dawn's WGSL compiler, through the npm package
// `webgpu`, on Dawn's null backend) on a device with WebGPU's default limits; exits 1 on any
// rejection. The files come from `cargo run --example wgsl_dump -- DIR`. Subgroup variants get
// `enable subgroups;`, as the library adds it in a browser.
import { create, globals } from 'webgpu';
import fs from 'node:fs';
import path from 'node:path';

Object.assign(globalThis, globals);
const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.error('no WebGPU adapter from dawn.node');
  process.exit(1);
}
const device = await adapter.requestDevice({
  requiredFeatures: adapter.features.has('subgroups') ? ['subgroups'] : [],
});
const dir = process.argv[2];
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.wgsl')).sort();
let rejected = 0;
for (const f of files) {
  let code = fs.readFileSync(path.join(dir, f), 'utf8');
  if (f.includes('-subgroup')) code = 'enable subgroups;\n' + code;
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  if (errors.length > 0) {
    rejected++;
    for (const e of errors) console.log(`${f}:${e.lineNum}:${e.linePos}: ${e.message}`);
  }
}
console.log(`Tint: ${files.length - rejected} of ${files.length} kernel variants accepted`);
process.exit(rejected > 0 || files.length === 0 ? 1 : 0);
