//! Loading the component: the file `--component` names, or the one bundled into the binary,
//! through the compiled-component cache unless it is turned off; with a one-line reason when the
//! file is not a usable one.

use std::path::{Path, PathBuf};

use sequencer_host::runtime::CacheOutcome;
use sequencer_host::{ComponentCache, Limits, Runtime};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use super::common::{CliError, one_line};

/// The interface the host needs the component to export.
pub const EXPECTED_EXPORT: &str = "sequencer:plugin/sequencer-api@0.3.0";

/// Which component to run and where compiled components are kept.
#[derive(clap::Args, Debug, Clone)]
pub struct ComponentArgs {
    /// The sequencer component (.wasm), as scripts/build-component.sh prints it; without it,
    /// the component bundled into this binary.
    #[arg(long, env = "SEQUENCER_COMPONENT")]
    pub component: Option<PathBuf>,
    /// Where compiled components are kept so that later runs start without compiling
    /// (default: $SEQUENCER_CACHE/components, else ~/.cache/sequencer/components); `off` for
    /// no cache.
    #[arg(long, env = "SEQUENCER_COMPONENT_CACHE", value_name = "DIR|off")]
    pub component_cache: Option<PathBuf>,
}

impl ComponentArgs {
    /// The cache to use, if any.
    fn cache(&self) -> Option<ComponentCache> {
        match &self.component_cache {
            Some(dir) if dir.as_os_str() == "off" => None,
            Some(dir) => Some(ComponentCache::new(dir)),
            None => ComponentCache::default_dir().map(ComponentCache::new),
        }
    }

    /// What the run is loading, for its log lines.
    pub fn describe(&self) -> String {
        match &self.component {
            Some(path) => format!("component {}", path.display()),
            None => "the bundled component".into(),
        }
    }
}

/// Compiles the component (or reads it from the cache); reads its file only.
pub fn load(args: &ComponentArgs, limits: Limits) -> Result<Runtime, CliError> {
    let mut builder = Runtime::builder().limits(limits);
    if let Some(cache) = args.cache() {
        builder = builder.cache(cache);
    }
    let runtime = match &args.component {
        Some(path) => builder
            .load_file(path)
            .map_err(|e| CliError(explain(path, &e.to_string())))?,
        None => builder
            .load_bundled()
            .map_err(|e| CliError(format!("{e} (--component FILE or SEQUENCER_COMPONENT)")))?,
    };
    // A damaged entry is worth a warning; a cache folder this user cannot write (a read-only
    // home, another user's) only costs the compilation it would have saved, so it is said at
    // debug level (-v), never as a line beside a run's one-line refusal.
    match runtime.cache_outcome() {
        Some(outcome @ CacheOutcome::Replaced(_)) => {
            tracing::warn!("{}: {outcome}", args.describe());
        }
        Some(outcome) => tracing::debug!("{}: {outcome}", args.describe()),
        None => {}
    }
    Ok(runtime)
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
