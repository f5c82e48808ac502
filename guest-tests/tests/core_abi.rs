//! The core module's imports and exports are the table of docs/PLUGIN.md ("Every import and
//! export"), name by name and core type by core type: a host written from that table links.
//!
//! Reads the copy the Go and Java packages embed (go/internal/plugin/sequencer-core.wasm);
//! `scripts/build-core-module.sh --check` (run by scripts/test.sh) proves it is what these
//! sources build.

use std::collections::BTreeMap;
use std::path::Path;

use wasmparser::{CompositeInnerType, ExternalKind, Parser, Payload, TypeRef, ValType};

/// What the table says of one function: its core type, and for an export whether it has a
/// `cabi_post_` function.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    core_type: String,
    post: bool,
}

/// The module's imports (keyed `module name`) and exports, as the table writes them.
#[derive(Debug, Default)]
struct Abi {
    imports: BTreeMap<String, Row>,
    exports: BTreeMap<String, Row>,
    memory_exported: bool,
    other_imports: Vec<String>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn type_text(params: &[ValType], results: &[ValType]) -> String {
    let list = |ts: &[ValType]| {
        ts.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if results.is_empty() {
        format!("({})", list(params))
    } else {
        format!("({}) -> {}", list(params), list(results))
    }
}

/// The module as it is.
fn read_module(wasm: &[u8]) -> Abi {
    let mut types = Vec::new();
    let mut funcs: Vec<u32> = Vec::new();
    let mut abi = Abi::default();
    let mut exports = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.expect("a valid core module") {
            Payload::TypeSection(section) => {
                for group in section {
                    for ty in group.expect("a type").into_types() {
                        let CompositeInnerType::Func(f) = &ty.composite_type.inner else {
                            panic!("only function types are expected");
                        };
                        types.push(type_text(f.params(), f.results()));
                    }
                }
            }
            Payload::ImportSection(section) => {
                for import in section.into_imports() {
                    let import = import.expect("an import");
                    match import.ty {
                        TypeRef::Func(t) => {
                            funcs.push(t);
                            let row = Row {
                                core_type: types[t as usize].clone(),
                                post: false,
                            };
                            abi.imports
                                .insert(format!("{} {}", import.module, import.name), row);
                        }
                        _ => abi
                            .other_imports
                            .push(format!("{} {}", import.module, import.name)),
                    }
                }
            }
            Payload::FunctionSection(section) => {
                funcs.extend(section.into_iter().map(|f| f.expect("a function")));
            }
            Payload::ExportSection(section) => {
                for export in section {
                    let export = export.expect("an export");
                    exports.push((export.name.to_string(), export.kind, export.index));
                }
            }
            _ => {}
        }
    }
    let posts: Vec<String> = exports
        .iter()
        .filter_map(|(name, _, _)| name.strip_prefix("cabi_post_").map(str::to_string))
        .collect();
    for (name, kind, index) in exports {
        match kind {
            ExternalKind::Memory if name == "memory" => abi.memory_exported = true,
            ExternalKind::Func if !name.starts_with("cabi_post_") => {
                let core_type = types[funcs[index as usize] as usize].clone();
                let post = posts.contains(&name);
                abi.exports.insert(name, Row { core_type, post });
            }
            ExternalKind::Func => {}
            _ => abi.other_imports.push(format!("export {name} ({kind:?})")),
        }
    }
    abi
}

/// The backquoted words of a table cell.
fn quoted(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// The module as docs/PLUGIN.md's table says it is.
fn read_table(doc: &str) -> Abi {
    let begin = doc
        .find("<!-- core-abi:begin -->")
        .expect("the table's begin marker");
    let end = doc
        .find("<!-- core-abi:end -->")
        .expect("the table's end marker");
    let mut abi = Abi {
        memory_exported: true,
        ..Abi::default()
    };
    for line in doc[begin..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let names = quoted(cells[0]);
        let core_type = quoted(cells[1]).first().expect("a core type").to_string();
        match names.as_slice() {
            [module, name] => {
                abi.imports.insert(
                    format!("{module} {name}"),
                    Row {
                        core_type,
                        post: false,
                    },
                );
            }
            [name] => {
                let post = match cells[2] {
                    "post" => true,
                    "—" => false,
                    other => panic!("{name}: the post column says {other:?}, not `post` or `—`"),
                };
                abi.exports
                    .insert(name.to_string(), Row { core_type, post });
            }
            _ => panic!("a row names one export or an import's module and name: {line}"),
        }
    }
    abi
}

/// Every difference between two maps, one line each.
fn drift(what: &str, table: &BTreeMap<String, Row>, module: &BTreeMap<String, Row>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, row) in table {
        match module.get(name) {
            None => out.push(format!("{what} {name}: in the table, not in the module")),
            Some(m) if m != row => out.push(format!(
                "{what} {name}: the table says {row:?}, the module {m:?}"
            )),
            Some(_) => {}
        }
    }
    for name in module.keys().filter(|n| !table.contains_key(*n)) {
        out.push(format!("{what} {name}: in the module, not in the table"));
    }
    out
}

#[test]
fn the_core_module_is_what_docs_plugin_md_says_import_by_import_and_export_by_export() {
    let wasm = std::fs::read(root().join("go/internal/plugin/sequencer-core.wasm"))
        .expect("the committed core module (bash scripts/build-core-module.sh --sync)");
    let doc = std::fs::read_to_string(root().join("docs/PLUGIN.md")).unwrap();
    let module = read_module(&wasm);
    let table = read_table(&doc);
    let mut problems = drift("import", &table.imports, &module.imports);
    problems.extend(drift("export", &table.exports, &module.exports));
    problems.extend(
        module
            .other_imports
            .iter()
            .map(|i| format!("unexpected: {i}")),
    );
    if !module.memory_exported {
        problems.push("the module exports no `memory`".into());
    }
    assert!(
        problems.is_empty(),
        "docs/PLUGIN.md's core ABI table drifted:\n{}",
        problems.join("\n")
    );
    // The table covers the contract: every host-provided import is one of the sequencer's own
    // interfaces or a resource intrinsic; nothing from WASI.
    assert_eq!(table.imports.len(), 10);
    for key in table.imports.keys() {
        assert!(
            key.starts_with("sequencer:plugin/") || key.starts_with("[export]sequencer:plugin/"),
            "import {key} is not the sequencer's own"
        );
    }
}

#[test]
fn the_drift_check_notices_a_changed_type_a_missing_row_and_a_post_flag() {
    let wasm = std::fs::read(root().join("go/internal/plugin/sequencer-core.wasm")).unwrap();
    let doc = std::fs::read_to_string(root().join("docs/PLUGIN.md")).unwrap();
    let module = read_module(&wasm);
    let start = "| `sequencer:plugin/instance@0.3.0#start` | `(i32, i64) -> i32` | — |";
    assert!(doc.contains(start), "the table's row for instance#start");
    for (edit, expect) in [
        (start.replace("(i32, i64)", "(i32, i32)"), "the table says"),
        (String::new(), "in the module, not in the table"),
        (start.replace("| — |", "| post |"), "the table says"),
    ] {
        let table = read_table(&doc.replace(start, &edit));
        let problems = drift("export", &table.exports, &module.exports);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("instance@0.3.0#start:") && p.contains(expect)),
            "{edit:?}: {problems:?}"
        );
    }
}
