//! Tells the crates that depend on this one where its sources are: the host crate's build
//! script reads `DEP_PLOG_SEQUENCER_SOURCE` to compile them into the WASI component it bundles.
//!
//! It also sizes the stack (`COMPONENT_STACK_BYTES`) of the WASI component and of the core
//! module (the same glue built for `wasm32-unknown-unknown`): the one linker setting of every
//! build of either (scripts/build-component.sh, host/build.rs).

/// The component's stack, below its data at the bottom of linear memory (wasm-ld's
/// `--stack-first`). The sequencer is not recursive: every test of `guest-tests/` passes with a
/// 4 KiB stack (a deeper call would trap), so 32 KiB leaves eight times that. The
/// linker's default, 1 MiB, would put the pages an instance writes (the top of its stack, its
/// data, the start of its heap) a megabyte apart from the bottom of memory; small, they lie in
/// the lowest 64 KiB, which is what a pooled slot keeps resident and resets in place
/// (`Limits::pooled_instances` in host/src/runtime/link.rs).
const COMPONENT_STACK_BYTES: u32 = 32 << 10;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=source={dir}");
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    println!("cargo::metadata=version={version}");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let component = std::env::var_os("CARGO_FEATURE_COMPONENT").is_some();
    let js = std::env::var_os("CARGO_FEATURE_JS").is_some();
    // The WASI component, and the core module (the same glue for wasm32-unknown-unknown without
    // the wasm-bindgen glue): one stack size for both, so both lay out memory alike.
    let wasip2 = os == "wasi" && env == "p2";
    let core_module = arch == "wasm32" && os == "unknown" && !js;
    if component && (wasip2 || core_module) {
        println!("cargo::rustc-link-arg=-zstack-size={COMPONENT_STACK_BYTES}");
    }
}
