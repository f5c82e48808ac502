//! Loading the component, with a one-line reason when the file is not a usable one.

use std::path::Path;

use sequencer_host::{Limits, Runtime};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use super::{CliError, one_line};

/// The interface the host needs the component to export.
pub const EXPECTED_EXPORT: &str = "sequencer:plugin/sequencer-api@0.2.0";

/// Compiles the component at `path`; reads it only.
pub fn load(path: &Path, limits: Limits) -> Result<Runtime, CliError> {
    match Runtime::from_file(path, limits) {
        Ok(r) => Ok(r),
        Err(e) => Err(CliError(explain(path, &e.to_string()))),
    }
}

/// Why the component at `path` could not be loaded, given the loader's message.
fn explain(path: &Path, message: &str) -> String {
    let shown = path.display();
    let Ok(bytes) = std::fs::read(path) else {
        return one_line(message);
    };
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return format!(
            "component {shown}: not a WebAssembly component (the file has no WebAssembly header)"
        );
    }
    if bytes[4..8] == [1, 0, 0, 0] {
        return format!(
            "component {shown}: a core WebAssembly module, not a component (build it with scripts/build-component.sh)"
        );
    }
    if let Some(exports) = exports(&bytes)
        && !exports.iter().any(|e| e == EXPECTED_EXPORT)
    {
        let found = exports
            .iter()
            .filter(|e| e.starts_with("sequencer:"))
            .cloned()
            .collect::<Vec<_>>();
        let found = if found.is_empty() {
            exports.join(", ")
        } else {
            found.join(", ")
        };
        return format!(
            "component {shown}: incompatible WIT version: the host needs {EXPECTED_EXPORT}, the component exports {}",
            if found.is_empty() { "nothing" } else { &found }
        );
    }
    format!("component {}", one_line(message))
}

/// The names the component exports, if it compiles at all.
fn exports(bytes: &[u8]) -> Option<Vec<String>> {
    let engine = Engine::new(&Config::new()).ok()?;
    let component = Component::new(&engine, bytes).ok()?;
    let mut names: Vec<String> = component
        .component_type()
        .exports(&engine)
        .map(|(name, _)| name.to_string())
        .collect();
    names.sort();
    Some(names)
}
