//! An embedder's program, built outside this workspace as a user would build it (a crate of its
//! own depending on the host by path, default features off, the redb store on): the
//! `embedded_store` example opens a redb store through `store::open`, numbers events,
//! restarts and numbers more; then `sequencer-host check` passes on the directory it left,
//! with no extra call (the layout was recorded by the open).

mod common;

use std::path::Path;
use std::process::Command;

use common::{component_path, run_host, text};

const HOST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The outside crate's manifest: the host and the core by path, the workspace's profile for
/// dependencies (so the build reuses what the workspace built), a workspace of its own.
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

[profile.dev.package."*"]
opt-level = 2
debug = false

[workspace]
"#,
        host.display(),
        core.display()
    )
}

#[test]
fn a_program_outside_the_workspace_numbers_on_redb_restarts_and_passes_check() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let krate = tmp.path().join("outside-embedder");
    std::fs::create_dir_all(krate.join("src")).expect("crate folder");
    std::fs::write(krate.join("Cargo.toml"), manifest()).expect("manifest");
    // The example is the program, as a user would copy it.
    std::fs::copy(
        Path::new(HOST_DIR).join("examples/embedded_store.rs"),
        krate.join("src/main.rs"),
    )
    .expect("copy the example");
    // The workspace's lock pins the same versions, so nothing is fetched or built anew but
    // the two path crates.
    let lock = Path::new(HOST_DIR).join("../Cargo.lock");
    std::fs::copy(&lock, krate.join("Cargo.lock")).expect("copy Cargo.lock");

    let data = tmp.path().join("data");
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(&krate)
        .args(["run", "--quiet", "--"])
        .arg(&data)
        .env("SEQUENCER_COMPONENT", component_path())
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
