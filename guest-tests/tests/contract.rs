//! What the component asks of a host: exactly these imports.

use sequencer_guest_tests::runtime;

#[test]
fn the_component_imports_only_its_own_interfaces_and_what_std_forces() {
    let imports = runtime().imports().to_vec();
    let ours: Vec<&str> = imports
        .iter()
        .map(String::as_str)
        .filter(|i| i.starts_with("sequencer:"))
        .collect();
    assert_eq!(
        ours,
        [
            "sequencer:plugin/clock@0.3.0",
            "sequencer:plugin/observer@0.3.0",
            "sequencer:plugin/storage@0.3.0",
            "sequencer:plugin/types@0.3.0"
        ]
    );
    let wasi: Vec<&str> = imports
        .iter()
        .map(String::as_str)
        .filter(|i| !i.starts_with("sequencer:"))
        .collect();
    println!("WASI imports: {wasi:?}");
    // std's wasm32-wasip2 runtime imports these (since Rust 1.99 its monotonic clock too); the
    // sequencer calls none of them: its time comes from `sequencer:plugin/clock`, and the
    // host traps any call into them (`define_unknown_imports_as_traps`).
    for i in &wasi {
        assert!(
            i.starts_with("wasi:io/")
                || i.starts_with("wasi:cli/")
                || i.starts_with("wasi:clocks/monotonic-clock@"),
            "unexpected import {i}: only std's wasi:io, wasi:cli and monotonic clock are expected"
        );
    }
}
