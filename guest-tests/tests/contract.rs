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
    // What std's wasm32-wasip2 runtime imports; the host traps any call into them
    // (`define_unknown_imports_as_traps`).
    let std_imports: Vec<&str> = include_str!("../std-imports.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(!std_imports.is_empty());
    for i in &wasi {
        assert!(
            std_imports.iter().any(|p| i.starts_with(p)),
            "unexpected import {i}: only std's ({std_imports:?}) are expected"
        );
    }
}
