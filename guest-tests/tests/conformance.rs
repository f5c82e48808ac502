//! The conformance suite (`guest-tests/conformance/scenarios/*.json`) through the compiled
//! component under wasmtime: the Rust runner. The Python and JavaScript runners run the same
//! scenarios from `scripts/test-conformance.sh`.

use sequencer_guest_tests::conformance::{run_scenario, scenario_files};

#[test]
fn every_conformance_scenario_passes_under_wasmtime() {
    let files = scenario_files();
    assert!(!files.is_empty(), "no conformance scenarios found");
    let mut failures = Vec::new();
    for path in &files {
        match run_scenario(path) {
            Ok(()) => println!("ok   {}", path.display()),
            Err(e) => {
                println!("FAIL {e}");
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "[rust] {} of {} scenarios failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    println!("[rust] {} scenarios passed", files.len());
}
