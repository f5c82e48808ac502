//! A cache of compiled components on disk, so a process starts without compiling the component
//! again (about 0.2 s in a release build, seconds in a debug build of an embedder whose
//! wasmtime is not optimised).
//!
//! An entry is wasmtime's own serialization of the compiled component
//! (`Component::serialize`), filed under a key made of the engine's compatibility hash (the
//! wasmtime version, the target and every compilation setting) and the component's bytes, with
//! a header that proves, before wasmtime is given the bytes, that the entry is whole and is the
//! one the key names:
//!
//! ```text
//! "sequencer-compiled\n"  magic (19 bytes)
//! u32 LE                  entry format (1)
//! [u8; 32]                the key: SHA-256 of the engine's hash and the component's bytes
//! u64 LE                  the artifact's length
//! [u8; 32]                SHA-256 of the artifact
//! artifact                Component::serialize's bytes
//! ```
//!
//! A missing, short, corrupted or stale entry is never an error: the component is compiled and
//! the entry written anew (to a temporary file renamed into place, so a reader never sees half
//! of one and two processes may write at once). Only a cache folder that cannot be written is
//! reported, and then the compiled component is used all the same.
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): 244 lines and one
//! `unsafe` (the deserialization, after the checks below), for a 10-event `sequencer-host run`
//! in 0.12–0.13 s instead of 0.32–0.35 (three rounds, 2026-12-02).

use std::fmt;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8] = b"sequencer-compiled\n";
const FORMAT: u32 = 1;
const HEADER_LEN: usize = MAGIC.len() + 4 + 32 + 8 + 32;

/// A folder of compiled components, shared by every process that points at it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentCache {
    dir: PathBuf,
}

/// What [`ComponentCache::load_or_compile`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// The compiled component was read from the cache; nothing was compiled.
    Hit,
    /// There was no entry: the component was compiled and the entry written.
    Compiled,
    /// There was an entry, but it was unusable (named by the reason): the component was
    /// compiled and the entry written anew.
    Replaced(String),
    /// The component was compiled, but the entry could not be written (the reason says why).
    NotStored(String),
}

impl fmt::Display for CacheOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hit => f.write_str("read from the cache"),
            Self::Compiled => f.write_str("compiled and cached"),
            Self::Replaced(why) => write!(f, "compiled and cached again ({why})"),
            Self::NotStored(why) => write!(f, "compiled, not cached ({why})"),
        }
    }
}

impl ComponentCache {
    /// A cache in `dir` (created when the first entry is written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The default folder: `$SEQUENCER_CACHE/components` if set, else
    /// `$XDG_CACHE_HOME/sequencer/components`, else `$HOME/.cache/sequencer/components`;
    /// `None` when none of those variables is set.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let base = var("SEQUENCER_CACHE")
            .map(PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("sequencer")))
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache/sequencer")))?;
        Some(base.join("components"))
    }

    /// The folder entries are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file the entry for `bytes` compiled by `engine` lives in.
    pub fn entry_path(&self, engine: &Engine, bytes: &[u8]) -> PathBuf {
        self.dir
            .join(format!("{}.cwasm", hex(&key(engine, bytes)[..16])))
    }

    /// The component `bytes` compiled for `engine`: from the cache when an entry for exactly
    /// these bytes and this engine is there and whole, else compiled (and the entry written).
    /// Fails only when the bytes do not compile.
    pub fn load_or_compile(
        &self, engine: &Engine, bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let key = key(engine, bytes);
        let path = self.entry_path(engine, bytes);
        let stale = match fs::read(&path) {
            Ok(entry) => match artifact(&entry, &key) {
                // SAFETY: the artifact is the output of `Component::serialize` for an engine of
                // this compatibility hash and these component bytes, as the key proves; its
                // SHA-256 proves it unchanged since it was written (wasmtime additionally
                // refuses an artifact of another version or configuration).
                Ok(artifact) => match unsafe { Component::deserialize(engine, artifact) } {
                    Ok(component) => return Ok((component, CacheOutcome::Hit)),
                    Err(e) => Some(format!("wasmtime refused the entry: {e}")),
                },
                Err(why) => Some(why.to_string()),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(format!("cannot read {}: {e}", path.display())),
        };
        let component = Component::new(engine, bytes)?;
        let outcome = match self.store(&path, &key, &component) {
            Err(why) => CacheOutcome::NotStored(why),
            Ok(()) => match stale {
                Some(why) => CacheOutcome::Replaced(why),
                None => CacheOutcome::Compiled,
            },
        };
        Ok((component, outcome))
    }

    /// Writes the entry for `component` at `path`, whole or not at all.
    fn store(&self, path: &Path, key: &[u8; 32], component: &Component) -> Result<(), String> {
        let artifact = component
            .serialize()
            .map_err(|e| format!("cannot serialize the compiled component: {e}"))?;
        let mut entry = Vec::with_capacity(HEADER_LEN + artifact.len());
        entry.extend_from_slice(MAGIC);
        entry.extend_from_slice(&FORMAT.to_le_bytes());
        entry.extend_from_slice(key);
        entry.extend_from_slice(&(artifact.len() as u64).to_le_bytes());
        entry.extend_from_slice(&Sha256::digest(&artifact));
        entry.extend_from_slice(&artifact);
        fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        static TEMP: AtomicU64 = AtomicU64::new(0);
        let temp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
            std::process::id(),
            TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        let written = fs::File::create(&temp)
            .and_then(|mut f| f.write_all(&entry))
            .and_then(|()| fs::rename(&temp, path));
        written.map_err(|e| {
            let _ = fs::remove_file(&temp);
            format!("cannot write {}: {e}", path.display())
        })
    }
}

/// Why an entry is unusable.
#[derive(Debug)]
enum Unusable {
    Short,
    Magic,
    Format(u32),
    Key,
    Length,
    Digest,
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Short => f.write_str("the entry is shorter than its header"),
            Self::Magic => f.write_str("the entry is not a compiled sequencer component"),
            Self::Format(v) => write!(f, "the entry has format {v}, not {FORMAT}"),
            Self::Key => f.write_str("the entry is for other component bytes or another engine"),
            Self::Length => f.write_str("the entry is truncated or has bytes after its end"),
            Self::Digest => f.write_str("the entry's bytes do not match its checksum"),
        }
    }
}

/// The artifact inside `entry`, if its header proves it whole and keyed `key`.
fn artifact<'a>(entry: &'a [u8], key: &[u8; 32]) -> Result<&'a [u8], Unusable> {
    if entry.len() < HEADER_LEN {
        return Err(Unusable::Short);
    }
    let (magic, rest) = entry.split_at(MAGIC.len());
    if magic != MAGIC {
        return Err(Unusable::Magic);
    }
    let (format, rest) = rest.split_at(4);
    let format = u32::from_le_bytes(format.try_into().expect("4 bytes"));
    if format != FORMAT {
        return Err(Unusable::Format(format));
    }
    let (entry_key, rest) = rest.split_at(32);
    if entry_key != key {
        return Err(Unusable::Key);
    }
    let (len, rest) = rest.split_at(8);
    let len = u64::from_le_bytes(len.try_into().expect("8 bytes"));
    let (digest, artifact) = rest.split_at(32);
    if artifact.len() as u64 != len {
        return Err(Unusable::Length);
    }
    if Sha256::digest(artifact).as_slice() != digest {
        return Err(Unusable::Digest);
    }
    Ok(artifact)
}

/// SHA-256 of the engine's compatibility hash and the component's bytes.
fn key(engine: &Engine, bytes: &[u8]) -> [u8; 32] {
    /// Feeds what `Hash` writes into a SHA-256.
    struct ShaHasher(Sha256);
    impl Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            0 // never asked: the digest is taken from the SHA-256 itself
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut h = ShaHasher(Sha256::new());
    h.write(b"engine\0");
    engine.precompile_compatibility_hash().hash(&mut h);
    h.write(b"\0component\0");
    h.write(&(bytes.len() as u64).to_le_bytes());
    h.write(bytes);
    h.0.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
