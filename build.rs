//! Tells the crates that depend on this one where its sources are: the host crate's build
//! script reads `DEP_PLOG_SEQUENCER_SOURCE` to compile them into the WASI component it bundles.
//! Nothing is built here.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=source={dir}");
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    println!("cargo::metadata=version={version}");
}
