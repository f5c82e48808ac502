//! What the checks share: the events they write (each value and payload derived from its
//! partition and offset), and reads that compare what a store answers with what was written,
//! saying what differs.

use core::fmt::{Debug, Display};

use futures::executor::block_on;
use sequencer::{PLogOffset, SeqValue};

use crate::store::codec::{Checksum, StoredEvent};
use crate::store::reader::StoreReader;
use crate::store::storage::StorageFuture;
use crate::store::storage::{EventBatch, PartitionId, Storage};

/// What a check saw that the contract does not allow.
#[derive(Debug)]
pub(super) struct Seen(pub String);

/// A check's outcome when the promise held: `Ok(())`, or what was seen.
pub(super) type Held = Result<(), Seen>;

/// Names the call a store's own error came from.
pub(super) trait Doing<T> {
    /// The value, or what was seen: `what` failed, with the store's error.
    fn doing(self, what: impl Display) -> Result<T, Seen>;
}

impl<T, E: Display> Doing<T> for Result<T, E> {
    fn doing(self, what: impl Display) -> Result<T, Seen> {
        self.map_err(|e| Seen(format!("{what} failed: {e}")))
    }
}

/// Waits for a store's future (`what` names the call, for an error).
pub(super) fn wait<T>(future: StorageFuture<T>, what: impl Display) -> Result<T, Seen> {
    block_on(future).doing(what)
}

/// `seen` is `expected`, or what was seen, after `what`.
pub(super) fn same<T: PartialEq + Debug>(what: impl Display, seen: T, expected: T) -> Held {
    if seen == expected {
        Ok(())
    } else {
        Err(Seen(format!("{what}: expected {expected:?}, saw {seen:?}")))
    }
}

/// `holds`, or what was seen: `what`.
pub(super) fn ensure(holds: bool, what: impl FnOnce() -> String) -> Held {
    if holds { Ok(()) } else { Err(Seen(what())) }
}

/// The values of the event the checks write at `offset` of `partition`: two keys, both
/// derived from the offset (so an event read at the wrong offset, or from another partition,
/// shows).
pub(super) fn values(partition: PartitionId, offset: PLogOffset) -> Vec<SeqValue> {
    let ws = 1 + offset % 3;
    vec![
        SeqValue::new(ws, 1, offset),
        SeqValue::new(1_000 + u64::from(partition), 2, 1_000_000 + offset),
    ]
}

/// The payload of the event the checks write at `offset` of `partition`.
pub(super) fn payload(partition: PartitionId, offset: PLogOffset) -> Vec<u8> {
    format!("partition {partition} event {offset}").into_bytes()
}

/// The checks' events `first..first + n` of `partition`, with their payloads, as one batch.
pub(super) fn batch(partition: PartitionId, first: PLogOffset, n: u64) -> EventBatch {
    let mut b = EventBatch::new(first);
    for offset in first..first + n {
        b.push(&values(partition, offset), &payload(partition, offset));
    }
    b
}

/// Appends the checks' event at `offset` of `partition` with `append_event`.
pub(super) fn append_one<S: Storage>(
    store: &S, partition: PartitionId, offset: PLogOffset,
) -> Held {
    store
        .append_event(
            partition,
            offset,
            &values(partition, offset),
            &payload(partition, offset),
        )
        .doing(format_args!(
            "append_event(partition {partition}, offset {offset}) at the PLog's next offset"
        ))
}

/// Appends the checks' events `first..first + n` of `partition` as one batch.
pub(super) fn append_batch<S: Storage>(
    store: &S, partition: PartitionId, first: PLogOffset, n: u64,
) -> Held {
    store
        .append_events(partition, &batch(partition, first, n))
        .doing(format_args!(
            "append_events(partition {partition}, a batch of {n} at offset {first}, the PLog's next)"
        ))
}

/// The values `read_plog` should return for the checks' events `offsets` of `partition`,
/// flattened as a page holds them.
pub(super) fn page_values(
    partition: PartitionId, offsets: impl IntoIterator<Item = PLogOffset>,
) -> Vec<(PLogOffset, SeqValue)> {
    offsets
        .into_iter()
        .flat_map(|o| values(partition, o).into_iter().map(move |v| (o, v)))
        .collect()
}

/// Two lists are equal, or how long each is and where they first differ (each item as
/// `show` writes it; `item` names what the lists hold).
fn same_list<T: PartialEq>(
    what: impl Display, item: &str, seen: &[T], expected: &[T], show: impl Fn(Option<&T>) -> String,
) -> Held {
    if seen == expected {
        return Ok(());
    }
    let at = seen
        .iter()
        .zip(expected)
        .take_while(|(s, e)| s == e)
        .count();
    Err(Seen(format!(
        "{what}: {} {item}s where {} were expected, the first difference at {item} {at}: \
         expected {}, saw {}",
        seen.len(),
        expected.len(),
        show(expected.get(at)),
        show(seen.get(at))
    )))
}

/// Two lists of PLog values are equal, or where they first differ.
pub(super) fn same_values(
    what: impl Display, seen: &[(PLogOffset, SeqValue)], expected: &[(PLogOffset, SeqValue)],
) -> Held {
    same_list(what, "value", seen, expected, |v| format!("{v:?}"))
}

/// The whole PLog of `partition` from `from` on, read with `read_plog` in pages of
/// `max_events`, each page checked against what the trait promises of one: its values in
/// offset order, from `from` up to (not including) its `next`, at least one event while the
/// PLog goes on, and `end` where it ends.
pub(super) fn read_all<S: Storage>(
    store: &S, partition: PartitionId, from: PLogOffset, max_events: usize,
) -> Result<Vec<(PLogOffset, SeqValue)>, Seen> {
    let mut out = Vec::new();
    let mut from = from;
    loop {
        let what = format!("read_plog(partition {partition}, from {from}, max {max_events})");
        let page = wait(store.read_plog(partition, from, max_events), &what)?;
        ensure(page.next >= from, || {
            format!(
                "{what}: its next offset {} is before where it began",
                page.next
            )
        })?;
        let mut last = 0;
        for &(offset, _) in &page.values {
            ensure(
                offset >= last && offset >= from && offset < page.next,
                || {
                    format!(
                        "{what}: a value at offset {offset} is out of order or outside the page \
                     (it ends before {})",
                        page.next
                    )
                },
            )?;
            last = offset;
        }
        out.extend(page.values);
        if page.end {
            return Ok(out);
        }
        ensure(page.next > from, || {
            format!("{what}: no event read and the page says the PLog goes on")
        })?;
        from = page.next;
    }
}

/// The whole PLog of `partition` as its reader pages it, each page in offset order from
/// where it began; the pages must go forward.
pub(super) fn reader_events(
    reader: &dyn StoreReader, partition: PartitionId,
) -> Result<Vec<StoredEvent>, Seen> {
    let mut out: Vec<StoredEvent> = Vec::new();
    loop {
        let from = out.last().map_or(1, |e| e.offset + 1);
        let what = format!("the reader's events(partition {partition}, from {from}, max 64)");
        let page = reader.events(partition, from, 64).doing(&what)?;
        if page.is_empty() {
            return Ok(out);
        }
        let mut expected = from;
        for e in &page {
            ensure(e.offset >= expected, || {
                format!(
                    "{what}: event {} is out of order or before where the page began",
                    e.offset
                )
            })?;
            expected = e.offset + 1;
        }
        out.extend(page);
    }
}

/// The checks' events `offsets` of `partition` as a reader should return them.
pub(super) fn stored(
    partition: PartitionId, offsets: impl IntoIterator<Item = PLogOffset>,
) -> Vec<StoredEvent> {
    offsets
        .into_iter()
        .map(|offset| StoredEvent {
            offset,
            values: values(partition, offset),
            payload: payload(partition, offset),
            checksum: Checksum::Verified,
        })
        .collect()
}

/// Two lists of stored events are equal, or where they first differ.
pub(super) fn same_events(
    what: impl Display, seen: &[StoredEvent], expected: &[StoredEvent],
) -> Held {
    same_list(what, "event", seen, expected, |e| match e {
        Some(e) => format!(
            "offset {} with values {:?} and a payload of {} bytes {:?}",
            e.offset,
            e.values,
            e.payload.len(),
            String::from_utf8_lossy(&e.payload[..e.payload.len().min(48)])
        ),
        None => "none".into(),
    })
}
