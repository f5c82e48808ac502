//! Call sequences through the component boundary: every input is decoded into export calls and
//! deliveries (arbitrary ids, outcomes, malformed pages, bad `read-numbers` answers) and run
//! against the compiled component and the native core in lockstep. Any trap, panic, divergence
//! or refused call that changed state aborts with the reason.
//!
//! The component's own code is not instrumented (it runs as wasm); coverage feedback comes from
//! the native core, which runs the same calls in lockstep.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sequencer_guest_tests::sim::fuzz::run_input;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = run_input(data) {
        panic!("{e}");
    }
});
