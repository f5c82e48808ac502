//! The checks, one per promise, each on a fresh store and named after the promise it proves.

use sequencer::{PLogOffset, SeqValue};

use crate::store::codec::{Checksum, StoredEvent};
use crate::store::reader::StoreReader;
use crate::store::storage::{AppendError, EventBatch, PartitionId, PlogPage, Storage};
use crate::store::testing::expect::{
    Doing, Held, Seen, append_batch, append_one, ensure, page_values, payload, read_all,
    reader_events, same, same_events, same_values, stored, values, wait,
};
use crate::store::testing::maker::StoreMaker;

/// How a check ended when nothing broke.
pub(super) enum Ran {
    /// The promise was checked and held.
    Kept,
    /// The promise could not be checked on this maker's stores; why.
    Skipped(&'static str),
}

/// One check: the promise, and the function that proves it on a fresh store.
pub(super) struct Check<M: StoreMaker> {
    pub(super) promise: &'static str,
    pub(super) run: fn(&mut M, M::Store) -> Result<Ran, Seen>,
}

/// Lists the checks once: the promises in order ([`PROMISES`]) and the checks ([`all`]).
macro_rules! suite {
    ($($promise:literal => $check:ident,)*) => {
        /// Every promise checked, in order.
        pub(super) const PROMISES: &[&str] = &[$($promise),*];

        /// Every check, in the order of [`PROMISES`].
        pub(super) fn all<M: StoreMaker>() -> Vec<Check<M>> {
            vec![$(Check { promise: $promise, run: $check::<M> }),*]
        }
    };
}

suite! {
    "a fresh store reads offset 0, numbers 0 and an empty PLog" =>
        a_fresh_store_reads_offset_0_numbers_0_and_an_empty_plog,
    "the reader of a fresh store finds nothing" => the_reader_of_a_fresh_store_finds_nothing,
    "a write stores values and the offset, and a later read sees them" =>
        a_write_stores_values_and_the_offset_and_a_later_read_sees_them,
    "one partition's writes apply in the order begun (one at a time, beside other partitions')" =>
        one_partitions_writes_apply_in_the_order_begun,
    "partitions are independent" => partitions_are_independent,
    "append_event accepts only the PLog's next offset, and a refusal writes nothing" =>
        append_event_accepts_only_the_next_offset_and_a_refusal_writes_nothing,
    "append_events writes a batch dense at the PLog's next offset only" =>
        append_events_writes_a_batch_dense_at_the_next_offset_only,
    "a batch larger than one write (append_limits) is appended whole, in order" =>
        a_batch_larger_than_one_write_is_appended_whole_in_order,
    "a refused part of a batch leaves a dense prefix of it" =>
        a_refused_part_leaves_a_dense_prefix_of_its_batch,
    "read_plog pages from anywhere, in offset order, and says where the PLog ends" =>
        read_plog_pages_from_anywhere_in_offset_order,
    "read_numbers_many agrees with read_numbers" => read_numbers_many_agrees_with_read_numbers,
    "payloads survive as appended (through the reader)" => payloads_survive_as_appended,
    "the reader agrees with what was written" => the_reader_agrees_with_what_was_written,
    "everything survives closing and reopening the store (durable stores)" =>
        everything_survives_closing_and_reopening,
    "failure() is None on a healthy store" => failure_is_none_on_a_healthy_store,
}

const NO_READER: &str = "its StoreMaker gives no reader";
const NOT_DURABLE: &str = "its StoreMaker reopens no store: it keeps nothing once closed";
const NO_BYTE_LIMIT: &str =
    "append_limits() has no byte limit of 64 MiB or less, so no part is refused without a fault";

/// The largest byte limit the refused-part check builds an event over.
const REFUSED_PART_MAX_BYTES: usize = 64 * 1024 * 1024;
/// The largest byte limit the limits check fills several writes of.
const SPLIT_BY_BYTES_MAX: usize = 8 * 1024 * 1024;
/// The largest event limit the limits check writes twice and one more events of.
const SPLIT_BY_EVENTS_MAX: usize = 1024;

/// The maker's reader of `store`, opened (`None`: it gives none).
fn open_reader<'s, M: StoreMaker>(
    maker: &'s M, store: &'s M::Store,
) -> Result<Option<Box<dyn StoreReader + 's>>, Seen> {
    maker
        .reader(store)
        .transpose()
        .doing("opening the maker's reader")
}

/// The empty page a read at or past the PLog's end returns.
fn empty_page(from: PLogOffset) -> PlogPage {
    PlogPage {
        values: Vec::new(),
        next: from,
        end: true,
    }
}

/// A write of `values` and `offset` to `partition`, waited for.
fn write<S: Storage>(
    s: &S, partition: PartitionId, values: Vec<SeqValue>, offset: PLogOffset,
) -> Held {
    let what = match values.len() {
        0..=4 => format!("write(partition {partition}, {values:?}, offset {offset})"),
        n => format!("write(partition {partition}, {n} values, offset {offset})"),
    };
    wait(s.write(partition, values, offset), what)
}

/// `read_numbers` of one workspace is `expected`.
fn numbers_are<S: Storage>(
    s: &S, partition: PartitionId, ws: u64, seqs: &[u16], expected: Vec<u64>, when: &str,
) -> Held {
    let what = format!("read_numbers(partition {partition}, workspace {ws}, {seqs:?}) {when}");
    let seen = s.read_numbers(partition, ws, seqs).doing(&what)?;
    same(what, seen, expected)
}

/// The stored offset `read_next_offset` returns is `expected`.
fn offset_is<S: Storage>(s: &S, partition: PartitionId, expected: PLogOffset, when: &str) -> Held {
    let what = format!("read_next_offset(partition {partition}) {when}");
    let seen = wait(s.read_next_offset(partition), &what)?;
    same(what, seen, expected)
}

/// The whole PLog of `partition`, read with `read_plog`, holds the checks' events `offsets`.
fn plog_holds<S: Storage>(
    s: &S, partition: PartitionId, offsets: impl IntoIterator<Item = PLogOffset>, when: &str,
) -> Held {
    let seen = read_all(s, partition, 1, 64)?;
    same_values(
        format_args!("the PLog of partition {partition} read with read_plog {when}"),
        &seen,
        &page_values(partition, offsets),
    )
}

/// An append the fence must refuse, with `expected` as the PLog's next offset.
fn refused(
    result: Result<(), AppendError>, what: &str, expected: PLogOffset, offered: PLogOffset,
) -> Held {
    same(
        what,
        result,
        Err(AppendError::WrongOffset { expected, offered }),
    )
}

fn a_fresh_store_reads_offset_0_numbers_0_and_an_empty_plog<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    for p in [0, 1, 10] {
        offset_is(&s, p, 0, "of a fresh store")?;
        numbers_are(&s, p, 1, &[1, 2], vec![0, 0], "of a fresh store")?;
        let what = format!("read_numbers_many(partition {p}, [1, 2], [1]) of a fresh store");
        let seen = s.read_numbers_many(p, &[1, 2], &[1]).doing(&what)?;
        same(what, seen, vec![0, 0])?;
        let what = format!("read_plog(partition {p}, from 1, max 16) of a fresh store");
        let page = wait(s.read_plog(p, 1, 16), &what)?;
        same(what, page, empty_page(1))?;
    }
    Ok(Ran::Kept)
}

fn the_reader_of_a_fresh_store_finds_nothing<M: StoreMaker>(
    maker: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    let Some(reader) = open_reader(maker, &s)? else {
        return Ok(Ran::Skipped(NO_READER));
    };
    let seen = reader.partitions().doing("the reader's partitions()")?;
    same("the reader's partitions() of a fresh store", seen, vec![])?;
    for p in [0, 1] {
        let what = format!("the reader's plog_bounds(partition {p}) of a fresh store");
        same(&what, reader.plog_bounds(p).doing(&what)?, None)?;
        let what = format!("the reader's events(partition {p}, from 1, max 16) of a fresh store");
        same(&what, reader.events(p, 1, 16).doing(&what)?, vec![])?;
        let what = format!("the reader's stored_next_offset(partition {p}) of a fresh store");
        same(&what, reader.stored_next_offset(p).doing(&what)?, 0)?;
        let what = format!("the reader's view(partition {p}) of a fresh store");
        same(&what, reader.view(p).doing(&what)?, vec![])?;
    }
    Ok(Ran::Kept)
}

fn a_write_stores_values_and_the_offset_and_a_later_read_sees_them<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    let first = vec![
        SeqValue::new(1, 1, 5),
        SeqValue::new(1, 2, 7),
        SeqValue::new(2, 1, 3),
    ];
    write(&s, 0, first, 4)?;
    numbers_are(&s, 0, 1, &[1, 2, 3], vec![5, 7, 0], "after the write")?;
    numbers_are(&s, 0, 2, &[1], vec![3], "after the write")?;
    offset_is(&s, 0, 4, "after the write")?;
    // A second write raises one key and moves the offset; the others keep their numbers.
    write(&s, 0, vec![SeqValue::new(1, 1, 9)], 6)?;
    numbers_are(&s, 0, 1, &[2, 1], vec![7, 9], "after a second write")?;
    numbers_are(&s, 0, 2, &[1], vec![3], "after a second write")?;
    offset_is(&s, 0, 6, "after a second write")?;
    Ok(Ran::Kept)
}

fn one_partitions_writes_apply_in_the_order_begun<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    // As the driver writes: per partition one write in flight at a time, each begun once the
    // one before it returned, while the other partitions' writes are in flight too. Round r
    // writes (workspace 1, sequence 1) = 10 r + p and offset 2 r + p to partition p.
    let partitions = 0..3u32;
    for round in 1..=3u64 {
        let writes: Vec<_> = partitions
            .clone()
            .map(|p| {
                let p64 = u64::from(p);
                let values = vec![SeqValue::new(1, 1, 10 * round + p64)];
                (p, s.write(p, values, 2 * round + p64))
            })
            .collect();
        for (p, w) in writes {
            wait(w, format_args!("round {round}'s write to partition {p}"))?;
        }
    }
    for p in partitions {
        let p64 = u64::from(p);
        let when = "after three rounds of writes to partitions 0, 1 and 2 at once";
        offset_is(&s, p, 6 + p64, when)?;
        numbers_are(&s, p, 1, &[1], vec![30 + p64], when)?;
    }
    Ok(Ran::Kept)
}

fn partitions_are_independent<M: StoreMaker>(_: &mut M, s: M::Store) -> Result<Ran, Seen> {
    // Partitions 1 and 10: a key that is a prefix of another's must not reach it.
    append_batch(&s, 1, 1, 3)?;
    write(&s, 1, vec![SeqValue::new(4, 1, 8)], 3)?;
    for p in [0, 10] {
        let when = "when only partition 1 was written";
        offset_is(&s, p, 0, when)?;
        numbers_are(&s, p, 4, &[1], vec![0], when)?;
        plog_holds(&s, p, [], when)?;
    }
    // Partition 10's PLog begins at 1, whatever partition 1's holds.
    append_one(&s, 10, 1)?;
    append_batch(&s, 10, 2, 2)?;
    write(&s, 10, vec![SeqValue::new(4, 1, 2)], 1)?;
    plog_holds(&s, 1, 1..=3, "after partition 10 was written")?;
    plog_holds(&s, 10, 1..=3, "after partition 1 was written")?;
    numbers_are(&s, 1, 4, &[1], vec![8], "after partition 10 was written")?;
    offset_is(&s, 1, 3, "after partition 10 was written")?;
    offset_is(&s, 10, 1, "after partition 1 was written")?;
    // Four partitions appended at once from four threads: each PLog dense with its own events.
    let store = &s;
    std::thread::scope(|scope| {
        let threads: Vec<_> = (20..24)
            .map(|p| {
                scope.spawn(move || -> Held {
                    for offset in 1..=6 {
                        append_one(store, p, offset)?;
                    }
                    append_batch(store, p, 7, 4)
                })
            })
            .collect();
        threads.into_iter().try_for_each(|t| {
            t.join().unwrap_or_else(|_| {
                Err(Seen("a thread appending to its partition panicked".into()))
            })
        })
    })?;
    for p in 20..24 {
        plog_holds(&s, p, 1..=10, "after four partitions were appended at once")?;
    }
    Ok(Ran::Kept)
}

fn append_event_accepts_only_the_next_offset_and_a_refusal_writes_nothing<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    let v = values(0, 1);
    for offered in [0, 2, 5] {
        let what = format!("append_event at offset {offered} on an empty PLog (the first is 1)");
        refused(s.append_event(0, offered, &v, b"x"), &what, 1, offered)?;
    }
    plog_holds(&s, 0, [], "after appends at wrong offsets only")?;
    append_one(&s, 0, 1)?;
    for offered in [0, 1, 3, 100] {
        let what = format!("append_event at offset {offered} when the next is 2");
        refused(s.append_event(0, offered, &v, b"x"), &what, 2, offered)?;
    }
    append_one(&s, 0, 2)?;
    plog_holds(
        &s,
        0,
        1..=2,
        "after two appends and refused ones between them",
    )?;
    Ok(Ran::Kept)
}

fn append_events_writes_a_batch_dense_at_the_next_offset_only<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    let stale = |first| {
        let mut b = EventBatch::new(first);
        b.push(&values(0, 1), b"stale");
        b.push(&values(0, 2), b"stale");
        b
    };
    let what = "append_events of a batch at offset 2 on an empty PLog";
    refused(s.append_events(0, &stale(2)), what, 1, 2)?;
    append_batch(&s, 0, 1, 5)?;
    plog_holds(&s, 0, 1..=5, "after a batch of 5")?;
    for offered in [1, 3, 5, 7] {
        let what = format!("append_events of a batch at offset {offered} when the next is 6");
        refused(s.append_events(0, &stale(offered)), &what, 6, offered)?;
    }
    plog_holds(&s, 0, 1..=5, "after refused batches")?;
    append_batch(&s, 0, 6, 3)?;
    s.append_events(0, &EventBatch::new(9))
        .doing("append_events of an empty batch at the next offset")?;
    append_one(&s, 0, 9)?;
    plog_holds(
        &s,
        0,
        1..=9,
        "after batches, an empty batch and an event appended",
    )?;
    Ok(Ran::Kept)
}

/// The checks' payload of `offset` lengthened to `len` bytes.
fn sized_payload(partition: PartitionId, offset: PLogOffset, len: usize) -> Vec<u8> {
    let mut p = payload(partition, offset);
    p.resize(len.max(p.len()), b'.');
    p
}

fn a_batch_larger_than_one_write_is_appended_whole_in_order<M: StoreMaker>(
    maker: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    let limits = s.append_limits();
    // More events than one write takes (when that is a handful), then, when one write takes
    // a few MiB at most, four events of a third of that each.
    let n = if limits.max_events <= SPLIT_BY_EVENTS_MAX {
        2 * limits.max_events.max(1) as u64 + 1
    } else {
        10
    };
    append_batch(&s, 0, 1, n)?;
    let mut expected = stored(0, 1..=n);
    if limits.max_bytes <= SPLIT_BY_BYTES_MAX {
        let len = (limits.max_bytes / 3).saturating_sub(64).max(1);
        let mut b = EventBatch::new(n + 1);
        for offset in n + 1..=n + 4 {
            let payload = sized_payload(0, offset, len);
            b.push(&values(0, offset), &payload);
            expected.push(StoredEvent {
                offset,
                values: values(0, offset),
                payload,
                checksum: Checksum::Verified,
            });
        }
        s.append_events(0, &b).doing(format_args!(
            "append_events of 4 events of {len} bytes ({limits:?})"
        ))?;
    }
    let end = expected.len() as u64;
    let when = format!("after batches larger than one write ({limits:?})");
    plog_holds(&s, 0, 1..=end, &when)?;
    // In one page as large as asked for, which a backend may cut short (saying so).
    let seen = read_all(&s, 0, 1, 10_000)?;
    let what = format!("the PLog read in pages of up to 10,000 events {when}");
    same_values(what, &seen, &page_values(0, 1..=end))?;
    if let Some(reader) = open_reader(maker, &s)? {
        let seen = reader_events(reader.as_ref(), 0)?;
        same_events(format_args!("the reader's events {when}"), &seen, &expected)?;
    }
    Ok(Ran::Kept)
}

fn a_refused_part_leaves_a_dense_prefix_of_its_batch<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    let limits = s.append_limits();
    if limits.max_bytes > REFUSED_PART_MAX_BYTES {
        return Ok(Ran::Skipped(NO_BYTE_LIMIT));
    }
    append_batch(&s, 0, 1, 2)?;
    // Events 3..=8, event 6 larger than one write takes: a part of its own, which the store
    // may refuse; the parts before it are written, the ones after it not.
    let mut b = EventBatch::new(3);
    for offset in 3..=8 {
        let payload = if offset == 6 {
            vec![b'x'; limits.max_bytes + 1]
        } else {
            payload(0, offset)
        };
        b.push(&values(0, offset), &payload);
    }
    let part_ends: Vec<PLogOffset> = std::iter::once(2)
        .chain(b.parts(limits).map(|p| p.next() - 1))
        .collect();
    let result = s.append_events(0, &b);
    let seen = read_all(&s, 0, 1, 64)?;
    let end = seen.last().map_or(0, |(o, _)| *o);
    let when = format!("after append_events of 3..=8 with event 6 over {limits:?}");
    match result {
        Ok(()) => same_values(
            format_args!("the PLog {when} succeeded"),
            &seen,
            &page_values(0, 1..=8),
        )?,
        Err(e @ AppendError::WrongOffset { .. }) => {
            return Err(Seen(format!(
                "{when}: refused with \"{e}\", though each part was offered at the PLog's next offset"
            )));
        }
        Err(e @ AppendError::NotOwner { .. }) => {
            return Err(Seen(format!(
                "{when}: refused with \"{e}\", though no host owns partitions here"
            )));
        }
        Err(AppendError::Storage(e)) => {
            ensure(part_ends.contains(&end), || {
                format!(
                    "{when} failed (\"{e}\"): the PLog ends at {end}, inside a part (parts end \
                     at {part_ends:?}): a part half written"
                )
            })?;
            let what = format!("the PLog {when} failed (\"{e}\")");
            same_values(what, &seen, &page_values(0, 1..=end))?;
            // The writer goes on from the PLog's end, as actualization finds it.
            append_one(&s, 0, end + 1)?;
            plog_holds(&s, 0, 1..=end + 1, "after going on from the prefix")?;
        }
    }
    Ok(Ran::Kept)
}

fn read_plog_pages_from_anywhere_in_offset_order<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    append_batch(&s, 0, 1, 10)?;
    // A page from inside the PLog, then the page at its end: up to 4 events each, at least
    // one, `end` once event 10 is in.
    for from in [3, 7] {
        let what = format!("read_plog(partition 0, from {from}, max 4) of events 1..=10");
        let page = wait(s.read_plog(0, from, 4), &what)?;
        ensure(page.next > from && page.next <= from + 4, || {
            format!("{what}: next offset {}, not after 1 to 4 events", page.next)
        })?;
        same_values(&what, &page.values, &page_values(0, from..page.next))?;
        same(
            format_args!("{what}: end (next offset {})", page.next),
            page.end,
            page.next == 11,
        )?;
    }
    // The whole PLog in pages of 1, 4 and 100, from 1 and from 0 (a fresh partition's stored
    // offset, where actualization begins).
    for from in [0, 1] {
        for max in [1, 4, 100] {
            let seen = read_all(&s, 0, from, max)?;
            let what = format!("the PLog read from {from} in pages of {max}");
            same_values(what, &seen, &page_values(0, 1..=10))?;
        }
    }
    for from in [11, 25] {
        let what = format!("read_plog(partition 0, from {from}, max 4) after event 10");
        let page = wait(s.read_plog(0, from, 4), &what)?;
        same(what, page, empty_page(from))?;
    }
    Ok(Ran::Kept)
}

fn read_numbers_many_agrees_with_read_numbers<M: StoreMaker>(
    _: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    // Enough workspaces that a backend reading or writing them in chunks uses several.
    let written: Vec<SeqValue> = (1..=130u64)
        .flat_map(|ws| {
            [
                SeqValue::new(ws, 1, ws * 10 + 1),
                SeqValue::new(ws, 3, ws * 10 + 3),
            ]
        })
        .collect();
    write(&s, 2, written, 5)?;
    // Workspaces never written among them, out of order, one twice.
    let ws: Vec<u64> = (0..=260).rev().chain([7]).collect();
    let seqs = [3, 2, 1];
    let what = "read_numbers_many(partition 2, workspaces 260 down to 0 and 7 again, [3, 2, 1])";
    let many = s.read_numbers_many(2, &ws, &seqs).doing(what)?;
    let mut one_by_one = Vec::new();
    for &w in &ws {
        let what = format!("read_numbers(partition 2, workspace {w}, [3, 2, 1])");
        one_by_one.extend(s.read_numbers(2, w, &seqs).doing(what)?);
    }
    same(
        format_args!("{what}, against read_numbers of each"),
        many,
        one_by_one,
    )?;
    numbers_are(&s, 2, 130, &seqs, vec![1303, 0, 1301], "after the write")?;
    let what = "read_numbers_many(partition 2, no workspace, [3, 2, 1])";
    same(
        what,
        s.read_numbers_many(2, &[], &seqs).doing(what)?,
        vec![],
    )?;
    Ok(Ran::Kept)
}

fn payloads_survive_as_appended<M: StoreMaker>(maker: &mut M, s: M::Store) -> Result<Ran, Seen> {
    if open_reader(maker, &s)?.is_none() {
        return Ok(Ran::Skipped(NO_READER));
    }
    let limits = s.append_limits();
    let large = (limits.max_bytes / 2).min(64 * 1024);
    let payloads: Vec<Vec<u8>> = vec![
        Vec::new(),
        (0..=255u8).collect(),
        vec![0],
        (0..large).map(|i| (i % 251) as u8).collect(),
        b"\xff\xfe not UTF-8".to_vec(),
    ];
    s.append(0, 1, &values(0, 1))
        .doing("append(partition 0, offset 1) with no payload")?;
    s.append_event(0, 2, &values(0, 2), &payloads[1])
        .doing("append_event(partition 0, offset 2) with every byte value")?;
    let mut b = EventBatch::new(3);
    for (offset, p) in (3..).zip(&payloads[2..]) {
        b.push(&values(0, offset), p);
    }
    s.append_events(0, &b)
        .doing("append_events(partition 0, 3..=5) with payloads")?;
    let expected: Vec<StoredEvent> = (1..)
        .zip(&payloads)
        .map(|(offset, p)| StoredEvent {
            offset,
            values: values(0, offset),
            payload: p.clone(),
            checksum: Checksum::Verified,
        })
        .collect();
    let reader = open_reader(maker, &s)?.ok_or_else(|| Seen(NO_READER.into()))?;
    let seen = reader_events(reader.as_ref(), 0)?;
    same_events(
        "the reader's events after appends with payloads",
        &seen,
        &expected,
    )?;
    Ok(Ran::Kept)
}

fn the_reader_agrees_with_what_was_written<M: StoreMaker>(
    maker: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    if open_reader(maker, &s)?.is_none() {
        return Ok(Ran::Skipped(NO_READER));
    }
    // Partition 0: a PLog only; 3: a write only; 10: both; 7: a refused append only.
    append_batch(&s, 0, 1, 3)?;
    append_one(&s, 0, 4)?;
    append_batch(&s, 10, 1, 2)?;
    let view_10 = vec![
        SeqValue::new(5, 1, 2),
        SeqValue::new(4, 2, 9),
        SeqValue::new(4, 1, 1),
    ];
    write(&s, 10, view_10, 2)?;
    write(&s, 3, vec![SeqValue::new(1, 1, 1)], 1)?;
    let what = "append_event(partition 7, offset 2) on an empty PLog";
    refused(s.append_event(7, 2, &values(7, 2), b""), what, 1, 2)?;

    let reader = open_reader(maker, &s)?.ok_or_else(|| Seen(NO_READER.into()))?;
    let r = reader.as_ref();
    let what =
        "the reader's partitions() (0: a PLog, 3: a stored offset, 10: both, 7: a refused append)";
    same(what, r.partitions().doing(what)?, vec![0, 3, 10])?;
    for (p, bounds) in [(0, Some((1, 4))), (3, None), (7, None), (10, Some((1, 2)))] {
        let what = format!("the reader's plog_bounds(partition {p})");
        same(&what, r.plog_bounds(p).doing(&what)?, bounds)?;
    }
    for (p, n) in [(0, 4), (10, 2)] {
        let what = format!("the reader's events of partition {p}");
        same_events(what, &reader_events(r, p)?, &stored(p, 1..=n))?;
    }
    let what = "the reader's events(partition 0, from 3, max 1)";
    let page = r.events(0, 3, 1).doing(what)?;
    same_events(what, &page, &stored(0, [3]))?;
    let what = "the reader's events(partition 0, from 5, max 10), after the last event";
    same(what, r.events(0, 5, 10).doing(what)?, vec![])?;
    for (p, offset) in [(0, 0), (3, 1), (10, 2)] {
        let what = format!("the reader's stored_next_offset(partition {p})");
        same(&what, r.stored_next_offset(p).doing(&what)?, offset)?;
    }
    let views = [
        (0, vec![]),
        (3, vec![(1, 1, 1)]),
        (10, vec![(4, 1, 1), (4, 2, 9), (5, 1, 2)]),
    ];
    for (p, view) in views {
        let what = format!("the reader's view(partition {p}), in key order");
        same(&what, r.view(p).doing(&what)?, view)?;
    }
    Ok(Ran::Kept)
}

fn everything_survives_closing_and_reopening<M: StoreMaker>(
    maker: &mut M, s: M::Store,
) -> Result<Ran, Seen> {
    append_batch(&s, 0, 1, 3)?;
    append_one(&s, 0, 4)?;
    append_one(&s, 0, 5)?;
    append_batch(&s, 4, 1, 2)?;
    write(
        &s,
        0,
        vec![SeqValue::new(7, 1, 40), SeqValue::new(7, 2, 41)],
        4,
    )?;
    write(&s, 4, vec![SeqValue::new(2, 1, 5)], 2)?;
    let Some(reopened) = maker.reopen(s) else {
        return Ok(Ran::Skipped(NOT_DURABLE));
    };
    let s = reopened.doing("closing and reopening the store")?;
    let when = "after closing and reopening";
    plog_holds(&s, 0, 1..=5, when)?;
    plog_holds(&s, 4, 1..=2, when)?;
    numbers_are(&s, 0, 7, &[1, 2, 3], vec![40, 41, 0], when)?;
    numbers_are(&s, 4, 2, &[1], vec![5], when)?;
    offset_is(&s, 0, 4, when)?;
    offset_is(&s, 4, 2, when)?;
    offset_is(&s, 9, 0, when)?;
    // The fence goes on from the PLog's end.
    let what = "append_event at offset 3 after reopening (the next is 6)";
    refused(s.append_event(0, 3, &values(0, 3), b""), what, 6, 3)?;
    append_one(&s, 0, 6)?;
    if let Some(reader) = open_reader(maker, &s)? {
        let what = "the reader's events of partition 0 after reopening and one more append";
        same_events(what, &reader_events(reader.as_ref(), 0)?, &stored(0, 1..=6))?;
    }
    same("failure() after reopening", s.failure(), None)?;
    Ok(Ran::Kept)
}

fn failure_is_none_on_a_healthy_store<M: StoreMaker>(_: &mut M, s: M::Store) -> Result<Ran, Seen> {
    same("failure() of a fresh store", s.failure(), None)?;
    append_one(&s, 0, 1)?;
    let what = "append_event at offset 5 when the next is 2";
    refused(s.append_event(0, 5, &values(0, 5), b""), what, 2, 5)?;
    write(&s, 0, values(0, 1), 1)?;
    plog_holds(&s, 0, [1], "after an append")?;
    numbers_are(&s, 0, 2, &[1], vec![1], "after a write")?;
    same(
        "failure() after an append, a refused append (a refusal is no failure), a write and reads",
        s.failure(),
        None,
    )?;
    Ok(Ran::Kept)
}
