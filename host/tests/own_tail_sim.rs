//! A seeded simulation of `OwnTail` under the real component: two hosts (each a driver, a
//! sequencer and its own `OwnTail`) share one partition of one store and take turns committing
//! batches, failing commands (which actualize) and meeting faults: appends that fail, appends
//! that land but whose answer is lost, failed reads and writes. The host that commits usually
//! stays the same for a while, so proofs hold and replays and numbers are served from memory;
//! when the other host takes over it has been overtaken, and so has the first one when it
//! comes back. An actualization is served from memory while a host knows where the PLog ended,
//! so an overtaken host may number from a stale end: its append is then refused by the fence.
//! A host's append may be refused only if the other host appended since this host last learned
//! the PLog's end from the store or from an append of its own (a replay served stale after
//! that would leave it behind); at the end the
//! PLog must hold, for every (workspace, sequence), exactly the numbers from its initial value
//! on, each once and in order (a number served stale by the layer would be issued twice), the
//! view must catch up with it once the hosts settle (a replay served without some values would
//! leave them unwritten), and both layers must have served from memory and been overtaken.
//!
//! The simulator in `guest-tests` drives the core over its own storage model, with no host
//! storage layer in between; this one drives the host's. `OWN_TAIL_SIM_SEEDS` (default 6) and
//! `OWN_TAIL_SIM_STEPS` (default 150) size it; `OWN_TAIL_SIM_SEED` runs one seed.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use sequencer::{Number, PLogOffset, Params, SeqId, SeqValue, WsId};
use sequencer_host::StorageFuture;
use sequencer_host::store::layers::{OwnTail, TailCounts, TailLimits};
use sequencer_host::store::memory::Faults;
use sequencer_host::{
    AppendError, Driver, DriverConfig, EventBatch, Limits, MemoryStorage, MonotonicClock,
    PartitionId, PartitionSequencer, PlogPage, Runtime, StartOutcome, Status, Storage,
    StorageError,
};

const P: PartitionId = 0;
const KIND: u16 = 1;
const SEQS: [(SeqId, Number); 3] = [(1, 1), (2, 1_000_000), (3, 1)];
/// Workspaces the commands pick from: few enough that caches miss and numbers are read, enough
/// that a key's last event is often old (a value left unwritten would show in the view).
const WORKSPACES: u64 = 24;

/// SplitMix64: a seed alone decides the schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One host's view of the shared store: its view writes merge by maximum (as etcd's do, so a
/// late write of one host never lowers the other's numbers), and an append can be made to
/// land and report a failure (its answer lost).
struct Shared {
    m: MemoryStorage,
    /// Serializes the read-merge-write of view writes between the two hosts.
    view: Arc<Mutex<()>>,
    /// Appends left to land with their answer lost.
    lose_answers: AtomicU32,
}

impl Storage for Shared {
    fn read_numbers(
        &self, p: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        self.m.read_numbers(p, ws, seqs)
    }

    fn read_next_offset(&self, p: PartitionId) -> StorageFuture<PLogOffset> {
        self.m.read_next_offset(p)
    }

    fn write(&self, p: PartitionId, values: Vec<SeqValue>, next: PLogOffset) -> StorageFuture<()> {
        let (m, view) = (self.m.clone(), self.view.clone());
        async move {
            let _one_at_a_time = view.lock().unwrap_or_else(|e| e.into_inner());
            let merged = values
                .into_iter()
                .map(|v| {
                    let stored = m.view_value(p, v.key.ws, v.key.seq);
                    SeqValue::new(v.key.ws, v.key.seq, v.value.max(stored))
                })
                .collect();
            // The memory store's write is ready at once (its gate is open).
            m.write(p, merged, next)
                .now_or_never()
                .unwrap_or_else(|| Err(StorageError("the write did not complete".into())))
        }
        .boxed()
    }

    fn read_plog(&self, p: PartitionId, from: PLogOffset, max: usize) -> StorageFuture<PlogPage> {
        self.m.read_plog(p, from, max)
    }

    fn append_events(&self, p: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        self.m.append_events(p, batch)?;
        let lose = self
            .lose_answers
            .try_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if lose {
            return Err(AppendError::Storage(StorageError("answer lost".into())));
        }
        Ok(())
    }
}

struct Host {
    name: &'static str,
    /// The other host may have appended since this one's last actualization ended: only
    /// then may the fence refuse this one's append (a replay served stale would show here).
    overtaken: Cell<bool>,
    shared: Arc<Shared>,
    tail: Arc<OwnTail>,
    driver: Driver,
    seq: PartitionSequencer,
}

impl Host {
    fn open(
        name: &'static str, m: &MemoryStorage, view: &Arc<Mutex<()>>, runtime: &Runtime,
        rng: &mut Rng,
    ) -> Self {
        let shared = Arc::new(Shared {
            m: m.clone(),
            view: view.clone(),
            lose_answers: AtomicU32::new(0),
        });
        let limits = TailLimits {
            events: 4 + rng.below(40) as usize,
            ..TailLimits::default()
        };
        let tail = Arc::new(OwnTail::new(shared.clone(), Arc::new(m.clone()), limits));
        let driver = Driver::spawn(
            tail.clone(),
            Arc::new(MonotonicClock::new()),
            DriverConfig {
                page_events: 1 + rng.below(6) as usize,
            },
        );
        let mut params = Params::new()
            .with_max_unflushed_values(2 + rng.below(20) as usize)
            .with_lru_cache_size(3 + rng.below(4) as usize)
            .with_retry_delay(Duration::from_millis(1), Duration::from_millis(4));
        for (seq, initial) in SEQS {
            params = params.with_seq(KIND, seq, initial);
        }
        let seq = driver
            .open(runtime, P, &params)
            .expect("open the partition");
        Self {
            name,
            overtaken: Cell::new(false),
            shared,
            tail,
            driver,
            seq,
        }
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.seq.status() != Status::Ready {
            assert!(
                Instant::now() < deadline,
                "{} never became ready",
                self.name
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Actualizes and waits until it is done (so the other host cannot append meanwhile). One
    /// that read the store has caught up with the other host; one answered from memory has
    /// not.
    fn actualize(&self) {
        let before = self.tail.counts();
        self.seq.actualize().expect("actualize");
        self.wait_ready();
        if self.tail.counts().vouched == before.vouched {
            self.overtaken.set(false);
        }
    }

    /// Numbers and appends up to `events` events (one batch), then flushes, or actualizes if
    /// the append failed; true if it may have landed (`other` is then overtaken).
    fn commit(&self, rng: &mut Rng, events: u64, other: &Host, seed: u64) -> bool {
        self.wait_ready();
        let mut batch = EventBatch::new(0);
        while (batch.len() as u64) < events {
            let ws = 1 + rng.below(WORKSPACES);
            let (outcome, numbers) = self
                .seq
                .start_next(KIND, ws, &[1, 2, 3])
                .expect("start_next");
            let StartOutcome::Started(offset) = outcome else {
                if batch.is_empty() {
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                break;
            };
            if batch.is_empty() {
                batch.reset(offset);
            }
            let values: Vec<SeqValue> = (SEQS.iter().zip(&numbers))
                .map(|(&(s, _), &n)| SeqValue::new(ws, s, n))
                .collect();
            batch.push(&values, self.name.as_bytes());
            self.seq.stage().expect("stage");
        }
        match self.tail.append_events(P, &batch) {
            Ok(()) => {
                self.seq.flush().expect("flush");
                other.overtaken.set(true);
                self.overtaken.set(false);
                true
            }
            Err(AppendError::WrongOffset { offered, .. }) => {
                assert!(
                    self.overtaken.get(),
                    "seed {seed}: {}'s append at {offered} was refused by the fence although {} appended nothing since {} last learned the PLog's end: a replay was served stale",
                    self.name,
                    other.name,
                    self.name
                );
                self.actualize();
                false
            }
            Err(AppendError::Storage(_)) => {
                other.overtaken.set(true);
                self.actualize();
                true
            }
            Err(e @ AppendError::NotOwner { .. }) => {
                panic!("seed {seed}: no owners in this simulation: {e}")
            }
        }
    }

    /// A command that fails after `start`: its numbers go back, the sequencer actualizes.
    fn fail_command(&self, rng: &mut Rng) {
        self.wait_ready();
        let ws = 1 + rng.below(WORKSPACES);
        if let Ok((StartOutcome::Started(_), _)) = self.seq.start_next(KIND, ws, &[1, 2, 3]) {
            self.actualize();
        }
    }

    fn stop(&self) -> TailCounts {
        self.wait_ready();
        self.driver.idle();
        self.seq.cleanup();
        self.tail.counts()
    }
}

/// Every (workspace, sequence)'s numbers in the PLog, in offset order, are its initial value,
/// the next, and so on: none twice, none skipped.
fn numbers_are_dense(m: &MemoryStorage, seed: u64) {
    let mut last: BTreeMap<(WsId, SeqId), Number> = BTreeMap::new();
    for (offset, values) in m.plog(P) {
        for v in values {
            let initial = SEQS.iter().find(|s| s.0 == v.key.seq).map_or(1, |s| s.1);
            let expected = last.get(&(v.key.ws, v.key.seq)).map_or(initial, |n| n + 1);
            assert_eq!(
                v.value, expected,
                "seed {seed}: offset {offset}: ({}, {}) is {}, not {expected}",
                v.key.ws, v.key.seq, v.value
            );
            last.insert((v.key.ws, v.key.seq), v.value);
        }
    }
}

/// Once both hosts have settled, the view holds every key's largest number in the PLog (each
/// event's numbers were written by the host that appended it or by one that replayed it).
fn view_catches_up(m: &MemoryStorage, hosts: &[Host], seed: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut largest: BTreeMap<(WsId, SeqId), Number> = BTreeMap::new();
        for (_, values) in m.plog(P) {
            for v in values {
                largest.insert((v.key.ws, v.key.seq), v.value);
            }
        }
        let behind: Vec<_> = (largest.iter())
            .filter(|&(&(ws, seq), &n)| m.view_value(P, ws, seq) != n)
            .collect();
        if behind.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: the view never caught up with the PLog for {behind:?}"
        );
        for h in hosts {
            h.driver.idle();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One seed's run; returns both hosts' counts.
fn run(seed: u64, steps: u32, runtime: &Runtime) -> [TailCounts; 2] {
    let mut rng = Rng(seed);
    let m = MemoryStorage::new();
    let view = Arc::new(Mutex::new(()));
    let hosts = [
        Host::open("A", &m, &view, runtime, &mut rng),
        Host::open("B", &m, &view, runtime, &mut rng),
    ];
    let mut at = 0;
    for _ in 0..steps {
        if rng.below(8) == 0 {
            at = 1 - at;
        }
        let (host, other) = (&hosts[at], &hosts[1 - at]);
        match rng.below(20) {
            0..=13 => {
                let events = 1 + rng.below(5);
                host.commit(&mut rng, events, other, seed);
            }
            14 | 15 => host.fail_command(&mut rng),
            16 => host.shared.lose_answers.store(1, Ordering::SeqCst),
            17 => m.set_faults(Faults {
                fail_appends: 1,
                ..Faults::default()
            }),
            18 => m.set_faults(Faults {
                fail_reads: 1,
                ..Faults::default()
            }),
            _ => m.set_faults(Faults {
                fail_writes: 1,
                ..Faults::default()
            }),
        }
    }
    m.set_faults(Faults::default());
    for h in &hosts {
        h.shared.lose_answers.store(0, Ordering::SeqCst);
    }
    for h in &hosts {
        h.wait_ready();
    }
    view_catches_up(&m, &hosts, seed);
    let counts = [hosts[0].stop(), hosts[1].stop()];
    numbers_are_dense(&m, seed);
    counts
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn two_hosts_on_one_partition_never_issue_a_number_twice_with_replays_served_from_their_tails() {
    let component = sequencer_host::runtime::link::component_path();
    let runtime = Runtime::from_file(&component, Limits::default()).expect("the component");
    let steps = env("OWN_TAIL_SIM_STEPS", 150) as u32;
    let seeds: Vec<u64> = match std::env::var("OWN_TAIL_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("OWN_TAIL_SIM_SEED is a number")],
        Err(_) => (1..=env("OWN_TAIL_SIM_SEEDS", 6)).collect(),
    };
    let mut total = TailCounts::default();
    for seed in seeds {
        for c in run(seed, steps, &runtime) {
            total.vouched += c.vouched;
            total.proofs_held += c.proofs_held;
            total.proofs_failed += c.proofs_failed;
            total.pages_served += c.pages_served;
            total.events_served += c.events_served;
            total.pages_read += c.pages_read;
            total.workspaces_served += c.workspaces_served;
            total.workspaces_read += c.workspaces_read;
        }
    }
    eprintln!("{total:?}");
    assert!(total.vouched > 0 && total.pages_served > 0, "{total:?}");
    assert!(total.workspaces_served > 0, "{total:?}");
    assert!(total.proofs_failed > 0, "{total:?}");
}
