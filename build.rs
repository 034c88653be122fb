//! Embeds every WGSL file under `shaders/` so that kernels are assembled from the `#import`
//! lines the files declare, with no list of files to keep in step by hand.

use std::path::Path;

fn collect(dir: &Path, root: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("shaders/ is readable")
        .map(|e| e.expect("shaders/ entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "wgsl") {
            let name = path.strip_prefix(root).unwrap().with_extension("");
            let name = name.to_str().expect("UTF-8 shader path").replace('\\', "/");
            out.push(format!(
                "    ({name:?}, include_str!({:?})),\n",
                path.canonicalize().unwrap()
            ));
        }
    }
}

fn main() {
    // Read at run time: a build script compiled for another checkout may be reused.
    let root = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("shaders");
    println!("cargo:rerun-if-changed=shaders");
    let mut rows = Vec::new();
    collect(&root, &root, &mut rows);
    let table = format!(
        "/// Every WGSL file under shaders/, by its path without the extension.\n\
         pub(crate) const FILES: &[(&str, &str)] = &[\n{}];\n",
        rows.concat()
    );
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("shader_files.rs");
    std::fs::write(out, table).unwrap();
    // The real-matrix tests run where ../shared/matrices sits beside the checkout, and are
    // reported as ignored (with the reason) where it does not, rather than passing untested.
    let shared = root.join("../../shared/matrices");
    println!("cargo:rustc-check-cfg=cfg(shared_matrices)");
    println!("cargo:rerun-if-changed={}", shared.display());
    if shared.is_dir() {
        println!("cargo:rustc-cfg=shared_matrices");
    }
}
