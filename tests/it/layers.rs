//! The workspace's import graph stays a house with floors: within every crate no file imports
//! itself back through others (no cycle of files), and within every folder the files and
//! subfolders it holds import each other one way only (no cycle of rooms, so each can be
//! given a floor and no import runs back up).
//!
//! The graph is read from the code as it stands: `crate::`, `super::` and `self::` paths
//! (in `use` lines and inline), resolved to the file of the longest module they name, with
//! `crate::Name` re-exported by `lib.rs` followed to the module it comes from. Comments and
//! `#[cfg(test)]` modules are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates of the workspace, by their source folders (a binary's `main.rs` stands on top
/// of its library and is read with it).
const CRATES: [&str; 4] = ["src", "runner/src", "archive/src", "decide/src"];

/// One crate's files: module path (`["site", "menu"]`) → file.
struct Crate {
    root: PathBuf,
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// Names `lib.rs` re-exports (`pub use module::{Name, …}`) → the module they come from.
    reexports: BTreeMap<String, Vec<String>>,
}

fn module_path(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).expect("under the crate root");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `text` without comment lines and without `#[cfg(test)] mod … { … }` blocks.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            // Skip the item it guards when that is a module with a body.
            let Some(next) = lines.peek() else { break };
            let n = next.trim_start();
            if (n.starts_with("mod ")
                || n.starts_with("pub mod ")
                || n.starts_with("pub(crate) mod "))
                && n.ends_with('{')
            {
                let mut depth = 0i64;
                for l in lines.by_ref() {
                    depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                    if depth <= 0 {
                        break;
                    }
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path that starts with `crate`, `super` or `self` in `code`, braces expanded one
/// level deep (`super::{a, b::c}` gives `super::a` and `super::b::c`).
fn paths(code: &str) -> Vec<Vec<String>> {
    let bytes: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != ':';
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let head = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|h| rest.starts_with(h));
        let (true, Some(head)) = (starts_word, head) else {
            i += 1;
            continue;
        };
        let mut prefix = vec![head.trim_end_matches("::").to_string()];
        i += head.len();
        loop {
            // Further `super::` and identifiers, then either the end or a brace group.
            let start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            if i > start {
                prefix.push(bytes[start..i].iter().collect());
                if bytes.get(i) == Some(&':') && bytes.get(i + 1) == Some(&':') {
                    i += 2;
                    continue;
                }
                out.push(prefix);
                break;
            }
            if bytes.get(i) == Some(&'{') {
                let mut depth = 0;
                let mut item = String::new();
                let mut items = Vec::new();
                while i < bytes.len() {
                    let c = bytes[i];
                    i += 1;
                    match c {
                        '{' => {
                            depth += 1;
                            if depth > 1 {
                                item.push(c);
                            }
                        }
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                items.push(std::mem::take(&mut item));
                                break;
                            }
                            item.push(c);
                        }
                        ',' if depth == 1 => items.push(std::mem::take(&mut item)),
                        _ => item.push(c),
                    }
                }
                for item in items {
                    let segs: Vec<String> = item
                        .trim()
                        .split("::")
                        .map(|s| s.trim().chars().take_while(|c| is_ident(*c)).collect())
                        .take_while(|s: &String| !s.is_empty())
                        .collect();
                    let mut p = prefix.clone();
                    p.extend(segs);
                    out.push(p);
                }
            } else {
                out.push(prefix);
            }
            break;
        }
    }
    out
}

impl Crate {
    fn read(root: &Path) -> Self {
        let mut files = Vec::new();
        rust_files(root, &mut files);
        let modules: BTreeMap<Vec<String>, PathBuf> = files
            .iter()
            .filter(|f| !f.ends_with("main.rs") || !root.join("lib.rs").exists())
            .map(|f| (module_path(root, f), f.clone()))
            .collect();
        let mut reexports = BTreeMap::new();
        if let Ok(lib) = std::fs::read_to_string(root.join("lib.rs")) {
            for statement in code_of(&lib).split(';') {
                let Some(rest) = statement.trim().strip_prefix("pub use ") else {
                    continue;
                };
                let (module, names) = rest.split_once("::").unwrap_or((rest, ""));
                let module: Vec<String> = vec![module.trim().to_string()];
                for name in names
                    .trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace())
                    .split(',')
                {
                    let name = name.trim().rsplit("::").next().unwrap_or("").trim();
                    if !name.is_empty() {
                        reexports.insert(name.to_string(), module.clone());
                    }
                }
            }
        }
        Self {
            root: root.to_path_buf(),
            modules,
            reexports,
        }
    }

    /// The file a path written in `from` names: its longest prefix that is a module.
    fn target(&self, from: &[String], path: &[String]) -> Option<PathBuf> {
        // `self` is the module the file is, `super` its parent (a `mod.rs` file is its
        // folder's module, so the same rule holds).
        let mut abs: Vec<String> = match path[0].as_str() {
            "crate" => Vec::new(),
            _ => from.to_vec(),
        };
        let mut rest = &path[1..];
        if path[0] == "super" {
            abs.pop();
        }
        while rest.first().map(String::as_str) == Some("super") {
            abs.pop();
            rest = &rest[1..];
        }
        if path[0] == "crate" {
            if let Some(module) = rest.first().and_then(|n| self.reexports.get(n)) {
                if !self.modules.contains_key(&vec![rest[0].clone()]) {
                    return self.modules.get(module).cloned();
                }
            }
        }
        abs.extend(rest.iter().cloned());
        (0..=abs.len())
            .rev()
            .find_map(|n| self.modules.get(&abs[..n]))
            .cloned()
    }

    /// File → the files it imports.
    fn graph(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut graph = BTreeMap::new();
        for (module, file) in &self.modules {
            let code = code_of(&std::fs::read_to_string(file).unwrap());
            let mut to = BTreeSet::new();
            for p in paths(&code) {
                if let Some(t) = self.target(module, &p) {
                    let lib_face = t == self.root.join("lib.rs");
                    if t != *file && !lib_face {
                        to.insert(t);
                    }
                }
            }
            graph.insert(file.clone(), to);
        }
        graph
    }
}

/// The strongly connected components of more than one node (Tarjan's algorithm).
fn cycles<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on: BTreeSet<N>,
        out: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(g: &BTreeMap<N, BTreeSet<N>>, v: &N, s: &mut State<N>) {
        let i = s.index.len();
        s.index.insert(v.clone(), i);
        s.low.insert(v.clone(), i);
        s.stack.push(v.clone());
        s.on.insert(v.clone());
        for w in g.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(g, w, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(&w);
                let done = w == *v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(graph, v, &mut s);
        }
    }
    s.out
}

/// The problems of one crate's graph: file cycles, then, for every folder, cycles among the
/// rooms it holds (its files and subfolders, each subfolder counted as one room).
fn problems(root: &Path, graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<String> {
    let name = |p: &PathBuf| match p.strip_prefix(root).unwrap().display().to_string() {
        top if top.is_empty() => ".".to_string(),
        path => path,
    };
    let mut out = Vec::new();
    for c in cycles(graph) {
        let names: Vec<String> = c.iter().map(name).collect();
        out.push(format!(
            "files import each other in a circle: {}",
            names.join(", ")
        ));
    }
    let folders: BTreeSet<PathBuf> = graph
        .keys()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .flat_map(|f| f.ancestors().map(Path::to_path_buf).collect::<Vec<_>>())
        .filter(|f| f.starts_with(root))
        .collect();
    for folder in folders {
        // The room of `file` inside `folder`: the child of `folder` on its path.
        let room = |file: &PathBuf| -> Option<PathBuf> {
            let rel = file.strip_prefix(&folder).ok()?;
            Some(folder.join(rel.iter().next()?))
        };
        // A folder's own `mod.rs` is its face; it is not one of its rooms.
        let face = folder.join("mod.rs");
        let mut rooms: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (from, tos) in graph {
            let Some(a) = room(from).filter(|_| *from != face) else {
                continue;
            };
            for to in tos {
                if let Some(b) = room(to).filter(|_| *to != face) {
                    if a != b {
                        rooms.entry(a.clone()).or_default().insert(b);
                    }
                }
            }
        }
        for c in cycles(&rooms) {
            if c.iter().all(|r| r.is_file()) {
                continue; // already reported as a cycle of files
            }
            let names: Vec<String> = c.iter().map(name).collect();
            let ties: Vec<String> = graph
                .iter()
                .flat_map(|(f, tos)| tos.iter().map(move |t| (f, t)))
                .filter(|(f, t)| {
                    let (a, b) = (room(f), room(t));
                    a != b
                        && a.as_ref().is_some_and(|a| c.contains(a))
                        && b.as_ref().is_some_and(|b| c.contains(b))
                })
                .map(|(f, t)| format!("{} -> {}", name(f), name(t)))
                .collect();
            out.push(format!(
                "rooms of {} import each other in a circle: {} ({})",
                name(&folder),
                names.join(", "),
                ties.join("; ")
            ));
        }
    }
    out
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_import_graph_has_no_circle_in_any_crate_or_folder() {
    let mut all = Vec::new();
    let mut files = 0;
    let mut imports = 0;
    for dir in CRATES {
        let root = workspace().join(dir);
        let krate = Crate::read(&root);
        files += krate.modules.len();
        let graph = krate.graph();
        imports += graph.values().map(BTreeSet::len).sum::<usize>();
        for p in problems(&root, &graph) {
            all.push(format!("{dir}: {p}"));
        }
    }
    assert!(files > 150, "read {files} files");
    assert!(
        imports > files,
        "{imports} imports between {files} files: the reader is broken"
    );
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// The check itself finds what it is for: an upward import added to a copy of a small tree.
#[test]
fn the_check_finds_an_added_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    let write = |p: &str, text: &str| {
        let p = root.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "lib.rs",
        "pub mod low;\npub mod high;\npub use low::Thing;\n",
    );
    write("low/mod.rs", "pub mod a;\npub mod b;\npub use a::Thing;\n");
    write("low/a.rs", "pub struct Thing;\n");
    write(
        "low/b.rs",
        "use super::a::Thing;\n// use crate::high::x; (a comment)\n",
    );
    write(
        "high.rs",
        "use crate::low::{a::Thing, b};\nuse crate::Thing as T;\n#[cfg(test)]\nmod tests {\n    use crate::high;\n}\n",
    );
    let clean = Crate::read(&root);
    let graph = clean.graph();
    assert_eq!(
        graph[&root.join("high.rs")],
        BTreeSet::from([
            root.join("low/a.rs"),
            root.join("low/b.rs"),
            root.join("low/mod.rs")
        ]),
        "brace groups resolve to their files, a lib.rs re-export to the module it names"
    );
    assert_eq!(problems(&root, &graph), Vec::<String>::new());

    // low/b.rs now reaches up into high.rs: a circle of the two files, and of the rooms
    // `high.rs` and `low/` at the crate's root.
    write(
        "low/b.rs",
        "use super::a::Thing;\npub fn f() { crate::high::g() }\n",
    );
    let found = problems(&root, &Crate::read(&root).graph());
    assert_eq!(
        found,
        vec![
            "files import each other in a circle: high.rs, low/b.rs".to_string(),
            "rooms of . import each other in a circle: high.rs, low (high.rs -> low/a.rs; \
             high.rs -> low/b.rs; high.rs -> low/mod.rs; low/b.rs -> high.rs)"
                .to_string()
        ]
    );

    // And, the upward import taken back, a file that imports its importer: a circle of
    // files inside one folder.
    write("low/b.rs", "use super::a::Thing;\n");
    write("low/a.rs", "pub struct Thing;\nuse super::b::f;\n");
    let found = problems(&root, &Crate::read(&root).graph());
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("files import each other in a circle: low/a.rs, low/b.rs")),
        "{found:?}"
    );
}
