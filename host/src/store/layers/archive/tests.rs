//! The archive's parts together: passes, the line-up check and reads through `WithArchive`.

use std::path::Path;

use sequencer::SeqValue;

use super::*;
use crate::store::objects::bundle_object;
use crate::store::reader::StoreReader;
use crate::store::redb::storage::RedbStorage;
use crate::store::storage::{AppendError, EventBatch, PartitionId, Storage, StorageError};

#[test]
fn the_safe_end_stays_below_the_stored_offset_and_the_last_event_in_whole_bundles() {
    assert_eq!(safe_end(90, 100, 16), 80);
    assert_eq!(safe_end(200, 100, 16), 96);
    assert_eq!(safe_end(97, 200, 16), 96);
    assert_eq!(safe_end(96, 200, 16), 80);
    assert_eq!(safe_end(0, 100, 16), 0);
    assert_eq!(safe_end(16, 16, 16), 0);
}

/// A redb store whose partition 0 holds `events` events (workspace 1's sequence 1 going
/// 1, 2, 3, …) and stored next offset `stored`.
fn store(dir: &Path, events: u64, stored: u64) -> RedbStorage {
    let s = RedbStorage::create(&dir.join("store.redb")).expect("create");
    let mut batch = EventBatch::new(1);
    for o in 1..=events {
        batch.push(&[SeqValue::new(1, 1, o)], b"payload");
    }
    s.append_events(0, &batch).expect("append");
    futures::executor::block_on(s.write(0, vec![SeqValue::new(1, 1, stored - 1)], stored))
        .expect("write");
    s
}

#[test]
fn a_pass_archives_whole_bundles_trims_below_them_and_a_replay_from_one_reads_the_archive() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let hot = store(tmp.path(), 100, 90);
    let archive = Archive::create_or_open(&tmp.path().join("a"), 16).expect("archive");
    let pass = archive_pass(&hot, &archive, |_| {}).expect("pass");
    assert_eq!((pass.bundles, pass.archived, pass.trimmed), (5, 80, 80));
    assert_eq!(archive.end(0), 80);
    assert_eq!(hot.plog_bounds(0).expect("bounds"), Some((81, 100)));
    // Again: nothing more to do, nothing changes.
    let again = archive_pass(&hot, &archive, |_| {}).expect("pass");
    assert_eq!((again.bundles, again.trimmed), (0, 0));

    let both = WithArchive::new(hot.clone(), Some(archive.clone())).expect("lines up");
    assert_eq!(both.plog_bounds(0).expect("bounds"), Some((1, 100)));
    let page = futures::executor::block_on(both.read_plog(0, 1, 50)).expect("read");
    assert_eq!((page.next, page.end, page.values.len()), (51, false, 50));
    let page = futures::executor::block_on(both.read_plog(0, 70, 50)).expect("read");
    assert_eq!((page.values[0].0, page.next, page.end), (70, 81, false));
    let page = futures::executor::block_on(both.read_plog(0, 81, 50)).expect("read");
    assert_eq!((page.next, page.end), (101, true));
    let all = both.events(0, 1, 1000).expect("events");
    assert_eq!(all.len(), 80, "the archive's part, then the store's");
    // The fence still continues from the last event, which no trim removes.
    assert!(matches!(
        hot.append_events(0, &EventBatch::single(1, &[], b"")),
        Err(AppendError::WrongOffset { expected: 101, .. })
    ));
    assert_eq!(hot.trim(0, 1_000).expect("trim").first_kept, 90);
}

/// What another process does beside a reader: appends events 101..=140 to `hot`, flushes
/// them, then archives and trims.
fn grow_and_archive(hot: &RedbStorage, archive: &Archive) {
    let mut batch = EventBatch::new(101);
    for o in 101..=140 {
        batch.push(&[SeqValue::new(1, 1, o)], b"payload");
    }
    hot.append_events(0, &batch).expect("append");
    futures::executor::block_on(hot.write(0, vec![SeqValue::new(1, 1, 139)], 140)).expect("write");
    archive_pass(hot, archive, |_| {}).expect("pass");
}

#[test]
fn a_reader_whose_archive_grew_and_trimmed_since_it_opened_reads_the_events_between() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let hot = store(tmp.path(), 100, 90);
    let root = tmp.path().join("a");
    let archive = Archive::create_or_open(&root, 16).expect("archive");
    archive_pass(&hot, &archive, |_| {}).expect("pass");
    // A reader (a check) opens the archive as it is: it ends at 80.
    let reader =
        WithArchive::new(hot.clone(), Some(Archive::open(&root).expect("open"))).expect("lines up");
    // Another process appends, flushes, archives and trims meanwhile.
    grow_and_archive(&hot, &archive);
    let (hot_first, _) = hot.plog_bounds(0).expect("bounds").expect("a PLog");
    assert!(hot_first > 81, "trimmed past the reader's archive end");
    let events = reader.events(0, 81, 1000).expect("events");
    assert_eq!(events.first().map(|e| e.offset), Some(81), "no gap");
    let offsets: Vec<_> = events.iter().map(|e| e.offset).collect();
    assert!(offsets.windows(2).all(|w| w[1] == w[0] + 1), "{offsets:?}");
}

#[test]
fn an_archive_opened_before_another_process_archived_and_trimmed_still_lines_up() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let hot = store(tmp.path(), 100, 90);
    let root = tmp.path().join("a");
    let archive = Archive::create_or_open(&root, 16).expect("archive");
    archive_pass(&hot, &archive, |_| {}).expect("pass");
    // A run's final check opens the archive as it is (it ends at 80) ...
    let opened = Archive::open(&root).expect("open");
    // ... and before it reads the store, an archive pass beside it writes bundles and trims.
    grow_and_archive(&hot, &archive);
    assert!(hot.plog_bounds(0).expect("bounds").expect("a PLog").0 > 81);
    let both = WithArchive::new(hot.clone(), Some(opened)).expect("lines up");
    assert_eq!(both.plog_bounds(0).expect("bounds"), Some((1, 140)));
}

#[test]
fn an_archive_that_ends_before_the_store_begins_is_refused_naming_the_missing_bundle() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let hot = store(tmp.path(), 100, 90);
    hot.trim(0, 33).expect("trim without archiving");
    let archive = Archive::create_or_open(&tmp.path().join("a"), 16).expect("archive");
    let e = archive_pass(&hot, &archive, |_| {}).expect_err("a gap");
    let text = e.to_string();
    assert!(text.contains("offsets 1..=32 are in neither"), "{text}");
    assert!(text.contains(&bundle_object(0, 1, 16)), "{text}");
    assert!(WithArchive::new(hot, Some(archive)).is_err());
}

/// A store read while an archive pass runs beside the reader: its `trim_at`-th read of events
/// first trims everything below `below`, as a pass that archived those events would, between
/// the reader's look at the bounds and its read.
struct TrimmedWhileRead {
    hot: RedbStorage,
    reads: std::cell::Cell<usize>,
    trim_at: usize,
    below: u64,
}

impl StoreReader for TrimmedWhileRead {
    fn describe(&self) -> String {
        self.hot.describe()
    }
    fn partitions(&self) -> Result<Vec<PartitionId>, StorageError> {
        self.hot.partitions()
    }
    fn plog_bounds(&self, p: PartitionId) -> Result<Option<(u64, u64)>, StorageError> {
        self.hot.plog_bounds(p)
    }
    fn events(
        &self, p: PartitionId, from: u64, max: usize,
    ) -> Result<Vec<crate::store::codec::StoredEvent>, StorageError> {
        self.reads.set(self.reads.get() + 1);
        if self.reads.get() == self.trim_at {
            self.hot.trim(p, self.below).expect("trim");
        }
        self.hot.events(p, from, max)
    }
    fn stored_next_offset(&self, p: PartitionId) -> Result<u64, StorageError> {
        self.hot.stored_next_offset(p)
    }
    fn view(
        &self, p: PartitionId,
    ) -> Result<Vec<(sequencer::WsId, sequencer::SeqId, sequencer::Number)>, StorageError> {
        self.hot.view(p)
    }
}

/// An archive of events 1..=80 and a store that still holds all of 1..=100, the same events:
/// a pass that wrote its bundles and has not trimmed yet.
fn archived_not_yet_trimmed(dir: &Path, trim_at: usize) -> (TrimmedWhileRead, Archive) {
    for d in ["archived", "hot"] {
        std::fs::create_dir(dir.join(d)).expect("dir");
    }
    let archived = store(&dir.join("archived"), 100, 90);
    let archive = Archive::create_or_open(&dir.join("a"), 16).expect("archive");
    archive_pass(&archived, &archive, |_| {}).expect("pass");
    assert_eq!(archive.end(0), 80);
    let hot = TrimmedWhileRead {
        hot: store(&dir.join("hot"), 100, 90),
        reads: Default::default(),
        trim_at,
        below: 81,
    };
    (hot, archive)
}

#[test]
fn the_line_up_check_reads_the_bounds_again_when_a_pass_beside_it_trims_the_event_it_compares() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (hot, archive) = archived_not_yet_trimmed(tmp.path(), 1);
    check_lines_up(&hot, &archive).expect("lines up after the trim beside it");
    assert_eq!(
        hot.reads.get(),
        1,
        "the trim happened under the check's one read"
    );
    assert_eq!(hot.hot.plog_bounds(0).expect("bounds"), Some((81, 100)));
}

#[test]
fn a_read_through_the_archive_compares_only_offsets_the_store_still_holds_after_a_trim_beside_it() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // The line-up check reads once; the second read is the one below.
    let (hot, archive) = archived_not_yet_trimmed(tmp.path(), 2);
    let both = WithArchive::new(hot, Some(archive)).expect("lines up");
    let events = both
        .events(0, 1, 1000)
        .expect("events despite the trim beside the read");
    let offsets: Vec<_> = events.iter().map(|e| e.offset).collect();
    assert_eq!(offsets, (1..=80).collect::<Vec<_>>());
    assert_eq!(
        both.hot().reads.get(),
        2,
        "the trim happened under the read"
    );
}
