//! Partitions owned through leases, in the library (no host process): the epoch every write
//! carries, the deadline judged on the clock passed in, a partition taken only if free, and
//! the membership's stream of events as an embedder sees it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::channel::mpsc::UnboundedReceiver;
use sequencer::SeqValue;
use sequencer_host::membership::{
    LostReason, Membership, MembershipConfig, MembershipEvent, MembershipParts,
};
use sequencer_host::store::etcd::ownership::HostLease;
use sequencer_host::{
    AppendError, Clock, Driver, DriverConfig, Limits, ManualClock, MonotonicClock, Runtime,
    Storage, StoreReader as _,
};

use crate::common::component_path;
use crate::common::etcd_cluster::EtcdCluster;
use crate::support::{event_batch, params};

/// Registers `name` on a store of its own with a 1 s lease on `clock`.
fn host(cluster: &EtcdCluster, name: &str, clock: &ManualClock) -> HostLease {
    cluster
        .store(Duration::from_secs(5))
        .register_host(name, Duration::from_secs(1), Arc::new(clock.clone()))
        .expect("register the host")
}

/// Polls (bounded), keeping `lease` alive, until it takes `partition`; returns the epoch.
fn take_when_free(lease: &HostLease, partition: u32) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        lease.keep_alive().expect("keep alive");
        if let Some(epoch) = lease.acquire(partition).expect("acquire") {
            return epoch;
        }
        assert!(
            Instant::now() < deadline,
            "partition {partition} never freed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_stale_owner_whose_lease_expired_has_its_appends_and_view_writes_refused_by_the_epoch() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    // A's clock never moves: only the cluster's epoch can stop it.
    let (clock_a, clock_b) = (ManualClock::new(), ManualClock::new());
    let a = host(&cluster, "a", &clock_a);
    let epoch_a = a.acquire(0).expect("acquire").expect("free");
    a.acquire(1).expect("acquire").expect("free");
    a.store()
        .append_events(0, &event_batch(1, 3, 10))
        .expect("the owner appends");
    let b = host(&cluster, "b", &clock_b);
    assert_eq!(b.acquire(0).expect("acquire"), None, "A owns it");
    let refused = b.store().append_events(0, &event_batch(4, 1, 10));
    assert!(
        matches!(refused, Err(AppendError::NotOwner { epoch: 0, .. })),
        "a partition not owned is not written: {refused:?}"
    );

    // A stops renewing: its lease expires on the cluster, B takes the partition.
    let epoch_b = take_when_free(&b, 0);
    take_when_free(&b, 1);
    assert!(epoch_b > epoch_a, "epochs grow: {epoch_a} then {epoch_b}");
    let stale = a.store().append_events(0, &event_batch(4, 2, 10));
    match &stale {
        Err(AppendError::NotOwner { epoch, why, .. }) => {
            assert_eq!(*epoch, epoch_a);
            assert!(why.contains("refused epoch"), "{why}");
        }
        other => panic!("the stale owner's append went through: {other:?}"),
    }
    assert!(a.lost(0).is_some(), "A knows it lost the partition");
    let view = futures::executor::block_on(a.store().write(1, vec![SeqValue::new(9, 1, 99)], 3));
    let e = view.expect_err("the stale owner's view write");
    assert!(e.0.contains("refused epoch"), "{e}");
    assert_eq!(a.store().stats().epoch_refused.load(Ordering::Relaxed), 2);
    assert!(
        a.store().view(1).expect("view").is_empty(),
        "nothing written"
    );
    b.store()
        .append_events(0, &event_batch(4, 2, 10))
        .expect("the new owner appends at the PLog's next offset");
    b.release(0, epoch_b).expect("release");
    let owners = b.store().owners(Duration::from_secs(2)).expect("owners");
    assert!(!owners.owners.contains_key(&0), "{owners:?}");
}

#[test]
fn an_owner_stops_writing_once_its_lease_may_have_expired_on_its_own_clock() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let clock = ManualClock::new();
    let a = host(&cluster, "a", &clock);
    a.acquire(3).expect("acquire").expect("free");
    a.store()
        .append_events(3, &event_batch(1, 1, 10))
        .expect("append");
    // 1 s TTL less the 200 ms margin: past 800 ms nothing is sent, whatever the cluster says.
    clock.advance(Duration::from_millis(850));
    let refused = a.store().append_events(3, &event_batch(2, 1, 10));
    match &refused {
        Err(AppendError::NotOwner { why, .. }) => assert!(why.contains("lease may have expired")),
        other => panic!("{other:?}"),
    }
    assert_eq!(a.store().stats().not_sent.load(Ordering::Relaxed), 1);
    assert_eq!(a.store().stats().epoch_refused.load(Ordering::Relaxed), 0);
    // A keepalive acknowledged moves the deadline on from the time it was sent.
    a.keep_alive().expect("keep alive");
    a.store()
        .append_events(3, &event_batch(2, 1, 10))
        .expect("renewed");
    let owners = a.store().owners(Duration::from_secs(2)).expect("owners");
    assert_eq!(owners.hosts.get("a"), Some(&a.id()));
    assert_eq!(owners.owners.get(&3).map(|o| o.host.as_str()), Some("a"));
    a.revoke();
    let owners = a.store().owners(Duration::from_secs(2)).expect("owners");
    assert!(
        owners.hosts.is_empty() && owners.owners.is_empty(),
        "{owners:?}"
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

#[test]
fn an_embedder_gets_acquired_and_lost_events_as_a_host_joins_and_leaves() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let runtime = Runtime::from_file(&component_path(), Limits::default()).expect("component");
    let open = |name: &str| {
        let store = cluster.store(Duration::from_secs(10));
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let driver = Arc::new(Driver::spawn(
            Arc::new(store.clone()),
            clock.clone(),
            DriverConfig::default(),
        ));
        let mut config = MembershipConfig::new(name, 2);
        config.lease_ttl = Duration::from_secs(1);
        config.handover_grace = Duration::from_millis(300);
        let parts = MembershipParts {
            store,
            driver,
            runtime: runtime.clone(),
            params: params(),
            clock,
        };
        Membership::open(parts, config).expect("join")
    };
    let (a, mut events_a) = open("a");
    let mut epochs = Vec::new();
    for _ in 0..2 {
        match next_event(&mut events_a) {
            MembershipEvent::Acquired {
                epoch,
                sequencer,
                previous,
                ..
            } => {
                assert_eq!(previous, None);
                epochs.push((sequencer.partition(), epoch));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(a.owned(), vec![0, 1]);
    let (b, mut events_b) = open("b");
    let MembershipEvent::Lost { partition, why } = next_event(&mut events_a) else {
        panic!("a kept both partitions");
    };
    assert_eq!(why, LostReason::HandedOver);
    let MembershipEvent::Acquired {
        partition: taken,
        epoch,
        previous,
        ..
    } = next_event(&mut events_b)
    else {
        panic!("b took nothing");
    };
    assert_eq!((taken, previous.as_deref()), (partition, Some("a")));
    assert!(
        epochs.iter().all(|(_, e)| *e < epoch),
        "{epochs:?} then {epoch}"
    );
    let left = b.leave();
    assert_eq!(left.handovers.len(), 1, "{left:?}");
    let MembershipEvent::Acquired { previous, .. } = next_event(&mut events_a) else {
        panic!("a did not take it back");
    };
    assert_eq!(previous.as_deref(), Some("b"));
    let stats = a.leave();
    assert_eq!(stats.takeovers.len(), 1, "{stats:?}");
}

/// Waits (bounded) until `seen` passes `above`; returns the count.
fn seen_above(seen: &std::sync::atomic::AtomicU64, above: u64, what: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = seen.load(Ordering::SeqCst);
        if now > above {
            return now;
        }
        assert!(Instant::now() < deadline, "no callback after {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_ownership_watch_calls_back_when_a_host_joins_a_partition_is_taken_and_let_go() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let store = cluster.store(Duration::from_secs(5));
    let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = seen.clone();
    let watch = store
        .watch_ownership(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }))
        .expect("a watch on a live store");
    // The set-up calls back once per prefix (changes may have been missed before it).
    let mut now = seen_above(&seen, 1, "the watch was set up");
    std::thread::sleep(Duration::from_millis(200));
    now = now.max(seen.load(Ordering::SeqCst));
    // A lease that outlives the test: its expiry would call back.
    let a = (cluster.store(Duration::from_secs(5)))
        .register_host("a", Duration::from_secs(30), Arc::new(ManualClock::new()))
        .expect("register the host");
    now = seen_above(&seen, now, "a host key was created");
    let epoch = a.acquire(3).expect("acquire").expect("free");
    now = seen_above(&seen, now, "an owner key was created");
    a.release(3, epoch).expect("release");
    seen_above(&seen, now, "an owner key was deleted");
    // Other keys (the PLog) call nothing back.
    std::thread::sleep(Duration::from_millis(200));
    let quiet = seen.load(Ordering::SeqCst);
    let epoch = a.acquire(0).expect("acquire").expect("free");
    a.store()
        .append_events(0, &event_batch(1, 3, 10))
        .expect("the owner appends");
    let after_take = seen_above(&seen, quiet, "partition 0 was taken");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        after_take,
        "an append called the ownership watch back"
    );
    // Dropped, it calls nothing more.
    drop(watch);
    std::thread::sleep(Duration::from_millis(100));
    let stopped = seen.load(Ordering::SeqCst);
    a.release(0, epoch).expect("release");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        stopped,
        "a dropped watch called back"
    );
}
