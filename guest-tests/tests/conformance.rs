//! The conformance suite (`guest-tests/conformance/scenarios/*.json`) through the compiled
//! component under wasmtime: the Rust runner. The Python and JavaScript runners run the same
//! scenarios from `scripts/test-conformance.sh`.

use sequencer_guest_tests::conformance::{event_values, run_scenario, scenario_files};

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

/// The facade's recovery scenario seeds the PLog with the native tests' sample events, and this
/// runner's `event_values` turns each into the values `sequencer::facade::event_values` gives.
#[test]
fn the_facade_recovery_scenario_holds_the_testkit_sample_events() {
    let path = scenario_files()
        .into_iter()
        .find(|p| p.ends_with("facade-recovery-from-platform-events.json"))
        .expect("the facade recovery scenario");
    let text = std::fs::read_to_string(&path).expect("read the scenario");
    let scenario: serde_json::Value = serde_json::from_str(&text).expect("parse the scenario");
    let events = scenario["storage"]["plog_events"]
        .as_array()
        .expect("storage.plog_events");
    let sample = sequencer::testkit::facade_sample_events();
    assert_eq!(events.len(), sample.len());
    for (i, (json, event)) in events.iter().zip(&sample).enumerate() {
        let (offset, mut got) = event_values(json).expect("a platform event");
        let mut want: Vec<_> = sequencer::facade::event_values(event)
            .iter()
            .map(|v| (v.key.ws, v.key.seq, v.value))
            .collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(offset, i as u64 + 1, "event {i}: offset");
        assert_eq!(got, want, "event {i}: values");
    }
}
