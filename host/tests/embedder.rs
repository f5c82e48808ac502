//! An embedder's program, built outside this workspace as a user would build it (a crate of its
//! own depending on the host by path, default features off, the redb store on): the
//! `embedded_store` example opens a redb store through `store::open`, numbers events,
//! restarts and numbers more; then `sequencer-host check` passes on the directory it left,
//! with no extra call (the layout was recorded by the open).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{component_path, run_host, text};

const HOST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The outside crate's manifest: the host and the core by path, the workspace's profile for
/// dependencies (so the build reuses what the workspace built), a workspace of its own. The
/// host and the core are dependencies here, which that profile would optimise: they are
/// compiled as the workspace compiles its own crates instead (opt-level 0), since this build
/// of them is made for one short run.
fn manifest() -> String {
    let host = Path::new(HOST_DIR);
    let core = host.parent().expect("the workspace root");
    format!(
        r#"[package]
name = "outside-embedder"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
plog-sequencer-host = {{ path = "{}", default-features = false, features = ["redb"] }}
plog-sequencer = {{ path = "{}" }}

{}
[profile.dev.package.plog-sequencer-host]
opt-level = 0

[profile.dev.package.plog-sequencer]
opt-level = 0

[workspace]
"#,
        host.display(),
        core.display(),
        dependency_profile(core)
    )
}

/// The workspace's `[profile.dev.package."*"]` section as its Cargo.toml has it, so the outside
/// crate compiles its dependencies with the same settings and reuses the workspace's builds.
fn dependency_profile(workspace: &Path) -> String {
    let manifest =
        std::fs::read_to_string(workspace.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let header = r#"[profile.dev.package."*"]"#;
    let start = manifest
        .find(header)
        .expect("the workspace's Cargo.toml sets a profile for dependencies");
    manifest[start..]
        .lines()
        .enumerate()
        .take_while(|(i, line)| *i == 0 || !line.starts_with('['))
        .map(|(_, line)| line)
        .filter(|line| !line.starts_with('#'))
        .fold(String::new(), |out, line| out + line + "\n")
}

/// Where the outside crate lives: a folder of the build directory this test was built in
/// (`CARGO_TARGET_DIR`, else the workspace's `target/`), kept between runs so that a second run
/// builds only what changed.
fn outside_dir() -> PathBuf {
    target_dir().join("outside-embedder")
}

/// The build directory this test was built in. The outside crate builds there too: the host's
/// feature pins (host/Cargo.toml) give its wasmtime and Cranelift the same features as the
/// workspace's, so it compiles only the host, the core and itself. (A cargo command run by a
/// test may use the target folder of the `cargo test` that runs it: the lock is released once
/// the tests are built.)
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        // .../target/debug/deps/embedder-HASH
        None => std::env::current_exe()
            .expect("the test's path")
            .ancestors()
            .nth(3)
            .expect("the target folder")
            .to_path_buf(),
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Writes `bytes` to `path` unless it holds them already (so a rerun rebuilds nothing).
fn put(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

#[test]
fn a_program_outside_the_workspace_numbers_on_redb_restarts_and_passes_check() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let outside = outside_dir();
    let krate = outside.join("crate");
    std::fs::create_dir_all(krate.join("src")).expect("crate folder");
    put(&krate.join("Cargo.toml"), manifest().as_bytes());
    // The example is the program, as a user would copy it.
    let example = Path::new(HOST_DIR).join("examples/embedded_store.rs");
    put(&krate.join("src/main.rs"), &read(&example));
    // The workspace's lock pins the same versions: nothing new is fetched.
    put(
        &krate.join("Cargo.lock"),
        &read(&Path::new(HOST_DIR).join("../Cargo.lock")),
    );

    let data = tmp.path().join("data");
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(&krate)
        .args(["run", "--quiet", "--"])
        .arg(&data)
        .env("SEQUENCER_COMPONENT", component_path())
        .env("CARGO_TARGET_DIR", target_dir())
        // Its own cache of compiled components, so the test leaves nothing behind.
        .env("SEQUENCER_CACHE", tmp.path().join("cache"))
        .env_remove("CARGO_MANIFEST_DIR")
        .env_remove("RUSTFLAGS");
    let out = cargo.output().expect("run cargo");
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "the outside program failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("ok: 6 events"), "{stdout}");

    let checked = run_host(&["check", "--data", data.to_str().expect("utf-8")]);
    let (stdout, stderr) = text(&checked);
    assert!(
        checked.status.success(),
        "check of the embedder's store:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("check passed: 1 partitions, 6 PLog events"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("no numbering layout recorded"),
        "the open recorded the layout: {stdout}"
    );
}
