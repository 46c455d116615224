//! No cycle among the server's top-level modules: each `crate::<module>` path in `src/` is an
//! edge from the module of the file it is written in, and the edges must form no loop. A
//! cycle lets every module reach every other, which is how a layer ends up knowing HTTP
//! statuses or a settings file ends up depending on the database.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn the_top_level_modules_of_the_server_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(
        graph.len() > 5,
        "too few modules found in {src:?}: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("module cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn a_cycle_is_found_through_nested_imports() {
    let mut graph = Graph::new();
    let code = "use crate::{b::{x, y}, c};\nlet z = crate::d::f(); // crate::e is only a comment";
    for target in targets(code) {
        graph.entry("a".into()).or_default().insert(target);
    }
    let edges: Vec<&str> = graph["a"].iter().map(String::as_str).collect();
    assert_eq!(edges, ["b", "c", "d"]);
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "c", "a"]);
}

/// Edges from each top-level module (a `src/<m>.rs` or `src/<m>/` tree) to those it names.
fn module_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_string_lossy().trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let code = std::fs::read_to_string(&file).unwrap();
        let edges = graph.entry(module.clone()).or_default();
        edges.extend(targets(&code).into_iter().filter(|t| *t != module));
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The top-level modules `code` names through `crate::`, outside `//` comments.
fn targets(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or_default();
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            match rest.strip_prefix('{') {
                Some(group) => found.extend(group_heads(group)),
                None => found.extend(identifier(rest)),
            }
        }
    }
    found.remove("self");
    found
}

/// The first segment of each path in a `{a::b, c, d::{e, f}}` group (opening brace taken).
fn group_heads(group: &str) -> Vec<String> {
    let (mut heads, mut depth, mut at_start) = (Vec::new(), 0, true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_start = true,
            c if at_start && (c.is_alphabetic() || c == '_') => {
                heads.extend(identifier(&group[i..]));
                at_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn identifier(text: &str) -> Option<String> {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (end > 0).then(|| text[..end].to_owned())
}

/// A cycle, as the modules along it (the first repeated at the end), if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        let mut path = Vec::new();
        if let Some(cycle) = visit(graph, start, &mut path, &mut done) {
            return Some(cycle);
        }
    }
    None
}

fn visit(
    graph: &Graph,
    module: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == module) {
        let mut cycle = path[at..].to_vec();
        cycle.push(module.to_owned());
        return Some(cycle);
    }
    if done.contains(module) {
        return None;
    }
    path.push(module.to_owned());
    for next in graph.get(module).into_iter().flatten() {
        if let Some(cycle) = visit(graph, next, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(module.to_owned());
    None
}
