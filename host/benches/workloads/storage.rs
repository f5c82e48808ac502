//! `BenchStorage`: in memory like `MemoryStorage`, without its per-write log (which would grow
//! by millions of records), its PLog a vector (fast pages for W3), with an optional write
//! latency (W5). Writes are applied on a writer thread of the storage's own, as a real store
//! (redb, etcd) performs them off its caller's thread and as the native engine's writer thread
//! does: the driver that begins a write goes on with its next step meanwhile.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, mpsc};
use std::time::Duration;

use futures::future::FutureExt;
use hashbrown::HashMap;
use sequencer::{Number, PLogOffset, SeqId, SeqValue, WsId};
use sequencer_host::StorageFuture;
use sequencer_host::{AppendError, EventBatch, PartitionId, PlogPage, Storage, StorageError};

#[derive(Default)]
pub struct Data {
    pub view: HashMap<(PartitionId, WsId, SeqId), Number>,
    pub next_offset: HashMap<PartitionId, PLogOffset>,
    /// Partition 0's PLog: the event at offset `i + 1` is `plog[i]` (other partitions: empty).
    pub plog: Vec<Vec<SeqValue>>,
}

/// A write for the writer thread: partition, values, next offset, and where to say it is done.
type WriteJob = (
    PartitionId,
    Vec<SeqValue>,
    PLogOffset,
    futures::channel::oneshot::Sender<()>,
);

/// In-memory storage, optionally slow to write.
#[derive(Clone, Default)]
pub struct BenchStorage {
    pub data: Arc<Mutex<Data>>,
    pub write_delay: Option<Duration>,
    /// The writer thread's queue, started by the first write; the thread ends once every
    /// clone of the storage is gone.
    writer: Arc<OnceLock<mpsc::Sender<WriteJob>>>,
}

impl BenchStorage {
    pub fn with_write_delay(delay: Duration) -> Self {
        Self {
            write_delay: Some(delay),
            ..Self::default()
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets the view and the stored offsets (the PLog stays), so a replay starts afresh.
    pub fn reset_view(&self) {
        let mut d = self.lock();
        d.view = HashMap::new();
        d.next_offset = HashMap::new();
    }

    pub fn seed_view(&self, partition: PartitionId, ws: WsId, seq: SeqId, value: Number) {
        self.lock().view.insert((partition, ws, seq), value);
    }

    pub fn seed_plog(&self, events: impl Iterator<Item = Vec<SeqValue>>) {
        self.lock().plog.extend(events);
    }

    pub fn numbers(&self, partition: PartitionId, ws: WsId, seqs: &[SeqId]) -> Vec<Number> {
        let d = self.lock();
        seqs.iter()
            .map(|&s| d.view.get(&(partition, ws, s)).copied().unwrap_or(0))
            .collect()
    }

    pub fn stored_offset(&self, partition: PartitionId) -> PLogOffset {
        self.lock()
            .next_offset
            .get(&partition)
            .copied()
            .unwrap_or(0)
    }

    pub fn apply(&self, partition: PartitionId, values: &[SeqValue], next_offset: PLogOffset) {
        apply(&self.data, partition, values, next_offset);
    }

    /// The writer thread's queue (started on first use).
    fn writer(&self) -> &mpsc::Sender<WriteJob> {
        self.writer.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<WriteJob>();
            let data = self.data.clone();
            std::thread::Builder::new()
                .name("bench-writer".into())
                .spawn(move || {
                    for (partition, values, next_offset, done) in rx {
                        apply(&data, partition, &values, next_offset);
                        let _ = done.send(());
                    }
                })
                .expect("start the bench storage's writer thread");
            tx
        })
    }

    pub fn page(&self, partition: PartitionId, from: PLogOffset, max_events: usize) -> PlogPage {
        let d = self.lock();
        let mut page = PlogPage {
            values: Vec::new(),
            next: from,
            end: true,
        };
        if partition != 0 || from == 0 {
            return page;
        }
        let first = (from - 1) as usize;
        let last = d.plog.len().min(first.saturating_add(max_events));
        if first < last {
            let events = &d.plog[first..last];
            page.values
                .reserve(events.iter().map(Vec::len).sum::<usize>());
            for (i, event) in events.iter().enumerate() {
                let offset = from + i as u64;
                page.values.extend(event.iter().map(|v| (offset, *v)));
            }
            page.next = from + (last - first) as u64;
        }
        page.end = last >= d.plog.len();
        page
    }
}

fn apply(data: &Mutex<Data>, partition: PartitionId, values: &[SeqValue], next_offset: PLogOffset) {
    let mut d = data.lock().unwrap_or_else(|p| p.into_inner());
    for v in values {
        d.view.insert((partition, v.key.ws, v.key.seq), v.value);
    }
    d.next_offset.insert(partition, next_offset);
}

impl Storage for BenchStorage {
    fn read_numbers(
        &self, partition: PartitionId, ws: WsId, seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        Ok(self.numbers(partition, ws, seqs))
    }

    fn read_numbers_many(
        &self, partition: PartitionId, ws: &[WsId], seqs: &[SeqId],
    ) -> Result<Vec<Number>, StorageError> {
        let d = self.lock();
        let keys = ws.iter().flat_map(|&w| seqs.iter().map(move |&s| (w, s)));
        Ok(keys
            .map(|(w, s)| d.view.get(&(partition, w, s)).copied().unwrap_or(0))
            .collect())
    }

    fn read_next_offset(&self, partition: PartitionId) -> StorageFuture<PLogOffset> {
        futures::future::ready(Ok(self.stored_offset(partition))).boxed()
    }

    fn write(
        &self, partition: PartitionId, values: Vec<SeqValue>, next_offset: PLogOffset,
    ) -> StorageFuture<()> {
        let this = self.clone();
        match self.write_delay {
            None => {
                let (done, applied) = futures::channel::oneshot::channel();
                let queued = self
                    .writer()
                    .send((partition, values, next_offset, done))
                    .is_ok();
                async move {
                    match queued && applied.await.is_ok() {
                        true => Ok(()),
                        false => Err(StorageError("the bench writer thread is gone".into())),
                    }
                }
                .boxed()
            }
            Some(delay) => async move {
                futures_timer::Delay::new(delay).await;
                this.apply(partition, &values, next_offset);
                Ok(())
            }
            .boxed(),
        }
    }

    fn read_plog(
        &self, partition: PartitionId, from: PLogOffset, max_events: usize,
    ) -> StorageFuture<PlogPage> {
        futures::future::ready(Ok(self.page(partition, from, max_events))).boxed()
    }

    /// Kept beside the batched append so that a step appends without encoding its event.
    fn append_event(
        &self, partition: PartitionId, offset: PLogOffset, values: &[SeqValue], _payload: &[u8],
    ) -> Result<(), AppendError> {
        self.append_one(partition, offset, values)
    }

    fn append_events(&self, partition: PartitionId, batch: &EventBatch) -> Result<(), AppendError> {
        batch.append_each(|offset, values, _| self.append_one(partition, offset, values))
    }
}

impl BenchStorage {
    /// The fenced append of one event.
    fn append_one(
        &self, partition: PartitionId, offset: PLogOffset, values: &[SeqValue],
    ) -> Result<(), AppendError> {
        let mut d = self.lock();
        let expected = d.plog.len() as u64 + 1;
        if partition != 0 || offset != expected {
            return Err(AppendError::WrongOffset {
                expected,
                offered: offset,
            });
        }
        d.plog.push(values.to_vec());
        Ok(())
    }
}
