//! What an embedder relies on: waiting until a sequencer is ready without polling, and the
//! compiled-component cache that spares a process compiling the component again.

use std::fs;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use sequencer::Params;
use sequencer_guest_tests::{Harness, component_path, runtime};
use sequencer_host::runtime::CacheOutcome;
use sequencer_host::{ComponentCache, HostError, Limits, MemoryStorage, Runtime};

const P: u32 = 3;

fn params() -> Params {
    Params::new().with_seq(1, 1, 1)
}

fn component() -> Vec<u8> {
    fs::read(component_path()).expect("the component (bash scripts/build-component.sh)")
}

/// A sequencer opened over storage whose reads are held at the gate: it stays actualizing
/// until the test opens the gate.
fn opened_with_reads_held() -> (Harness, sequencer_host::PartitionSequencer) {
    let storage = MemoryStorage::new();
    storage.read_gate.close();
    let h = Harness::with(storage, runtime());
    let seq = h.open(P, &params());
    h.storage.read_gate.wait_for_waiters(1);
    (h, seq)
}

/// A waker that records whether it was woken.
struct Flag(std::sync::atomic::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Polls `fut` once: whether it is done yet.
fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn ready_resolves_once_actualization_finishes_and_not_before() {
    let (h, seq) = opened_with_reads_held(); // the actualization's first read is held
    let mut ready = pin!(seq.ready());
    assert!(poll_once(ready.as_mut()).is_pending(), "still actualizing");

    h.storage.read_gate.open();
    futures::executor::block_on(ready).expect("ready once the reads pass");
    let (offset, numbers) = h.event(&seq, 1, 5, &[1]).expect("a start right away");
    assert_eq!((offset, numbers), (1, vec![1]));
    // Ready stays ready, and an event in progress counts as ready too.
    assert!(poll_once(pin!(seq.ready())).is_ready());
}

#[test]
fn ready_fails_with_closed_when_the_sequencer_is_cleaned_up_first() {
    let (h, seq) = opened_with_reads_held();
    let mut ready = pin!(seq.ready());
    let flag = std::sync::Arc::new(Flag(std::sync::atomic::AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    assert!(
        ready.as_mut().poll(&mut cx).is_pending(),
        "waiting, subscribed"
    );
    seq.cleanup();
    assert!(
        flag.0.load(std::sync::atomic::Ordering::SeqCst),
        "cleanup wakes the waiting future"
    );
    let outcome = ready.as_mut().poll(&mut cx);
    assert!(
        matches!(outcome, Poll::Ready(Err(HostError::Closed(P)))),
        "the waiter learns of the cleanup: {outcome:?}"
    );
    h.storage.read_gate.open();
}

#[test]
fn wait_ready_gives_up_after_its_time_on_the_hosts_clock() {
    let (h, seq) = opened_with_reads_held();
    let waiter = std::thread::spawn({
        let seq = seq.clone();
        move || seq.wait_ready(Duration::from_secs(5))
    });
    // The manual clock moves only when told: past the 5 s, the wait ends unready.
    while !waiter.is_finished() {
        h.clock.advance(Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(matches!(waiter.join().expect("returns"), Ok(false)));
    h.storage.read_gate.open();
    assert!(matches!(seq.wait_ready(Duration::from_secs(5)), Ok(true)));
}

/// A runtime from `bytes` through `cache`, and what the cache did.
fn cached(cache: &ComponentCache, bytes: &[u8], limits: Limits) -> (Runtime, CacheOutcome) {
    let rt = Runtime::builder()
        .limits(limits)
        .cache(cache.clone())
        .load_bytes(bytes)
        .expect("the component loads");
    let outcome = rt.cache_outcome().cloned().expect("made with a cache");
    (rt, outcome)
}

/// The runtime numbers an event: what the cache gave back is a working component.
fn numbers_an_event(rt: Runtime) {
    let h = Harness::with(MemoryStorage::new(), rt);
    let seq = h.open_ready(P, &params());
    assert_eq!(h.event(&seq, 1, 9, &[1]), Some((1, vec![1])));
}

#[test]
fn a_compiled_component_is_cached_then_read_back_and_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ComponentCache::new(dir.path().join("components"));
    let bytes = component();
    let (_, first) = cached(&cache, &bytes, Limits::default());
    assert_eq!(first, CacheOutcome::Compiled);
    let (rt, second) = cached(&cache, &bytes, Limits::default());
    assert_eq!(second, CacheOutcome::Hit);
    numbers_an_event(rt);
    let entries = fs::read_dir(cache.dir()).expect("the cache folder").count();
    assert_eq!(entries, 1, "one entry, no temporary file left behind");
}

#[test]
fn a_damaged_cache_entry_is_compiled_again_and_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ComponentCache::new(dir.path());
    let bytes = component();
    let (rt, _) = cached(&cache, &bytes, Limits::default());
    let entry = cache.entry_path(rt.engine(), &bytes);
    let whole = fs::read(&entry).expect("the entry");

    let mut flipped = whole.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40; // one bit of the compiled code
    for (damage, bytes_on_disk, why) in [
        ("a flipped bit", flipped, "checksum"),
        ("truncated", whole[..whole.len() / 2].to_vec(), "truncated"),
        ("shorter than its header", whole[..10].to_vec(), "shorter"),
        (
            "not an entry",
            b"not a compiled component at all. ".repeat(8),
            "not a compiled",
        ),
    ] {
        fs::write(&entry, &bytes_on_disk).expect("damage the entry");
        let (rt, outcome) = cached(&cache, &bytes, Limits::default());
        match &outcome {
            CacheOutcome::Replaced(reason) => {
                assert!(reason.contains(why), "{damage}: {reason}")
            }
            other => panic!("{damage}: {other:?}"),
        }
        assert_eq!(fs::read(&entry).expect("rewritten"), whole, "{damage}");
        numbers_an_event(rt);
    }
    assert_eq!(
        cached(&cache, &bytes, Limits::default()).1,
        CacheOutcome::Hit
    );
}

#[test]
fn an_entry_is_used_only_for_its_own_bytes_and_engine_settings() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ComponentCache::new(dir.path());
    let bytes = component();
    let (rt, _) = cached(&cache, &bytes, Limits::default());
    // Another engine configuration (no fuel metering) compiles other code: its own entry.
    let no_fuel = Limits {
        fuel_per_call: None,
        ..Limits::default()
    };
    let (rt_no_fuel, outcome) = cached(&cache, &bytes, no_fuel.clone());
    assert_eq!(outcome, CacheOutcome::Compiled);
    assert_ne!(
        cache.entry_path(rt.engine(), &bytes),
        cache.entry_path(rt_no_fuel.engine(), &bytes)
    );
    assert_eq!(cached(&cache, &bytes, no_fuel).1, CacheOutcome::Hit);

    // An entry copied under another component's name is refused by its key, never run: the
    // other component (the same plus a custom section "abc") is compiled for itself.
    let mut other = bytes.clone();
    other.extend_from_slice(&[0x00, 0x04, 0x03, b'a', b'b', b'c']);
    let target = cache.entry_path(rt.engine(), &other);
    fs::copy(cache.entry_path(rt.engine(), &bytes), &target).expect("copy the entry");
    let (rt_other, outcome) = cached(&cache, &other, Limits::default());
    assert!(
        matches!(&outcome, CacheOutcome::Replaced(why) if why.contains("other component bytes")),
        "{outcome:?}"
    );
    numbers_an_event(rt_other);
}

#[test]
fn a_cache_that_cannot_be_written_still_gives_a_working_runtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let blocker = dir.path().join("a-file");
    fs::write(&blocker, b"").expect("a file where the cache folder would be");
    let cache = ComponentCache::new(blocker.join("components"));
    let (rt, outcome) = cached(&cache, &component(), Limits::default());
    assert!(
        matches!(&outcome, CacheOutcome::NotStored(why) if why.contains("cannot create")),
        "{outcome:?}"
    );
    numbers_an_event(rt);
}

#[test]
fn a_full_pool_refuses_the_next_instance_naming_its_limit_and_a_freed_slot_serves_again() {
    let limits = Limits {
        pooled_instances: Some(2),
        ..Limits::default()
    };
    let h = Harness::with(MemoryStorage::new(), sequencer_guest_tests::load(limits));
    let first = h.open_ready(0, &params());
    let _second = h.open_ready(1, &params());
    let Err(HostError::Component(message)) = h.driver.open(&h.runtime, 2, &params()) else {
        panic!("a third instance in a pool of two");
    };
    assert!(
        message.contains("all 2 instance slots") && message.contains("Limits::pooled_instances"),
        "{message}"
    );
    first.cleanup();
    drop(first);
    let third = h.open_ready(2, &params());
    assert_eq!(h.event(&third, 1, 7, &[1]), Some((1, vec![1])));
}
