//! With the `bundled-component` feature, puts the sequencer WASI component into the host's
//! binary, so that `sequencer-host run` (and `Runtime::bundled`) need no component file.
//!
//! Where the component comes from, first match wins:
//! 1. `SEQUENCER_BUNDLED_COMPONENT=<file>`: that file, as it is.
//! 2. The core crate's sources (inside this repository the workspace root, elsewhere
//!    `DEP_PLOG_SEQUENCER_SOURCE`, published by the core's build script), compiled for
//!    `wasm32-wasip2` by a nested `cargo rustc --crate-type cdylib` in a target folder of its own
//!    (`<target>/bundled-component`, the folder `scripts/build-component.sh` builds in too, so the
//!    two share one build). Inside this repository it is the workspace's `wasm` profile; from a
//!    published crate, a copy of the core's package built with the same settings.
//!
//! When the `wasm32-wasip2` target is not installed the host is built without a component and
//! says so (a cargo warning now, a one-line error from `run` later); it never fails the build
//! for that. A component that does not compile fails the build with cargo's own messages.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(bundled_component)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=SEQUENCER_BUNDLED_COMPONENT");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    if env::var_os("CARGO_FEATURE_BUNDLED_COMPONENT").is_none() {
        return;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dest = out.join("sequencer.wasm");
    match component(&out) {
        Some(wasm) => {
            fs::copy(&wasm, &dest).unwrap_or_else(|e| {
                panic!(
                    "cannot copy the component {} into OUT_DIR: {e}",
                    wasm.display()
                )
            });
            println!("cargo::rustc-cfg=bundled_component");
        }
        None => {
            let _ = fs::remove_file(&dest);
        }
    }
}

/// The component file to bundle, built if need be; `None` when it cannot be had here.
fn component(out: &Path) -> Option<PathBuf> {
    if let Some(given) = env::var_os("SEQUENCER_BUNDLED_COMPONENT") {
        let given = PathBuf::from(given);
        println!("cargo::rerun-if-changed={}", given.display());
        if !given.is_file() {
            panic!(
                "SEQUENCER_BUNDLED_COMPONENT names {}, which is not a file",
                given.display()
            );
        }
        return Some(given);
    }
    if env::var_os("DOCS_RS").is_some() {
        return None; // docs.rs builds documentation only, without the wasm target
    }
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    // Inside this repository the core is the workspace's root package. Its build script's
    // output is not trusted for that: cargo gives the package copy `cargo publish --dry-run`
    // verifies the same build-script run folder as the tree, so after a dry run it would
    // keep naming that (stale) copy.
    let source = match manifest_dir.parent().filter(|root| is_core_package(root)) {
        Some(root) => root.to_path_buf(),
        None => PathBuf::from(
            env::var_os("DEP_PLOG_SEQUENCER_SOURCE")
                .expect("plog-sequencer's build script publishes its source folder"),
        ),
    };
    for part in ["src", "wit", "Cargo.toml", "build.rs"] {
        println!("cargo::rerun-if-changed={}", source.join(part).display());
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if !target_installed(&rustc) {
        println!(
            "cargo::warning=the {TARGET} target is not installed, so this sequencer-host has no \
             bundled component (`run` will need --component); to bundle it: \
             rustup target add {TARGET}, then build again"
        );
        return None;
    }
    let target_dir = target_root(out).join("bundled-component");
    let in_workspace = manifest_dir.parent() == Some(source.as_path());
    let mut cargo = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // What the outer build set for itself must not leak into the component's build: a linting
    // wrapper, flags meant for the host target, the outer target folder.
    for var in [
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cargo.env_remove(var);
    }
    // The core's library as a `cdylib` (its manifest declares a Rust library only), exactly as
    // scripts/build-component.sh builds it.
    cargo
        .args([
            "rustc",
            "--quiet",
            "--lib",
            "--crate-type",
            "cdylib",
            "--target",
            TARGET,
        ])
        .args(["--features", "component", "--target-dir"])
        .arg(&target_dir);
    let profile_dir = if in_workspace {
        // The repository's own build: the workspace's lock file and `wasm` profile, exactly
        // what scripts/build-component.sh builds.
        cargo
            .arg("--manifest-path")
            .arg(source.join("Cargo.toml"))
            .args(["-p", "plog-sequencer", "--profile", "wasm"]);
        "wasm"
    } else {
        // A published core: build a copy of its package (cargo would write a lock file beside
        // a registry's sources), with the settings of the workspace's `wasm` profile.
        let copy = target_dir.join(format!(
            "src-plog-sequencer-{}",
            env::var("DEP_PLOG_SEQUENCER_VERSION").unwrap_or_else(|_| "current".into())
        ));
        copy_package(&source, &copy);
        cargo
            .arg("--manifest-path")
            .arg(copy.join("Cargo.toml"))
            .arg("--release")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
            .env("CARGO_PROFILE_RELEASE_LTO", "true")
            .env("CARGO_PROFILE_RELEASE_STRIP", "true")
            .env("CARGO_PROFILE_RELEASE_PANIC", "abort");
        "release"
    };
    let status = cargo
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the component: {e}"));
    if !status.success() {
        panic!("building the sequencer component for {TARGET} failed ({status}); see above");
    }
    Some(
        target_dir
            .join(TARGET)
            .join(profile_dir)
            .join("sequencer.wasm"),
    )
}

/// Whether `dir` holds the core's package (`plog-sequencer`) itself, as this repository's root
/// does.
fn is_core_package(dir: &Path) -> bool {
    fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|manifest| {
        manifest
            .lines()
            .any(|l| l.trim() == r#"name = "plog-sequencer""#)
    }) && dir.join("src").join("component.rs").is_file()
}

/// Whether rustc has the standard library for the component's target.
fn target_installed(rustc: &str) -> bool {
    let Ok(out) = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
    else {
        return false;
    };
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    out.status.success()
        && fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
}

/// The cargo target folder this build runs in (the first ancestor of OUT_DIR that cargo tagged
/// with `CACHEDIR.TAG`), or OUT_DIR itself.
fn target_root(out: &Path) -> PathBuf {
    out.ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .unwrap_or(out)
        .to_path_buf()
}

/// Copies a published package's files (what its `include` shipped) to `to`.
fn copy_package(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("cannot create {}: {e}", to.display()));
    for entry in fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        let (path, name) = (entry.path(), entry.file_name());
        if name == "target" || name == "Cargo.lock" {
            continue;
        }
        if path.is_dir() {
            copy_package(&path, &to.join(&name));
        } else {
            fs::copy(&path, to.join(&name))
                .unwrap_or_else(|e| panic!("cannot copy {}: {e}", path.display()));
        }
    }
}
