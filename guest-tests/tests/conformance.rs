//! The conformance suite (`guest-tests/conformance/scenarios/*.json`): the Rust runners, the
//! compiled component under wasmtime (`rust`) and the native shell (`native`). The Python and
//! JavaScript runners run the same scenarios from `scripts/test-conformance.sh`.

use sequencer_guest_tests::conformance::{
    Runner, event_values, read_scenario, run_scenario, scenario_files,
};

fn every_scenario_passes(runner: Runner) {
    let files = scenario_files();
    assert!(!files.is_empty(), "no conformance scenarios found");
    let mut failures = Vec::new();
    for path in &files {
        match run_scenario(path, runner) {
            Ok(()) => println!("ok   {}", path.display()),
            Err(e) => {
                println!("FAIL {e}");
                failures.push(e);
            }
        }
    }
    let name = runner.name();
    assert!(
        failures.is_empty(),
        "[{name}] {} of {} scenarios failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    println!("[{name}] {} scenarios passed", files.len());
}

#[test]
fn every_conformance_scenario_passes_under_wasmtime() {
    every_scenario_passes(Runner::Component);
}

#[test]
fn every_conformance_scenario_passes_on_the_native_shell() {
    every_scenario_passes(Runner::Native);
}

/// The facade's recovery scenario seeds the PLog with the native tests' sample events, and this
/// runner's `event_values` turns each into the values `sequencer::facade::event_values` gives.
#[test]
fn the_facade_recovery_scenario_holds_the_testkit_sample_events() {
    let path = scenario_files()
        .into_iter()
        .find(|p| p.ends_with("facade-recovery-from-platform-events.json"))
        .expect("the facade recovery scenario");
    let scenario = read_scenario(&path).expect("read the scenario");
    let events = &scenario.storage.plog_events;
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
