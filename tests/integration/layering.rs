//! The modules of `src/` import one another without a cycle, and only the router (`prepare`)
//! sees both `select` and `methods`: read from the sources' `crate::` paths (no GPU needed).
//! Test modules (`#[cfg(test)] mod … { … }`) and comments do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of `text` without comments, string contents or test modules.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|l| l.trim_start().starts_with("mod ") && l.trim_end().ends_with('{'))
        {
            // Skip the test module by its braces.
            let mut depth = 0i64;
            for l in lines.by_ref() {
                depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                if depth == 0 && l.contains('}') {
                    break;
                }
            }
            continue;
        }
        let without_comment = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        // Drop string literals (paths in messages are not imports).
        let mut in_str = false;
        let mut prev = ' ';
        for c in without_comment.chars() {
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            } else if !in_str {
                out.push(c);
            }
            prev = c;
        }
        out.push('\n');
    }
    out
}

/// The top-level names a piece of code reaches through `crate::`: `crate::a::…` gives `a`,
/// `crate::{a::…, b}` gives `a` and `b`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's first level.
            let (mut depth, mut word, mut at_start) = (0, String::new(), true);
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_start = true,
                    c if depth == 0 && at_start && (c.is_alphanumeric() || c == '_') => {
                        word.push(c)
                    }
                    c if depth == 0 && at_start && !c.is_whitespace() && !word.is_empty() => {
                        names.push(std::mem::take(&mut word));
                        at_start = false;
                    }
                    _ => {}
                }
                if c == ',' && depth == 0 && !word.is_empty() {
                    names.push(std::mem::take(&mut word));
                }
            }
            if !word.is_empty() {
                names.push(word);
            }
        } else {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(word);
        }
    }
    names
}

/// The module of `src/` a file belongs to (`lib` for the crate root).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// Import edges between the modules of `src/` (the binary's folder left out), each with one
/// file that makes it.
fn edges() -> BTreeMap<(String, String), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.retain(|f| !f.starts_with(src.join("bin")));
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    // Names the root re-exports (`pub use gpu::{Gpu, …}`), resolved to their module.
    let lib = code(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut reexports = BTreeMap::new();
    for stmt in lib.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        let module = path.split("::").next().unwrap().trim().to_owned();
        if !modules.contains(&module) {
            continue;
        }
        let names = &path[module.len()..];
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() {
                reexports.insert(name.to_owned(), module.clone());
            }
        }
    }
    let mut edges = BTreeMap::new();
    for file in &files {
        let from = module_of(&src, file);
        let text = code(&std::fs::read_to_string(file).unwrap());
        for name in crate_paths(&text) {
            let to = if modules.contains(&name) {
                name
            } else if let Some(m) = reexports.get(&name) {
                m.clone()
            } else {
                continue;
            };
            if to != from && from != "lib" && to != "lib" {
                edges
                    .entry((from.clone(), to))
                    .or_insert_with(|| file.display().to_string());
            }
        }
    }
    edges
}

#[test]
fn the_modules_import_one_another_without_a_cycle() {
    let edges = edges();
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    // Depth-first search; a module reached again while on the path closes a cycle.
    fn visit<'a>(
        m: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(i) = path.iter().position(|p| *p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m);
            return Some(cycle);
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for n in next.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for m in next.keys() {
        if let Some(cycle) = visit(m, &next, &mut Vec::new(), &mut done) {
            let why: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    format!(
                        "{} -> {} ({})",
                        w[0],
                        w[1],
                        edges[&(w[0].to_owned(), w[1].to_owned())]
                    )
                })
                .collect();
            panic!("import cycle:\n  {}", why.join("\n  "));
        }
    }
    // Where a method is chosen and where it is built stay apart: one module sees both.
    let sees = |m: &str, of: &str| edges.contains_key(&(m.to_owned(), of.to_owned()));
    assert!(!sees("methods", "select"), "methods imports select");
    let both: Vec<&str> = next
        .keys()
        .copied()
        .filter(|m| sees(m, "select") && sees(m, "methods"))
        .collect();
    assert_eq!(
        both,
        ["prepare"],
        "modules that see both select and methods"
    );
}

/// The checker reads what it should: the edges it finds include ones known to exist.
#[test]
fn the_layering_check_sees_known_imports() {
    let edges = edges();
    for (a, b) in [
        ("methods", "plan"),
        ("methods", "gpu"),
        ("select", "methods"),
        ("prepare", "select"),
        ("prepare", "methods"),
        ("methods", "method"),
    ] {
        assert!(
            edges.contains_key(&(a.to_owned(), b.to_owned())),
            "{a} -> {b} not seen; edges: {:?}",
            edges.keys().collect::<Vec<_>>()
        );
    }
}
