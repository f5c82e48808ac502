//! The object PLog's event objects of several events (format 2): one object per append part,
//! named by its first offset and created only if absent. The fence with such objects (a stale
//! writer whose tail is old), a crash between two parts of one batch (a dense prefix remains),
//! a lost answer retried (its own object recognised), a store of one-event objects (format 1)
//! read and continued, the merger over objects of both kinds, and the delete delay on a shared
//! store (an append skips its look for a bundle only when no merger can have deleted its name,
//! however late its create lands), and a retried append whose lost objects another host merged
//! and continued from (what continues the PLog is never taken back). The race of two writers on one name and
//! the kill tests are in `objects.rs` and `s3.rs`.

#![cfg(feature = "objects")]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::faulty_objects::{FaultyObjects, PutFault};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use sequencer::SeqValue;
use sequencer_host::store::codec::encode_event;
use sequencer_host::store::objects::{
    Access, ObjectFormat, ObjectPlog, PlogOptions, bundle_object, event_object,
};
use sequencer_host::{AppendError, EventBatch};

fn batch(first: u64, n: u64, tag: u8) -> EventBatch {
    let mut b = EventBatch::new(first);
    for o in first..first + n {
        b.push(&[SeqValue::new(1, 1, o)], &[tag; 16]);
    }
    b
}

fn event(offset: u64, tag: u8) -> Vec<u8> {
    encode_event(offset, &[SeqValue::new(1, 1, offset)], &[tag; 16])
}

fn open(store: &Arc<FaultyObjects>, bundle: u64) -> ObjectPlog {
    ObjectPlog::open(store.clone(), None, bundle, Access::Write).expect("open")
}

fn reader(store: &Arc<FaultyObjects>, bundle: u64) -> ObjectPlog {
    ObjectPlog::open(store.clone(), None, bundle, Access::ReadOnly).expect("open to read")
}

fn exists(store: &FaultyObjects, name: &str) -> bool {
    futures::executor::block_on(store.inner().head(&Path::from(name))).is_ok()
}

/// The events `offsets` of the PLog hold the tags given, in order.
fn holds(plog: &ObjectPlog, from: u64, tags: &[u8]) {
    let events = plog.read(0, from, 10_000).expect("read");
    assert_eq!(
        events.len(),
        tags.len(),
        "{:?}",
        events.iter().map(|e| e.0).collect::<Vec<_>>()
    );
    for ((o, bytes), (expected, tag)) in events.iter().zip((from..).zip(tags)) {
        assert_eq!(*o, expected);
        assert_eq!(*bytes, event(*o, *tag), "offset {o}");
    }
}

#[test]
fn an_object_every_listing_misses_before_later_ones_is_read_by_name_not_taken_for_a_hole() {
    let store = Arc::new(FaultyObjects::default());
    let a = open(&store, 1_000);
    for first in [1, 4, 7] {
        a.append(0, &batch(first, 3, 1)).expect("append");
    }
    // Other hosts list while the owner appends: each listing sees 7 and misses 4.
    store.hide_in_listings("events/00000/00000000000000000004", u32::MAX);
    let b = reader(&store, 1_000);
    holds(&b, 1, &[1; 9]);
    let c = open(&store, 1_000);
    c.append(0, &batch(10, 1, 1))
        .expect("a writer appends after the tail it read");
    // A hole that stays is reported, naming the objects after it.
    futures::executor::block_on(
        store
            .inner()
            .delete(&Path::from("events/00000/00000000000000000004")),
    )
    .expect("delete");
    let Err(e) = ObjectPlog::open(store.clone(), None, 1_000, Access::ReadOnly) else {
        panic!("a PLog with a hole opened");
    };
    assert!(e.0.contains("hole at offset 4"), "{}", e.0);
}

#[test]
fn a_stale_writer_whose_tail_is_old_is_refused_and_names_no_offset_inside_another_object() {
    let store = Arc::new(FaultyObjects::default());
    let a = open(&store, 1_000);
    a.append(0, &batch(1, 3, 1)).expect("1..=3");
    // The stale writer read the same tail: it believes the PLog ends at 3.
    let stale = open(&store, 1_000);
    a.append(0, &batch(4, 3, 1)).expect("4..=6");
    a.append(0, &batch(7, 3, 1)).expect("7..=9");
    // Its create of 4 collides with the object the other writer created there: refused, with
    // the PLog's real end (it rescanned).
    let refused = stale.append(0, &batch(4, 5, 2));
    assert!(
        matches!(
            refused,
            Err(AppendError::WrongOffset {
                expected: 10,
                offered: 4
            })
        ),
        "{refused:?}"
    );
    // An offset inside another's object is never a name: a writer that offers it rescans and
    // is refused before it creates anything.
    let inside = stale.append(0, &batch(5, 2, 2));
    assert!(
        matches!(
            inside,
            Err(AppendError::WrongOffset {
                expected: 10,
                offered: 5
            })
        ),
        "{inside:?}"
    );
    assert!(!exists(&store, &event_object(0, 5)));
    assert_eq!(stale.stats().fenced.load(Ordering::Relaxed), 2);
    // It goes on from the end it learned.
    stale.append(0, &batch(10, 2, 2)).expect("10..=11");
    holds(
        &reader(&store, 1_000),
        1,
        &[1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2],
    );
    assert_eq!(a.stats().objects_written.load(Ordering::Relaxed), 3);
}

#[test]
fn a_crash_after_one_parts_put_and_before_the_next_leaves_a_dense_prefix_of_the_batch() {
    let store = Arc::new(FaultyObjects::default());
    let a = open(&store, 8);
    a.append(0, &batch(1, 4, 1)).expect("1..=4");
    // A batch of 5..=12 crosses the bundle boundary at 8: two parts, 5..=8 and 9..=12. The
    // writer stops after the first part's put and before the second's lands.
    store.on_put(event_object(0, 9), PutFault::NeverLands);
    let failed = a.append(0, &batch(5, 8, 2));
    assert!(matches!(failed, Err(AppendError::Storage(_))), "{failed:?}");
    drop(a);
    // A new writer (the process restarted) finds the first part and nothing after it.
    let b = open(&store, 8);
    assert_eq!(b.bounds(0).0, 9);
    holds(&b, 1, &[1, 1, 1, 1, 2, 2, 2, 2]);
    assert!(!exists(&store, &event_object(0, 9)));
    // The numbers of the events after the prefix are handed out again: the PLog goes on.
    b.append(0, &batch(9, 4, 3)).expect("9..=12 again");
    holds(&reader(&store, 8), 1, &[1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
}

#[test]
fn a_lost_answer_retried_finds_its_own_object_and_another_writer_of_that_name_loses() {
    let store = Arc::new(FaultyObjects::default());
    let other = open(&store, 1_000); // believes the PLog is empty
    let a = open(&store, 1_000);
    // The object of 1..=3 lands, its answer is lost: the append fails, unacknowledged.
    store.on_put(event_object(0, 1), PutFault::AnswerLost);
    let first = a.append(0, &batch(1, 3, 1));
    assert!(matches!(first, Err(AppendError::Storage(_))), "{first:?}");
    // Retried with the same batch: the name is taken by the same bytes (its own writer id),
    // so the create counts as its own and the append is acknowledged.
    a.append(0, &batch(1, 3, 1)).expect("the retried append");
    assert_eq!(a.stats().own_retries.load(Ordering::Relaxed), 1);
    // Another writer's create of that name finds other bytes: a lost race.
    let refused = other.append(0, &batch(1, 3, 1));
    assert!(
        matches!(
            refused,
            Err(AppendError::WrongOffset {
                expected: 4,
                offered: 1
            })
        ),
        "{refused:?}"
    );
    assert_eq!(other.stats().own_retries.load(Ordering::Relaxed), 0);
    holds(&reader(&store, 1_000), 1, &[1, 1, 1]);
}

#[test]
fn a_store_of_one_event_objects_is_read_and_continued_and_the_merger_bundles_both_kinds() {
    let store = Arc::new(FaultyObjects::default());
    // Written as older versions wrote it: one object per event (format 1).
    let options = PlogOptions {
        format: ObjectFormat::OneEvent,
        ..PlogOptions::new(8, Access::Write)
    };
    let old = ObjectPlog::open_with(store.clone(), None, options).expect("open in format 1");
    old.append(0, &batch(1, 3, 1)).expect("1..=3");
    old.append(0, &batch(4, 2, 1)).expect("4..=5");
    assert_eq!(old.stats().objects_written.load(Ordering::Relaxed), 5);
    drop(old);
    // Continued in the current format: 6..=8 one object, 9..=12 another.
    let new = ObjectPlog::open(store.clone(), None, 8, Access::Write).expect("open");
    assert_eq!(new.bounds(0), (6, 0));
    holds(&new, 1, &[1; 5]);
    new.append(0, &batch(6, 7, 2)).expect("6..=12");
    assert_eq!(new.stats().objects_written.load(Ordering::Relaxed), 2);
    holds(&new, 3, &[1, 1, 1, 2, 2, 2, 2, 2, 2, 2]);
    // The merger bundles 1..=8 from five one-event objects and one of three events, and
    // deletes them all; 9..=12 stays an object.
    new.merge_now().expect("merge");
    assert_eq!(new.bounds(0), (13, 8));
    for o in 1..=8 {
        assert!(!exists(&store, &event_object(0, o)), "object {o}");
    }
    assert!(exists(&store, &event_object(0, 9)));
    let fresh = reader(&store, 8);
    assert_eq!(fresh.bounds(0), (13, 8));
    holds(&fresh, 1, &[1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2]);
    // A read from inside an object starts there.
    holds(&fresh, 10, &[2, 2, 2]);
}

#[test]
fn a_merge_the_store_failed_is_tried_again_and_only_a_broken_range_stops_merging() {
    let store = Arc::new(FaultyObjects::default());
    store.refuse_bundles.store(true, Ordering::SeqCst);
    let plog = open(&store, 4);
    plog.append(0, &batch(1, 9, 1)).expect("1..=9");
    // The store fails the bundle: the merge fails with its error, and the partition's
    // merging has not stopped (no merge error, the two bundles still owed).
    let refused = plog.merge_now().expect_err("the store refuses bundles");
    assert!(refused.0.contains("refuses bundles"), "{refused}");
    assert_eq!(plog.merge_error(), None);
    assert_eq!(plog.merge_backlog(), 2);
    // The merger thread meets the same refusal for a while, and keeps trying.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(plog.stats().bundles_written.load(Ordering::Relaxed), 0);
    assert_eq!(plog.merge_error(), None);
    // Once the store takes bundles again, the merger writes them without being asked.
    store.refuse_bundles.store(false, Ordering::SeqCst);
    let waited = std::time::Instant::now();
    while plog.stats().bundles_written.load(Ordering::Relaxed) < 2 {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the merger did not try again"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(plog.bounds(0), (10, 8));
    assert_eq!(plog.merge_error(), None);
    holds(&reader(&store, 4), 1, &[1; 9]);
    // A broken range does stop it: another bundle of 9..=12 than its events make (put
    // while the store refuses this handle's bundles, so that its merger cannot be first).
    store.refuse_bundles.store(true, Ordering::SeqCst);
    plog.append(0, &batch(10, 3, 2)).expect("10..=12");
    futures::executor::block_on(store.inner().put(
        &Path::from(bundle_object(0, 9, 12)),
        PutPayload::from_static(b"other events"),
    ))
    .expect("put");
    store.refuse_bundles.store(false, Ordering::SeqCst);
    let waited = std::time::Instant::now();
    let stopped = loop {
        // The merger thread or this call, whichever comes first.
        let _ = plog.merge_now();
        if let Some(e) = plog.merge_error() {
            break e;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "merging went on"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(stopped.contains("two different objects"), "{stopped}");
    assert_eq!(plog.merge_backlog(), 0);
    assert_eq!(plog.bounds(0), (13, 8));
}

/// A writer of PLogs on `store` in bundles of 4 whose merger deletes merged objects `delay`
/// after their bundle, as on S3.
fn open_delayed(store: &Arc<FaultyObjects>, delay: Duration) -> ObjectPlog {
    let options = PlogOptions {
        delete_delay: delay,
        ..PlogOptions::new(4, Access::Write)
    };
    ObjectPlog::open_with(store.clone(), None, options).expect("open")
}

/// `a`, whose PLog ends at 2, appends 3..=20 in batches of 2 and merges them (bundles 1..=20).
fn append_to_20_and_merge(a: &ObjectPlog) {
    for first in (3..=19).step_by(2) {
        a.append(0, &batch(first, 2, 1)).expect("append");
    }
    a.merge_now().expect("merge");
    assert_eq!(a.bounds(0), (21, 20));
}

/// A stale writer's append of 3..=4 to the PLog of 20 events is refused.
fn stale_refused_at_3(stale: &ObjectPlog, why: &str) {
    let refused = stale.append(0, &batch(3, 2, 2));
    assert!(
        matches!(
            refused,
            Err(AppendError::WrongOffset {
                expected: 21,
                offered: 3
            })
        ),
        "{why}: {refused:?}"
    );
}

#[test]
fn appends_within_the_delete_delay_skip_the_bundle_check_and_a_writer_past_it_is_refused() {
    let store = Arc::new(FaultyObjects::default());
    let delay = Duration::from_secs(1);
    let a = open_delayed(&store, delay);
    // A new partition's tail was never seen: the first append looks for a bundle.
    a.append(0, &batch(1, 2, 1)).expect("1..=2");
    assert_eq!(store.heads.load(Ordering::SeqCst), 1);
    // Two writers that saw the tail 1..=2 and will be stale.
    let (early, late) = (open_delayed(&store, delay), open_delayed(&store, delay));
    // Appends right after the one before: no look for a bundle (no merger deletes a name
    // within the delay of its bundle, and the tail was seen well within it).
    append_to_20_and_merge(&a);
    assert_eq!(store.heads.load(Ordering::SeqCst), 1);
    // Merged objects stay for the delay: a stale writer within it collides with them.
    assert!(exists(&store, &event_object(0, 3)));
    stale_refused_at_3(&early, "within the delay");
    // Past the delay they are gone; a writer whose view of the tail is older than half of it
    // re-creates the name, looks for a bundle, finds it, takes its object back and is refused.
    std::thread::sleep(delay * 5 / 2);
    assert!(
        !exists(&store, &event_object(0, 3)),
        "deleted after the delay"
    );
    stale_refused_at_3(&late, "past the delay");
    assert!(!exists(&store, &event_object(0, 3)), "taken back");
    assert_eq!(store.heads.load(Ordering::SeqCst), 2);
    holds(&reader(&store, 4), 1, &[1; 20]);
}

#[test]
fn a_create_sent_within_the_delete_delay_that_lands_after_it_still_looks_for_a_bundle() {
    let store = Arc::new(FaultyObjects::default());
    let delay = Duration::from_secs(1);
    let a = open_delayed(&store, delay);
    a.append(0, &batch(1, 2, 1)).expect("1..=2");
    // A writer that saw the tail 1..=2 and will be stale.
    let seen = std::time::Instant::now();
    let stale = open_delayed(&store, delay);
    append_to_20_and_merge(&a);
    // The stale writer's create of 3 is sent well within half the delay of its look at the
    // tail, and lands only after the merger deleted the name (the delay after its bundle):
    // sent fresh, it is not fresh when it lands, so the append must still look for the bundle.
    store.on_put(event_object(0, 3), PutFault::LandsOnceFree);
    assert!(seen.elapsed() < delay / 4, "sent within the delay");
    stale_refused_at_3(&stale, "an append the PLog does not hold was acknowledged");
    assert!(!exists(&store, &event_object(0, 3)), "taken back");
    holds(&reader(&store, 4), 1, &[1; 20]);
}

#[test]
fn objects_a_writer_left_under_its_bundles_when_it_stopped_are_swept_by_the_next_writer() {
    let store = Arc::new(FaultyObjects::default());
    let delay = Duration::from_secs(3);
    let a = open_delayed(&store, delay);
    a.append(0, &batch(1, 2, 1)).expect("1..=2");
    append_to_20_and_merge(&a);
    // Its queue of deletes goes with it (a host killed within the delay of its merges).
    drop(a);
    assert!(
        exists(&store, &event_object(0, 1)),
        "left under the bundles"
    );
    assert!(
        exists(&store, &event_object(0, 19)),
        "left under the bundles"
    );
    std::thread::sleep(delay);
    // The next writer's scan lists from the bundles' end on; its merger's sweep (a third of
    // the delay after it meets the partition) finds the objects under bundles older than the
    // delay by the store's clock, and deletes them at once: well before the delay has passed
    // again, which is when a queue of deletes made at the open would let them go.
    let b = open_delayed(&store, delay);
    let opened = std::time::Instant::now();
    assert_eq!(b.bounds(0), (21, 20));
    b.append(0, &batch(21, 2, 3)).expect("21..=22");
    while (1..=19)
        .step_by(2)
        .any(|o| exists(&store, &event_object(0, o)))
    {
        assert!(opened.elapsed() < delay * 5 / 6, "not swept at once");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(exists(&store, &event_object(0, 21)), "the tail stays");
    let mut tags = vec![1; 20];
    tags.extend([3, 3]);
    holds(&reader(&store, 4), 1, &tags);
    holds(&b, 1, &tags);
}

#[test]
fn a_fresh_writer_collides_with_a_retried_append_that_another_host_merged() {
    let store = Arc::new(FaultyObjects::default());
    let delay = Duration::from_secs(2);
    let y = open_delayed(&store, delay);
    y.append(0, &batch(1, 2, 1)).expect("1..=2");
    // W saw the tail 1..=2 and will append there well within half the delay.
    let w = open_delayed(&store, delay);
    // Y's object 3..=4 lands and its answer is lost: Y does not know it appended.
    store.on_put(event_object(0, 3), PutFault::AnswerLost);
    let lost = y.append(0, &batch(3, 2, 2));
    assert!(matches!(lost, Err(AppendError::Storage(_))), "{lost:?}");
    // Another writer continues after it, and merges 1..=20: Y's events are in bundle 1..=4.
    let x = open_delayed(&store, delay);
    assert_eq!(x.bounds(0).0, 5);
    for first in (5..=19).step_by(2) {
        x.append(0, &batch(first, 2, 1)).expect("append");
    }
    x.merge_now().expect("merge");
    // Y retries: its create finds its own bytes and its look the bundle over them, which
    // holds its very events. Refused (the replay that follows finds them), its object is a
    // leftover under the bundle, deleted after the delay as a merge's.
    stale_refused_at_3(&y, "Y's retry");
    assert!(exists(&store, &event_object(0, 3)), "kept for the delay");
    // W's create, sent fresh, collides with it: deleted at once, the name would have been free
    // within the delay, and W's append would have landed there unseen, skipping its look.
    stale_refused_at_3(&w, "W's append over bundled offsets was acknowledged");
    holds(
        &reader(&store, 4),
        1,
        &[1, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    );
}

#[test]
fn a_retried_append_that_another_host_merged_and_continued_from_is_not_taken_back() {
    let store = Arc::new(FaultyObjects::default());
    let y = open(&store, 4);
    y.append(0, &batch(1, 2, 1)).expect("1..=2");
    // Y's object 3..=4 lands; its answer is lost.
    store.on_put(event_object(0, 3), PutFault::AnswerLost);
    let lost = y.append(0, &batch(3, 2, 2));
    assert!(matches!(lost, Err(AppendError::Storage(_))), "{lost:?}");
    // Another host reads the PLog to 4 and merges 1..=4 (deleting its objects).
    let x = open(&store, 4);
    x.merge_now().expect("merge");
    assert_eq!(x.bounds(0), (5, 4));
    // Y retries with 3..=6: it re-creates 3..=4 (the bytes the bundle holds) and creates
    // 5..=6. While it looks for a bundle, the other host continues after 5..=6 (with one
    // event: a range left incomplete, so that no merger bundles 5..=8 meanwhile).
    let other = x.clone();
    store.on_head(move || {
        let refused = other.append(0, &batch(5, 2, 3));
        assert!(
            matches!(refused, Err(AppendError::WrongOffset { expected: 7, .. })),
            "{refused:?}"
        );
        other
            .append(0, &batch(7, 1, 3))
            .expect("7, after Y's 5..=6");
    });
    // The bundle over 3..=4 holds Y's very events, so 5..=6 continues the PLog: Y is refused
    // (its replay finds its events) and keeps 5..=6. Taking it back would leave a hole under
    // the other host's acknowledged 7.
    let retried = y.append(0, &batch(3, 4, 2));
    assert!(
        matches!(
            retried,
            Err(AppendError::WrongOffset {
                expected: 8,
                offered: 3
            })
        ),
        "{retried:?}"
    );
    holds(&reader(&store, 4), 1, &[1, 1, 2, 2, 2, 2, 3]);
}

#[test]
fn partitions_append_in_parallel_without_waiting_for_each_others_requests() {
    let store = Arc::new(FaultyObjects::default());
    let plog = open(&store, 1_000);
    store.slow.store(true, Ordering::SeqCst);
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for p in 0..8 {
            let plog = plog.clone();
            s.spawn(move || {
                let mut b = EventBatch::new(1);
                for o in 1..=64 {
                    b.push(&[SeqValue::new(1, 1, o)], &[p as u8; 16]);
                }
                plog.append(p, &b).expect("append");
            });
        }
    });
    // Eight appends of one object each, one put of 100 ms apiece: 0.8 s one after the other.
    let took = started.elapsed();
    assert!(took < Duration::from_millis(500), "{took:?}");
    for p in 0..8 {
        assert_eq!(plog.bounds(p).0, 65, "partition {p}");
    }
}

/// The names of partition 0's event objects, as listed.
fn event_names(store: &FaultyObjects) -> Vec<String> {
    let listed = futures::executor::block_on(
        store
            .inner()
            .list_with_delimiter(Some(&Path::from("events/00000"))),
    )
    .expect("list");
    let mut names: Vec<String> = (listed.objects.iter())
        .filter_map(|m| m.location.filename().map(str::to_string))
        .collect();
    names.sort();
    names
}

fn refused_for_epoch(appended: Result<(), AppendError>, mine: u64, successor: u64) {
    match appended {
        Err(AppendError::NotOwner { epoch, why, .. }) => {
            assert_eq!(epoch, mine);
            assert!(why.contains(&format!("epoch {successor}")), "{why}");
        }
        other => panic!("a stale owner's append at epoch {mine}: {other:?}"),
    }
}

#[test]
fn a_takeover_mark_refuses_a_stale_owner_at_the_free_offset_and_its_successor_appends_after_it() {
    let store = Arc::new(FaultyObjects::default());
    let a = open(&store, 1_000);
    a.append_under(0, &batch(1, 3, 1), Some(1)).expect("1..=3");
    let early = reader(&store, 1_000);
    // The successor acquires the partition at epoch 2 before the stale owner's next append:
    // nothing but its mark holds offset 4 yet.
    let b = open(&store, 1_000);
    b.place_mark(0, 2).expect("mark");
    assert_eq!(b.stats().marks.load(Ordering::Relaxed), 1);
    refused_for_epoch(a.append_under(0, &batch(4, 2, 9), Some(1)), 1, 2);
    b.append_under(0, &batch(4, 2, 2), Some(2)).expect("4..=5");
    assert_eq!(
        event_names(&store),
        [
            "00000000000000000001",
            "00000000000000000004",
            "00000000000000000004_00000000000000000002",
        ]
    );
    // Two acquisitions with no append between them: each mark names the next.
    let c = open(&store, 1_000);
    c.place_mark(0, 3).expect("mark of epoch 3");
    let d = open(&store, 1_000);
    d.place_mark(0, 4).expect("mark of epoch 4");
    refused_for_epoch(c.append_under(0, &batch(6, 1, 9), Some(3)), 3, 4);
    refused_for_epoch(b.append_under(0, &batch(6, 1, 9), Some(2)), 2, 4);
    d.append_under(0, &batch(6, 2, 4), Some(4)).expect("6..=7");
    assert!(event_names(&store).contains(&"00000000000000000006_00000000000000000004".into()));
    // A successor's mark on its own tail writes nothing; a stale one's is refused.
    d.place_mark(0, 4).expect("its own tail");
    assert_eq!(d.stats().marks.load(Ordering::Relaxed), 1);
    assert!(matches!(
        a.place_mark(0, 1),
        Err(AppendError::NotOwner { .. })
    ));
    // Readers and a new writer's scan see the events, dense, and no mark.
    holds(&reader(&store, 1_000), 1, &[1, 1, 1, 2, 2, 4, 4]);
    let e = open(&store, 1_000);
    assert_eq!(e.bounds(0), (8, 0));
    holds(&e, 4, &[2, 2, 4, 4]);
    // A reader that knew the tail before the marks finds the events after them.
    assert_eq!(early.end_from(0, 4).expect("end"), 8);
    holds(&early, 1, &[1, 1, 1, 2, 2, 4, 4]);
}

#[test]
fn the_merger_bundles_events_across_takeover_marks_and_deletes_the_marks_with_them() {
    let store = Arc::new(FaultyObjects::default());
    let a = open(&store, 4);
    a.append_under(0, &batch(1, 2, 1), Some(1)).expect("1..=2");
    let b = open(&store, 4);
    b.place_mark(0, 2).expect("mark at 3");
    b.append_under(0, &batch(3, 3, 2), Some(2)).expect("3..=5");
    let c = open(&store, 4);
    c.place_mark(0, 3).expect("mark at 6");
    c.append_under(0, &batch(6, 3, 3), Some(3)).expect("6..=8");
    // The merger threads may bundle some first: both bundles are there either way.
    c.merge_now().expect("merge");
    let c = open(&store, 4);
    assert_eq!(c.bounds(0), (9, 8));
    assert!(exists(&store, &bundle_object(0, 1, 4)));
    assert!(exists(&store, &bundle_object(0, 5, 8)));
    assert_eq!(event_names(&store), Vec::<String>::new());
    holds(&reader(&store, 4), 1, &[1, 1, 2, 2, 2, 3, 3, 3]);
}
