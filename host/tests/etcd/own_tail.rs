//! Actualization from the host's own tail on the cluster: a store opened by `store::open` serves
//! a replay of its own appends from memory, and a second writer that appends between the
//! host's append and its actualization (or between its actualization and its next append) is
//! seen by the fence at the host's next append, which is refused: the host then reads the
//! cluster and its numbers go on after the other writer's, none issued twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::mpsc::UnboundedReceiver;
use sequencer::{Number, SeqId, SeqValue, WsId};
use sequencer_host::membership::{Membership, MembershipConfig, MembershipEvent, MembershipParts};
use sequencer_host::store::{OpenOptions, StoreUrl, open};
use sequencer_host::{
    AppendError, Clock, Driver, DriverConfig, Limits, MonotonicClock, PartitionSequencer, Runtime,
    StartOutcome, Status, Storage,
};

use crate::common::component_path;
use crate::common::etcd_cluster::EtcdCluster;
use crate::support::{all_events, check_passes, params};

const WS: WsId = 7;

/// One host on partition 0: its storage, driver and sequencer.
struct Host {
    name: &'static str,
    storage: Arc<dyn Storage>,
    _driver: Driver,
    seq: PartitionSequencer,
}

impl Host {
    fn open(name: &'static str, storage: Arc<dyn Storage>, runtime: &Runtime) -> Self {
        let driver = Driver::spawn(
            storage.clone(),
            Arc::new(MonotonicClock::new()),
            DriverConfig::default(),
        );
        let seq = driver
            .open(runtime, 0, &params())
            .expect("open partition 0");
        Self {
            name,
            storage,
            _driver: driver,
            seq,
        }
    }

    fn wait_ready(&self) {
        wait_ready(self.name, &self.seq);
    }

    /// Commits `events` events on `WS`, one append each; an append refused by the fence
    /// actualizes and tries again. Returns how many appends were refused.
    fn commit(&self, events: usize) -> u32 {
        commit(self.name, &*self.storage, &self.seq, events)
    }

    /// A command that fails after `start`: the sequencer actualizes.
    fn fail_a_command(&self) {
        self.wait_ready();
        let (outcome, _) = self.seq.start_next(1, WS, &[1, 2, 3]).expect("start");
        assert!(matches!(outcome, StartOutcome::Started(_)), "{outcome:?}");
        self.seq.actualize().expect("actualize");
        self.wait_ready();
    }
}

/// Waits (bounded) until `seq` is ready.
fn wait_ready(name: &str, seq: &PartitionSequencer) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while seq.status() != Status::Ready {
        assert!(Instant::now() < deadline, "{name} never became ready");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Commits `events` events on `WS` of `seq`'s partition through `storage`, one append each; an
/// append refused by the fence actualizes and tries again. Returns how many appends were
/// refused.
fn commit(name: &str, storage: &dyn Storage, seq: &PartitionSequencer, events: usize) -> u32 {
    let (mut done, mut fenced) = (0, 0);
    while done < events {
        wait_ready(name, seq);
        let (outcome, numbers) = seq.start_next(1, WS, &[1, 2, 3]).expect("start");
        let StartOutcome::Started(offset) = outcome else {
            continue;
        };
        let values: Vec<SeqValue> = (numbers.iter().zip([1u16, 2, 3]))
            .map(|(&n, s)| SeqValue::new(WS, s, n))
            .collect();
        let payload = format!("{name} {offset}");
        match storage.append_event(seq.partition(), offset, &values, payload.as_bytes()) {
            Ok(()) => {
                seq.flush().expect("flush");
                done += 1;
            }
            Err(AppendError::WrongOffset { .. }) => {
                fenced += 1;
                seq.actualize().expect("actualize");
            }
            Err(e) => panic!("{name}: append failed: {e}"),
        }
    }
    fenced
}

#[test]
fn a_second_writer_between_the_hosts_append_and_its_actualization_is_seen_and_no_number_repeats() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let runtime = Runtime::from_file(&component_path(), Limits::default()).expect("component");
    let url: StoreUrl = cluster.url().parse().expect("etcd URL");
    let store = open(&url, &OpenOptions::new()).expect("open the store");
    let layer = store
        .own_tail()
        .expect("on etcd the tail layer is on by default");
    let a = Host::open("A", store.storage(), &runtime);
    let b = Host::open(
        "B",
        Arc::new(cluster.store(Duration::from_secs(10))),
        &runtime,
    );
    // B reads the empty PLog before A appends: B's opening actualization runs on its driver's
    // thread, and one that finished after A's first appends would leave B not behind at all.
    b.wait_ready();

    // A alone: a failed command's replay of A's own appends is served from memory.
    a.commit(5);
    let before = layer.counts();
    a.fail_a_command();
    a.commit(1);
    let alone = layer.counts().since(&before);
    assert_eq!(
        (alone.vouched, alone.proofs_held, alone.proofs_failed),
        (1, 0, 0),
        "{alone:?}"
    );
    assert!(alone.pages_served >= 1, "{alone:?}");

    // B appends after A's append, before A actualizes: A's actualization is answered from
    // memory, A's next append is refused by the fence, and the actualization after it reads
    // the cluster.
    assert!(b.commit(3) >= 1, "B was behind A: fenced first");
    let before = layer.counts();
    a.fail_a_command();
    assert_eq!(layer.counts().since(&before).vouched, 1);
    assert_eq!(a.commit(2), 1, "A's first append after B's is refused");
    let overtaken = layer.counts().since(&before);
    assert_eq!(overtaken.proofs_failed, 1, "{overtaken:?}");
    assert_eq!(a.commit(1), 0, "A replayed B's events: not fenced again");

    // B appends after A's actualization, before A's next append: A's append is refused.
    a.fail_a_command();
    b.commit(2);
    assert!(
        a.commit(2) >= 1,
        "A's append after B's is refused by the fence"
    );
    a.commit(3);

    // Every number of WS once, in order, from its initial value; `check` agrees.
    let mut last: BTreeMap<SeqId, Number> = BTreeMap::new();
    let initial = |s: SeqId| if s == 2 { 1_000_000 } else { 1 };
    let events = all_events(&cluster.store(Duration::from_secs(10)), 0);
    assert_eq!(events.len(), 5 + 1 + 3 + 2 + 1 + 2 + 2 + 3, "19 events");
    for e in &events {
        for v in &e.values {
            let expected = last.get(&v.key.seq).map_or(initial(v.key.seq), |n| n + 1);
            assert_eq!(v.value, expected, "offset {}: {:?}", e.offset, v);
            last.insert(v.key.seq, v.value);
        }
    }
    let checked = check_passes(&cluster.url());
    assert!(
        checked.contains("1 partitions, 19 PLog events"),
        "{checked}"
    );
}

/// Waits (bounded) for the next event of `events`.
fn next_event(events: &mut UnboundedReceiver<MembershipEvent>) -> MembershipEvent {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(e) = events.try_recv() {
            return e;
        }
        assert!(Instant::now() < deadline, "no membership event");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sequencer of the partition the next event says was acquired.
fn acquired(events: &mut UnboundedReceiver<MembershipEvent>) -> PartitionSequencer {
    match next_event(events) {
        MembershipEvent::Acquired { sequencer, .. } => sequencer,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_partition_taken_again_starts_from_the_store_not_from_the_tail_kept_in_an_earlier_tenure() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let runtime = Runtime::from_file(&component_path(), Limits::default()).expect("component");
    let url: StoreUrl = cluster.url().parse().expect("etcd URL");
    // Host A: one store with its own tail, one driver, for all its tenures (one process).
    let store = open(&url, &OpenOptions::new()).expect("open the store");
    let layer = store
        .own_tail()
        .expect("on etcd the tail layer is on by default");
    let etcd = store.etcd().cloned().expect("an etcd store");
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver_a = Arc::new(Driver::spawn(
        store.storage(),
        clock.clone(),
        DriverConfig::default(),
    ));
    let join = |name: &str, store, driver| {
        let mut config = MembershipConfig::new(name, 1);
        config.lease_ttl = Duration::from_secs(1);
        config.handover_grace = Duration::from_millis(200);
        let parts = MembershipParts {
            store,
            driver,
            runtime: runtime.clone(),
            params: params(),
            clock: clock.clone(),
        };
        Membership::open(parts, config).expect("join")
    };

    // A's first tenure: it appends, its flusher writes, and it keeps the PLog's tail.
    let (a, mut events_a) = join("a", etcd.clone(), driver_a.clone());
    let seq = acquired(&mut events_a);
    assert_eq!(commit("A", &*store.storage(), &seq, 5), 0);
    driver_a.idle();
    drop(seq);
    a.leave();

    // B owns the partition and appends after A's end.
    let b_store = cluster.store(Duration::from_secs(10));
    let driver_b = Arc::new(Driver::spawn(
        Arc::new(b_store.clone()),
        clock.clone(),
        DriverConfig::default(),
    ));
    let (b, mut events_b) = join("b", b_store.clone(), driver_b.clone());
    let seq = acquired(&mut events_b);
    assert_eq!(
        commit("B", &b_store, &seq, 3),
        0,
        "B read the store at its start"
    );
    driver_b.idle();
    drop(seq);
    b.leave();

    // A takes it again: its actualization reads the store, so its first append is not refused.
    let before = layer.counts();
    let (a, mut events_a) = join("a", etcd, driver_a.clone());
    let seq = acquired(&mut events_a);
    assert_eq!(
        commit("A", &*store.storage(), &seq, 2),
        0,
        "A's first append after taking the partition again is refused: it resumed from its old tail"
    );
    let counts = layer.counts().since(&before);
    assert_eq!(counts.vouched, 0, "{counts:?}");
    assert!(counts.tenures_ended >= 1, "{counts:?}");
    driver_a.idle();
    drop(seq);
    a.leave();
    assert_eq!(
        all_events(&cluster.store(Duration::from_secs(10)), 0).len(),
        5 + 3 + 2
    );
    check_passes(&cluster.url());
}
