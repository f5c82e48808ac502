//! `sequencer-host`: runs the sequencer component under wasmtime.
//!
//! `sequencer-host run [--component PATH] [--partitions N] [--events N] [--workspaces N]
//! [--fail-every N]` runs a command-processor workload against in-memory storage: every event
//! takes an offset and three numbers, appends itself to the PLog and flushes; every N-th event
//! fails after `start` and takes the `actualize` path instead. At the end it checks the PLog
//! (dense offsets, no number issued twice) and prints a summary.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sequencer::{Params, SeqValue};
use sequencer_host::bindings::StartOutcome;
use sequencer_host::{
    Driver, DriverConfig, HostError, Limits, MemoryStorage, MonotonicClock, PartitionSequencer,
    Runtime,
};

const KIND: u16 = 1;
const SEQS: [u16; 3] = [1, 2, 3];

struct Options {
    component: PathBuf,
    partitions: u32,
    events: u64,
    workspaces: u64,
    fail_every: u64,
}

fn usage() -> &'static str {
    "usage: sequencer-host run [--component PATH] [--partitions N] [--events N (per partition)] \
     [--workspaces N] [--fail-every N]"
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        component: std::env::var_os("SEQUENCER_COMPONENT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("sequencer.wasm")),
        partitions: 4,
        events: 100_000,
        workspaces: 1_000,
        fail_every: 100,
    };
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("run") | None => {}
        Some(other) => return Err(format!("unknown command {other:?}\n{}", usage())),
    }
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{}", usage()))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: {value:?} is not a whole number"))
        };
        match flag.as_str() {
            "--component" => o.component = PathBuf::from(value),
            "--partitions" => {
                o.partitions = u32::try_from(number()?).map_err(|_| "too many partitions")?
            }
            "--events" => o.events = number()?,
            "--workspaces" => o.workspaces = number()?.max(1),
            "--fail-every" => o.fail_every = number()?,
            _ => return Err(format!("unknown option {flag}\n{}", usage())),
        }
    }
    Ok(o)
}

/// What one partition's command processor did.
#[derive(Default)]
struct Tally {
    events: u64,
    actualizations: u64,
    not_now: u64,
    numbers: u64,
}

fn run_partition(seq: &PartitionSequencer, o: &Options, seed: u64) -> Result<Tally, HostError> {
    let mut t = Tally::default();
    let mut rng = seed | 1;
    let mut attempt = 0u64;
    while t.events < o.events {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let ws = rng % o.workspaces;
        let (outcome, numbers) = seq.start_next(KIND, ws, &SEQS)?;
        let StartOutcome::Started(offset) = outcome else {
            t.not_now += 1;
            std::thread::sleep(Duration::from_micros(50));
            continue;
        };
        attempt += 1;
        if o.fail_every > 0 && attempt.is_multiple_of(o.fail_every) {
            seq.actualize()?;
            t.actualizations += 1;
            continue;
        }
        let values: Vec<SeqValue> = SEQS
            .iter()
            .zip(&numbers)
            .map(|(&s, &n)| SeqValue::new(ws, s, n))
            .collect();
        seq.append(offset, &values)
            .map_err(|e| HostError::Component(e.to_string()))?;
        seq.flush()?;
        t.events += 1;
        t.numbers += numbers.len() as u64;
    }
    Ok(t)
}

/// Checks a partition's PLog: offsets dense from 1, no (workspace, sequence, number) twice.
fn check_plog(storage: &MemoryStorage, partition: u32) -> Result<u64, String> {
    let plog = storage.plog(partition);
    let mut seen = HashSet::new();
    for (i, (offset, event)) in plog.iter().enumerate() {
        if *offset != i as u64 + 1 {
            return Err(format!(
                "partition {partition}: offset {offset} at position {}",
                i + 1
            ));
        }
        for v in event {
            if !seen.insert((v.key.ws, v.key.seq, v.value)) {
                return Err(format!(
                    "partition {partition}: number {} of ws {} seq {} issued twice",
                    v.value, v.key.ws, v.key.seq
                ));
            }
        }
    }
    Ok(plog.len() as u64)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sequencer-host: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match Runtime::from_file(&o.component, Limits::default()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sequencer-host: {e}");
            return ExitCode::FAILURE;
        }
    };
    let storage = MemoryStorage::new();
    let driver = Driver::spawn(
        Arc::new(storage.clone()),
        Arc::new(MonotonicClock::new()),
        DriverConfig::default(),
    );
    let params = SEQS
        .iter()
        .fold(Params::new(), |p, &s| p.with_seq(KIND, s, 1));
    let started = Instant::now();
    let results: Vec<Result<Tally, HostError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..o.partitions)
            .map(|p| {
                let (driver, runtime, params, o) = (&driver, &runtime, &params, &o);
                scope.spawn(move || {
                    let seq = driver.open(runtime, p, params)?;
                    let tally = run_partition(&seq, o, 0x9E37_79B9_7F4A_7C15 ^ u64::from(p));
                    seq.cleanup();
                    tally
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or(Err(HostError::Component(
                    "a partition thread panicked".into(),
                )))
            })
            .collect()
    });
    let elapsed = started.elapsed();
    let mut total = Tally::default();
    for r in results {
        match r {
            Ok(t) => {
                total.events += t.events;
                total.actualizations += t.actualizations;
                total.not_now += t.not_now;
                total.numbers += t.numbers;
            }
            Err(e) => {
                eprintln!("sequencer-host: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    for p in 0..o.partitions {
        if let Err(e) = check_plog(&storage, p) {
            eprintln!("sequencer-host: PLog check failed: {e}");
            return ExitCode::FAILURE;
        }
    }
    let secs = elapsed.as_secs_f64();
    println!("storage            in-memory");
    println!("partitions         {}", o.partitions);
    println!("events             {}", total.events);
    println!("events/s           {:.0}", total.events as f64 / secs);
    println!(
        "numbers issued     {} ({} per sequence)",
        total.numbers,
        total.numbers / 3
    );
    println!("actualizations     {}", total.actualizations);
    println!("start not now      {}", total.not_now);
    println!("elapsed            {:.3} s", secs);
    println!("PLog check         dense offsets, no number issued twice");
    ExitCode::SUCCESS
}
