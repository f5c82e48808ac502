//! The composite store, `etcd://…?plog=objects:DIR`: the PLog on object storage (a directory,
//! or S3 on SeaweedFS), the view, the stored next offsets and the owners on the cluster. One host's main job
//! run twice (no number twice), the etcd writes of a run counted on the cluster (appends make
//! none), two hosts started at once, an owner paused past its lease, a host killed, a host
//! cut off from etcd (not from the objects), a host joining and leaving, a zombie handle running into its successor's takeover mark; the merger bundling
//! while owners change. Each ends with `check` and an independent read of the PLogs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use sequencer::SeqValue;
use sequencer_host::store::etcd::ownership::HostLease;
use sequencer_host::store::objects::{Access, RemotePlog};
use sequencer_host::store::{ArchiveUse, OpenOptions, StoreUrl, open, open_reader};
use sequencer_host::{AppendError, ManualClock, StoreReader};

use crate::common::component_path;
use crate::common::etcd_cluster::EtcdCluster;
use crate::common::{run_host, text};
use crate::hosts::{all_owning, count, finished, plogs_hold, row, signal, spawn_host, wait_owners};
use crate::support::{all_events, check_passes, event_batch, run_args};

/// The composite store on `cluster` with its PLog in the cluster's temp dir.
fn composite_url(cluster: &EtcdCluster) -> String {
    let dir = cluster.dir.path().join("plog");
    format!("{}?plog=objects:{}", cluster.url(), dir.display())
}

/// [`composite_url`], its PLog created with bundles of `events` events: the merger bundles
/// (and deletes event objects) while the hosts' workloads run and owners change.
fn composite_url_merging_every(cluster: &EtcdCluster, events: u64) -> String {
    let dir = cluster.dir.path().join("plog");
    let plog = RemotePlog::directory(&dir, true).expect("the PLog's directory");
    drop((plog.open_plog(Some(&dir), Some(events), Access::Write)).expect("create the PLog"));
    composite_url(cluster)
}

/// The bundles the mergers wrote into the PLog of [`composite_url`].
fn bundles_written(cluster: &EtcdCluster) -> usize {
    let top = cluster.dir.path().join("plog").join("bundles");
    (std::fs::read_dir(&top).into_iter().flatten().flatten())
        .map(|p| std::fs::read_dir(p.path()).map_or(0, |d| d.count()))
        .sum()
}

/// The composite store at `url`, read without writing.
fn reader(url: &str) -> Box<dyn StoreReader + Send + Sync> {
    let url: StoreUrl = url.parse().expect("a store URL");
    open_reader(&url, &OpenOptions::default()).expect("open the composite store to read")
}

/// Every partition's PLog dense from 1, each key's numbers strictly increasing; the events of
/// each partition.
fn numbered_once(store: &dyn StoreReader, partitions: u32) -> Vec<u64> {
    (0..partitions)
        .map(|p| {
            let plog = all_events(store, p);
            let mut last = std::collections::HashMap::new();
            for (i, e) in plog.iter().enumerate() {
                assert_eq!(e.offset, i as u64 + 1, "partition {p}: a gap");
                for v in &e.values {
                    let before = last.insert((v.key.ws, v.key.seq), v.value);
                    assert!(
                        before.is_none_or(|b| b < v.value),
                        "partition {p} offset {}: {v:?} after {before:?}",
                        e.offset
                    );
                }
            }
            plog.len() as u64
        })
        .collect()
}

/// The value of a metric (the sum of its series) in an etcd member's `/metrics`.
fn metric(endpoint: &str, name: &str) -> f64 {
    let address = endpoint.trim_start_matches("http://");
    let mut conn = TcpStream::connect(address).expect("connect to an etcd member");
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let request = format!("GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n");
    conn.write_all(request.as_bytes())
        .expect("ask for /metrics");
    let mut body = String::new();
    conn.read_to_string(&mut body).expect("read /metrics");
    (body.lines())
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.split([' ', '{']).next() == Some(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn the_main_job_on_the_composite_store_run_twice_numbers_each_value_once_and_keeps_no_plog_in_etcd()
{
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = composite_url(&cluster);
    let component = component_path();
    for round in 0..2 {
        let out = run_host(
            &(run_args(&url, &component, "2", "1500").iter())
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "run {round} failed:\n{stdout}{stderr}"
        );
        assert!(stdout.contains("PLog at"), "{stdout}");
    }
    check_passes(&url);
    let events = numbered_once(reader(&url).as_ref(), 2);
    assert!(events.iter().all(|&n| n >= 3000), "{events:?}");
    let etcd = cluster.store(Duration::from_secs(10));
    for p in 0..2 {
        assert!(all_events(&etcd, p).is_empty(), "partition {p} in etcd");
        assert!(etcd.stored_next_offset(p).expect("stored offset") > 1);
    }
    let inspect = run_host(&["inspect", "--store", &url]);
    let (stdout, stderr) = text(&inspect);
    assert!(inspect.status.success(), "{stdout}{stderr}");
}

#[test]
fn appends_on_the_composite_store_send_etcd_no_write_beyond_the_flushers_view_writes() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = composite_url(&cluster);
    let component = component_path();
    // Raft proposals committed (every write request is one; reads and keepalives are none).
    let proposals = || {
        metric(
            &cluster.endpoints[0],
            "etcd_server_proposals_committed_total",
        )
    };
    let before = proposals();
    let out = run_host(
        &(run_args(&url, &component, "2", "6000").iter())
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let after = proposals();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let events: u64 = numbered_once(reader(&url).as_ref(), 2).iter().sum();
    let writes = (after - before) as u64;
    let flushes = count(&stdout, "flushes (view writes)");
    let txns = count(&stdout, "etcd transactions");
    eprintln!(
        "{events} events: {writes} etcd writes ({:.1} per 1,000 events), the host sent {txns} transactions for {flushes} view writes",
        writes as f64 * 1000.0 / events as f64
    );
    // The cluster's writes are the host's transactions (and its layout record, a few
    // elections' no-ops), and those the flusher's: none per append.
    assert!(writes <= txns + 10, "{writes} writes, {txns} transactions");
    assert!(
        txns <= 3 * flushes + 10,
        "{txns} transactions for {flushes} view writes:\n{stdout}"
    );
    assert!(
        writes * 20 < events,
        "{writes} etcd writes for {events} events"
    );
}

#[test]
fn two_hosts_started_at_once_on_the_composite_store_never_write_one_partition_together() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = composite_url_merging_every(&cluster, 50);
    let log = |n: &str| cluster.dir.path().join(format!("{n}.log"));
    let a = spawn_host(&url, "a", "4", "400", "0", &log("a"), &[]);
    let b = spawn_host(&url, "b", "4", "400", "0", &log("b"), &[]);
    let summaries = [finished(a, "a", &log("a")), finished(b, "b", &log("b"))];
    for s in &summaries {
        assert!(
            row(s, "actualizations").contains(" 0 after appends refused by the offset fence"),
            "{s}"
        );
    }
    let served: u64 = (summaries.iter())
        .map(|s| count(s, "events appended here"))
        .sum();
    assert!(served >= 1600, "{served} events appended by both");
    plogs_hold(&url, reader(&url).as_ref(), 4, 400);
}

#[test]
fn an_owner_paused_past_its_lease_on_the_composite_store_stops_and_its_successor_numbers_on() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = composite_url_merging_every(&cluster, 50);
    let store = cluster.store(Duration::from_secs(10));
    let log = |n: &str| cluster.dir.path().join(format!("{n}.log"));
    let a = spawn_host(&url, "a", "4", "800", "400", &log("a"), &[]);
    let b = spawn_host(&url, "b", "4", "800", "400", &log("b"), &[]);
    let of_a = all_owning(&store, &["a", "b"], 4, "a");
    std::thread::sleep(Duration::from_millis(500));
    signal(&a, "-STOP");
    wait_owners(
        &store,
        Duration::from_secs(15),
        "b owning a's partitions",
        |o| (of_a.iter()).all(|p| o.owners.get(p).is_some_and(|x| x.host == "b")),
    );
    // Past its lease, and past b's first appends: a wakes up holding appends in flight.
    std::thread::sleep(Duration::from_millis(1000));
    signal(&a, "-CONT");
    let summary_a = finished(a, "a", &log("a"));
    let summary_b = finished(b, "b", &log("b"));
    assert!(
        !row(&summary_a, "partitions lost").starts_with("0 refused by the epoch, 0 to the lease"),
        "a lost nothing: {summary_a}"
    );
    assert!(
        count(&summary_b, "takeovers") >= of_a.len() as u64,
        "{summary_b}"
    );
    plogs_hold(&url, reader(&url).as_ref(), 4, 800);
}

#[cfg(feature = "s3")]
#[test]
fn the_main_job_on_the_composite_store_with_its_plog_on_s3_numbers_each_value_once() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let Some(s3) = crate::common::s3_server::S3Server::real() else {
        return;
    };
    let bucket = crate::common::s3_server::BUCKET;
    let url = format!("{}?plog=objects:s3://{bucket}/composite", cluster.url());
    let component = component_path();
    let vars = s3.vars();
    for round in 0..2 {
        let out = crate::common::host()
            .args(run_args(&url, &component, "2", "300"))
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run sequencer-host");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "run {round}:\n{stdout}{stderr}");
    }
    let out = crate::common::host()
        .args(["check", "--store", &url])
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run sequencer-host check");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "check:\n{stdout}{stderr}");
    let etcd = cluster.store(Duration::from_secs(10));
    for p in 0..2 {
        assert!(all_events(&etcd, p).is_empty(), "partition {p} in etcd");
        assert!(etcd.stored_next_offset(p).expect("stored offset") > 1);
    }
    let plog = s3.remote("composite");
    let objects = plog
        .open_plog(None, None, sequencer_host::store::objects::Access::ReadOnly)
        .expect("the PLog on S3");
    for p in 0..2 {
        assert!(
            objects.bounds(p).0 > 600,
            "partition {p}: {:?}",
            objects.bounds(p)
        );
    }
}

/// Polls (bounded), keeping `lease` alive, until it takes `partition`; returns the epoch.
fn take_when_free(lease: &HostLease, partition: u32) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        lease.keep_alive().expect("keep alive");
        if let Some(epoch) = lease.acquire(partition).expect("acquire") {
            return epoch;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "partition {partition} never freed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_zombie_handle_racing_its_successor_on_the_composite_store_runs_into_its_takeover_mark_and_stops()
 {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url: StoreUrl = composite_url(&cluster).parse().expect("a store URL");
    let open = || open(&url, &OpenOptions::new()).expect("open the composite store");
    // A's clock never moves: it believes its lease holds however long it was away.
    let (a_store, b_store) = (open(), open());
    let (clock_a, clock_b) = (ManualClock::new(), ManualClock::new());
    let register = |store: &sequencer_host::store::Store, name: &str, clock: &ManualClock| {
        (store.etcd().expect("the cluster"))
            .register_host(name, Duration::from_secs(1), Arc::new(clock.clone()))
            .expect("register the host")
    };
    let a = register(&a_store, "a", &clock_a);
    let epoch_a = a.acquire(0).expect("acquire").expect("free");
    let zombie = a_store.storage();
    zombie
        .append_events(0, &event_batch(1, 3, 10))
        .expect("the owner appends");
    // A stops renewing: its lease expires on the cluster, B takes the partition over and
    // numbers from the PLog as it is.
    let b = register(&b_store, "b", &clock_b);
    let epoch_b = take_when_free(&b, 0);
    assert!(epoch_b > epoch_a, "epochs grow: {epoch_a} then {epoch_b}");
    let successor = b_store.storage();
    let page = futures::executor::block_on(successor.read_plog(0, 1, 100)).expect("replay");
    assert_eq!(page.next, 4, "the successor sees the owner's events");
    // Its first read placed the takeover mark at offset 4: the zombie's append there, before
    // the successor appended anything, runs into it and finds the successor's epoch.
    match zombie.append_events(0, &event_batch(4, 1, 10)) {
        Err(AppendError::NotOwner { epoch, why, .. }) => {
            assert_eq!(epoch, epoch_a);
            assert!(why.contains(&format!("epoch {epoch_b}")), "{why}");
        }
        other => panic!("the zombie's append at the successor's mark: {other:?}"),
    }
    successor
        .append_events(0, &event_batch(4, 2, 10))
        .expect("the successor appends at the PLog's next offset");
    // Again at the offset it knows, now the successor's (one winner): refused the same way.
    match zombie.append_events(0, &event_batch(4, 1, 10)) {
        Err(AppendError::NotOwner { epoch, why, .. }) => {
            assert_eq!(epoch, epoch_a);
            assert!(why.contains(&format!("epoch {epoch_b}")), "{why}");
        }
        other => panic!("the zombie's append at a taken offset: {other:?}"),
    }
    // At the free offset after the successor's events it writes nothing either: it stopped.
    match zombie.append_events(0, &event_batch(6, 1, 10)) {
        Err(AppendError::NotOwner { epoch, .. }) => assert_eq!(epoch, epoch_a),
        other => panic!("the zombie appended at a free offset: {other:?}"),
    }
    // Nor does its flusher: the partition is lost on the zombie, its view write not sent.
    let view = futures::executor::block_on(zombie.write(0, vec![SeqValue::new(1, 1, 4)], 5));
    let refused = view.expect_err("the zombie's view write");
    assert!(refused.0.contains("a successor owns it"), "{refused}");
    successor
        .append_events(0, &event_batch(6, 2, 10))
        .expect("the successor goes on");
    let plog: Vec<u64> = (all_events(reader(&url.to_string()).as_ref(), 0).iter())
        .map(|e| e.offset)
        .collect();
    assert_eq!(plog, (1..=7).collect::<Vec<u64>>(), "dense, no gap");
    futures::executor::block_on(successor.write(0, vec![SeqValue::new(1, 1, 7)], 8))
        .expect("the successor's view write");
    check_passes(&url.to_string());
}

#[test]
fn sigkill_of_an_owner_on_the_composite_store_the_survivor_takes_over_and_the_workload_completes() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = composite_url_merging_every(&cluster, 50);
    let store = cluster.store(Duration::from_secs(10));
    let log = |n: &str| cluster.dir.path().join(format!("{n}.log"));
    let a = spawn_host(&url, "a", "4", "800", "600", &log("a"), &[]);
    let mut b = spawn_host(&url, "b", "4", "800", "600", &log("b"), &[]);
    let of_b = all_owning(&store, &["a", "b"], 4, "b");
    std::thread::sleep(Duration::from_millis(700));
    b.kill().expect("SIGKILL b");
    let _ = b.wait();
    let killed = std::time::Instant::now();
    wait_owners(
        &store,
        Duration::from_secs(15),
        "b's partitions taken over",
        |o| (of_b.iter()).all(|p| o.owners.get(p).is_some_and(|x| x.host == "a")),
    );
    let took = killed.elapsed();
    eprintln!("SIGKILL to every partition of the killed host owned by the survivor: {took:?}");
    assert!(took < Duration::from_secs(5), "takeover took {took:?}");
    let summary = finished(a, "a", &log("a"));
    eprintln!(
        "first append after a takeover: {}; {}",
        row(&summary, "first append after a takeover"),
        row(&summary, "actualizations")
    );
    assert!(
        count(&summary, "takeovers") >= of_b.len() as u64,
        "{summary}"
    );
    plogs_hold(&url, reader(&url).as_ref(), 4, 800);
    // 800 events a partition in bundles of 50, merged while owners changed.
    let bundles = bundles_written(&cluster);
    assert!(bundles >= 4 * 15, "{bundles} bundles");
}

#[test]
fn a_host_joining_the_composite_store_gets_its_share_by_handover_and_sigterm_hands_it_back() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = composite_url(&cluster);
    let store = cluster.store(Duration::from_secs(10));
    let log = |n: &str| cluster.dir.path().join(format!("{n}.log"));
    let a = spawn_host(&url, "a", "4", "600", "200", &log("a"), &[]);
    wait_owners(&store, Duration::from_secs(20), "a owning all", |o| {
        o.owners.len() == 4 && o.owners.values().all(|x| x.host == "a")
    });
    let b = spawn_host(&url, "b", "4", "600", "200", &log("b"), &[]);
    wait_owners(&store, Duration::from_secs(20), "b owning its share", |o| {
        o.owners.values().filter(|x| x.host == "b").count() == 2
    });
    std::thread::sleep(Duration::from_millis(500));
    signal(&b, "-TERM");
    let termed = std::time::Instant::now();
    wait_owners(&store, Duration::from_secs(10), "a owning all again", |o| {
        o.hosts.len() == 1 && o.owners.len() == 4 && o.owners.values().all(|x| x.host == "a")
    });
    let took = termed.elapsed();
    eprintln!("SIGTERM to every partition owned by the other host: {took:?}");
    assert!(took < Duration::from_millis(1900), "{took:?}");
    let summary_b = finished(b, "b", &log("b"));
    assert!(count(&summary_b, "handovers") >= 2, "{summary_b}");
    let summary_a = finished(a, "a", &log("a"));
    assert!(count(&summary_a, "takeovers") >= 2, "{summary_a}");
    for s in [&summary_a, &summary_b] {
        assert!(
            row(s, "actualizations").contains(" 0 after appends refused by the offset fence"),
            "an acquisition numbered from a stale offset: {s}"
        );
    }
    plogs_hold(&url, reader(&url).as_ref(), 4, 600);
}

#[test]
fn a_cluster_keeps_the_view_of_one_plog_and_refuses_any_other_before_writing() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let options = OpenOptions::new();
    let refused = |url: &StoreUrl| match open(url, &options) {
        Ok(_) => panic!("{url} opened"),
        Err(e) => e.to_string(),
    };
    let composite: StoreUrl = composite_url(&cluster).parse().expect("a store URL");
    let archived = OpenOptions::new().archive(ArchiveUse::default().named(cluster.dir.path()));
    let e = open(&composite, &archived)
        .err()
        .expect("an archive refused");
    assert!(
        e.to_string().contains("composite store is not archived"),
        "{e}"
    );
    drop(open(&composite, &options).expect("a new composite store records its PLog"));
    let other = format!(
        "{}?plog=objects:{}",
        cluster.url(),
        cluster.dir.path().join("other").display()
    );
    let e = refused(&other.parse().expect("a store URL"));
    assert!(
        e.contains("its view belongs to the PLog at objects:"),
        "{e}"
    );
    let alone: StoreUrl = cluster.url().parse().expect("a store URL");
    let e = refused(&alone);
    assert!(e.contains("its PLog is at objects:"), "{e}");
    let e = open_reader(&alone, &options)
        .err()
        .expect("refused to read");
    assert!(e.to_string().contains("its PLog is at objects:"), "{e}");
    // A cluster that holds a store of its own PLog is not taken for a composite store's view.
    cluster.wipe();
    let store = open(&alone, &options).expect("the etcd store");
    (store.storage())
        .append_events(0, &event_batch(1, 2, 10))
        .expect("append to the etcd store");
    drop(store);
    let e = refused(&composite);
    assert!(e.contains("whose PLog is in the cluster"), "{e}");
}

#[test]
fn a_host_cut_off_from_etcd_stops_appending_to_the_objects_before_its_partitions_are_taken_over() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = composite_url_merging_every(&cluster, 50);
    let store = cluster.store(Duration::from_secs(10));
    let member = cluster.endpoints[0].trim_start_matches("http://");
    let proxy = crate::host_faults::Proxy::start(member.to_string());
    let plog = url.split_once("?plog=").expect("a composite URL").1;
    // A reaches etcd through the proxy only; the objects it always reaches.
    let cut_off_url = format!("etcd://127.0.0.1:{}?plog={plog}", proxy.port);
    let log = |n: &str| cluster.dir.path().join(format!("{n}.log"));
    let a = spawn_host(&cut_off_url, "a", "4", "800", "400", &log("a"), &[]);
    let b = spawn_host(&url, "b", "4", "800", "400", &log("b"), &[]);
    let of_a = all_owning(&store, &["a", "b"], 4, "a");
    std::thread::sleep(Duration::from_millis(500));
    proxy.pause(true);
    let cut = std::time::Instant::now();
    let (mut stopped, mut taken) = (None, None);
    while stopped.is_none() || taken.is_none() {
        assert!(
            cut.elapsed() < Duration::from_secs(20),
            "stopped {stopped:?}, taken {taken:?}"
        );
        if stopped.is_none()
            && std::fs::read_to_string(log("a")).is_ok_and(|l| l.contains("stopped numbering"))
        {
            stopped = Some(cut.elapsed());
        }
        if taken.is_none()
            && store.owners(Duration::from_secs(2)).is_ok_and(|o| {
                (of_a.iter()).all(|p| o.owners.get(p).is_some_and(|x| x.host == "b"))
            })
        {
            taken = Some(cut.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "cut off: a stopped numbering after {stopped:?}, b owned a's partitions after {taken:?}"
    );
    assert!(
        stopped < taken,
        "a stopped at {stopped:?}, after b took over at {taken:?}"
    );
    proxy.pause(false);
    let summary_a = finished(a, "a", &log("a"));
    let summary_b = finished(b, "b", &log("b"));
    assert!(
        count(&summary_b, "takeovers") >= of_a.len() as u64,
        "{summary_b}"
    );
    assert!(!summary_a.is_empty());
    plogs_hold(&url, reader(&url).as_ref(), 4, 800);
}
