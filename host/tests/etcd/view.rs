//! The sequences view on the cluster: many workspaces read at once, a view in the earlier layout
//! moved to one key per workspace, writers racing on the same workspaces, and a stored next
//! offset that only rises.

use std::sync::atomic::Ordering;
use std::time::Duration;

use sequencer::SeqValue;
use sequencer_host::Storage;
use sequencer_host::StoreReader as _;
use sequencer_host::store::etcd::EtcdStorage;

use crate::common::etcd_cluster::EtcdCluster;

#[test]
fn numbers_of_many_workspaces_read_in_one_go_are_those_read_one_by_one() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let store = cluster.store(Duration::from_secs(5));
    let values: Vec<SeqValue> = (1..=250u64)
        .flat_map(|ws| [SeqValue::new(ws, 1, ws), SeqValue::new(ws, 3, 1000 + ws)])
        .collect();
    futures::executor::block_on(store.write(2, values, 7)).expect("write the view");
    let ws: Vec<u64> = (0..=260).rev().collect();
    let many = store
        .read_numbers_many(2, &ws, &[3, 2, 1])
        .expect("read many");
    let one_by_one: Vec<u64> = ws
        .iter()
        .flat_map(|&w| store.read_numbers(2, w, &[3, 2, 1]).expect("read one"))
        .collect();
    assert_eq!(many, one_by_one);
    assert_eq!(&many[3 * 10..3 * 11], &[1250, 0, 250], "workspace 250");
}

#[test]
fn a_view_in_the_earlier_layout_is_read_merged_and_moved_to_one_key_per_workspace() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    // Rows as builds before one key per workspace wrote them: seq/<p>/<ws:020>/<seq:05>.
    let (rt, mut client) = cluster.client();
    for (seq, n) in [(1u16, 5u64), (2, 7)] {
        let key = format!("seq/0/{:020}/{seq:05}", 1);
        rt.block_on(client.put(key, n.to_be_bytes().to_vec(), None))
            .expect("put an old row");
    }
    let store = cluster.store(Duration::from_secs(5));
    assert_eq!(store.read_numbers(0, 1, &[2, 1, 3]), Ok(vec![7, 5, 0]));
    assert_eq!(store.view(0), Ok(vec![(1, 1, 5), (1, 2, 7)]));

    futures::executor::block_on(store.write(0, vec![SeqValue::new(1, 1, 9)], 3)).expect("write");
    assert_eq!(store.read_numbers_many(0, &[1], &[1, 2]), Ok(vec![9, 7]));
    assert_eq!(store.view(0), Ok(vec![(1, 1, 9), (1, 2, 7)]));
    let keys = rt
        .block_on(client.get("seq/0/", Some(etcd_client::GetOptions::new().with_prefix())))
        .expect("list the view");
    let keys: Vec<String> = keys
        .kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect();
    assert_eq!(
        keys,
        vec![format!("seq/0/{:020}", 1)],
        "one key, the old rows gone"
    );
}

/// A number for writer `w`'s round `r` and workspace `ws` (a fixed pseudo-random spread).
fn scattered(w: u64, r: u64, ws: u64) -> u64 {
    let mut x = (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (r + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)
        ^ ws;
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    (x >> 33) % 10_000
}

#[test]
fn writers_raising_the_same_workspaces_at_once_leave_the_largest_numbers() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let (writers, rounds, workspaces) = (3u64, 30u64, 70u64);
    let stores: Vec<EtcdStorage> = (0..writers)
        .map(|_| cluster.store(Duration::from_secs(10)))
        .collect();
    std::thread::scope(|s| {
        for (w, store) in stores.iter().enumerate() {
            s.spawn(move || {
                for r in 0..rounds {
                    // Numbers up and down in no order; each write touches workspaces 1..=70
                    // (two view transactions).
                    let values = (1..=workspaces)
                        .map(|ws| SeqValue::new(ws, 1, scattered(w as u64, r, ws)))
                        .collect();
                    futures::executor::block_on(store.write(4, values, r)).expect("write");
                }
            });
        }
    });
    let expected: Vec<(u64, u16, u64)> = (1..=workspaces)
        .map(|ws| {
            let most = (0..writers)
                .flat_map(|w| (0..rounds).map(move |r| scattered(w, r, ws)))
                .max()
                .unwrap_or(0);
            (ws, 1, most)
        })
        .collect();
    assert_eq!(
        stores[0].view(4).expect("view"),
        expected,
        "the largest number written, never one overwritten by a smaller"
    );
    assert_eq!(
        stores[0].stored_next_offset(4),
        Ok(rounds - 1),
        "the largest offset written"
    );
    let conflicts: u64 = stores
        .iter()
        .map(|s| s.stats().view_conflicts.load(Ordering::Relaxed))
        .sum();
    eprintln!("view writes tried again after a conflict: {conflicts}");
}

/// Two handles on the cluster: two hosts writing the same view.
fn two_stores(cluster: &EtcdCluster) -> (EtcdStorage, EtcdStorage) {
    let store = || cluster.store(Duration::from_secs(5));
    (store(), store())
}

fn conflicts(store: &EtcdStorage) -> u64 {
    store.stats().view_conflicts.load(Ordering::Relaxed)
}

#[test]
fn a_workspace_another_writer_raised_keeps_the_larger_number() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let (a, b) = two_stores(&cluster);
    let write = |s: &EtcdStorage, n: u64, offset| {
        futures::executor::block_on(s.write(1, vec![SeqValue::new(1, 1, n)], offset))
            .expect("write")
    };
    write(&a, 5, 2);
    write(&b, 9, 3);
    write(&a, 6, 4);
    assert_eq!(a.view(1), Ok(vec![(1, 1, 9)]), "never moved back to 6");
    assert_eq!(a.stored_next_offset(1), Ok(4));
    write(&a, 10, 5);
    assert_eq!(a.view(1), Ok(vec![(1, 1, 10)]));
    // A write reads the key before it writes: only a read served by a member that had not yet
    // seen b's write can make one of a's two later writes conflict (then it reads again).
    assert!(conflicts(&a) <= 2, "{} conflicts", conflicts(&a));
}

#[test]
fn the_stored_next_offset_never_moves_back() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let (a, b) = two_stores(&cluster);
    let write = |s: &EtcdStorage, n: u64, offset| {
        futures::executor::block_on(s.write(6, vec![SeqValue::new(1, 1, n)], offset))
            .expect("write")
    };
    write(&a, 5, 300);
    // A late write of a lower offset (a host that resumed from a stale tail, a stale owner's
    // flusher): its numbers are merged, its offset is not taken.
    write(&b, 7, 120);
    assert_eq!(a.stored_next_offset(6), Ok(300), "never back to 120");
    assert_eq!(a.view(6), Ok(vec![(1, 1, 7)]), "the numbers still raised");
    // With nothing to raise, the write sends nothing.
    write(&b, 7, 200);
    assert_eq!(a.stored_next_offset(6), Ok(300));
    write(&a, 7, 301);
    assert_eq!(b.stored_next_offset(6), Ok(301), "a higher offset is taken");
    // A view of many workspaces (two transactions, the offset with the last) the same way.
    let values = (1..=100u64).map(|ws| SeqValue::new(ws, 2, ws)).collect();
    futures::executor::block_on(b.write(6, values, 10)).expect("write");
    assert_eq!(a.stored_next_offset(6), Ok(301));
    assert_eq!(a.read_numbers(6, 100, &[2]), Ok(vec![100]));
}

#[test]
fn a_write_of_many_workspaces_holding_old_rows_fits_the_clusters_operations() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let store = cluster.store(Duration::from_secs(5));
    let write = |n: u64, offset| {
        let values = (1..=127u64)
            .map(|ws| SeqValue::new(ws, 1, n + ws))
            .collect();
        futures::executor::block_on(store.write(3, values, offset)).expect("write")
    };
    write(0, 2);
    // Rows of the earlier layout under every workspace: a delete each beside its put.
    let (rt, mut client) = cluster.client();
    for ws in 1..=127u64 {
        let key = format!("seq/3/{ws:020}/{:05}", 2);
        rt.block_on(client.put(key, (7 + ws).to_be_bytes().to_vec(), None))
            .expect("put an old row");
    }
    write(500, 4);
    let view = store.view(3).expect("view");
    let expected: Vec<(u64, u16, u64)> = (1..=127u64)
        .flat_map(|ws| [(ws, 1, 500 + ws), (ws, 2, 7 + ws)])
        .collect();
    assert_eq!(view, expected, "the numbers raised, the old rows merged");
    let keys = rt
        .block_on(client.get("seq/3/", Some(etcd_client::GetOptions::new().with_prefix())))
        .expect("list the view");
    assert_eq!(
        keys.kvs().len(),
        127,
        "one key per workspace, the old rows gone"
    );
    assert_eq!(store.stored_next_offset(3), Ok(4));
}
