//! The backend contract suite (`sequencer_host::store::testing`) on every `Storage` of the
//! crate: memory (as it is, and split into small writes), redb (the store alone, and in a
//! data directory read through `RedbReader`), the object store on the local file system (read
//! through `ObjectReader`), the object store's PLog on S3 (SeaweedFS, a real server; feature
//! `s3`), etcd on a real 3-member cluster (feature `etcd`), the composite store (the PLog in a
//! directory, the view on that cluster), and the layers over a backend: the own tail and the
//! read-ahead over memory, and redb with its archive under it. Each check runs on a fresh store.
//!
//! Without SeaweedFS or etcd those two fail under CI (`CI` set) and are skipped with a message
//! otherwise.

#![cfg(all(feature = "testing", feature = "cli"))]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sequencer_host::StorageFuture;
use sequencer_host::metrics::Metered;
use sequencer_host::metrics::Metrics;
use sequencer_host::store::layers::archive::{Archive, WithArchive, archive_pass};
use sequencer_host::store::layers::{OwnTail, ReadAhead, TailLimits};
use sequencer_host::store::redb::{DataDir, OpenMode, RedbStorage};
use sequencer_host::store::testing::{Report, StoreMaker, assert_contract};
use sequencer_host::store::{AppendLimits, ObjectReader, ObjectStorage};
use sequencer_host::{MemoryStorage, StorageError, StoreReader};

/// The report, printed, after asserting that exactly the promises `skipped` name (by a word
/// of each) went unchecked.
fn kept_all_but(report: Report, skipped: &[&str]) {
    eprintln!("{report}");
    let unchecked: Vec<&str> = report.skipped.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        unchecked.len(),
        skipped.len(),
        "unchecked promises: {:?}",
        report.skipped
    );
    for word in skipped {
        assert!(
            unchecked.iter().any(|p| p.contains(word)),
            "expected the promise about {word:?} unchecked: {:?}",
            report.skipped
        );
    }
}

/// A message for a store that failed to open.
fn storage_error(e: impl std::fmt::Display) -> StorageError {
    StorageError(e.to_string())
}

/// A new folder under `dir` for the `made`th store (counted on).
fn next_dir(dir: &Path, made: &mut u32, name: &str) -> PathBuf {
    *made += 1;
    dir.join(format!("{name}-{made}"))
}

/// Memory stores, optionally splitting every batch as a backend with `limits` must.
struct Memory {
    limits: Option<AppendLimits>,
}

impl StoreMaker for Memory {
    type Store = MemoryStorage;

    fn name(&self) -> String {
        match self.limits {
            None => "MemoryStorage".into(),
            Some(l) => format!("MemoryStorage with {l:?}"),
        }
    }

    fn fresh(&mut self) -> Result<MemoryStorage, StorageError> {
        let m = MemoryStorage::new();
        if let Some(limits) = self.limits {
            m.set_append_limits(limits);
        }
        Ok(m)
    }

    fn reader<'s>(
        &'s self, store: &'s MemoryStorage,
    ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
        Some(Ok(Box::new(store)))
    }
}

#[test]
fn memory_storage_keeps_the_storage_contract() {
    kept_all_but(
        assert_contract(&mut Memory { limits: None }),
        &["reopen", "refused part"],
    );
}

#[test]
fn memory_storage_splitting_batches_into_small_writes_keeps_the_storage_contract() {
    let limits = AppendLimits {
        max_events: 4,
        max_bytes: 4096,
    };
    let mut maker = Memory {
        limits: Some(limits),
    };
    kept_all_but(assert_contract(&mut maker), &["reopen"]);
}

/// Memory stores, splitting batches into small writes, behind a layer (`layer` makes it over
/// the store), read back through the memory store under it.
struct MemoryUnder<L> {
    name: &'static str,
    layer: fn(MemoryStorage) -> L,
    under: Option<MemoryStorage>,
}

impl<L> MemoryUnder<L> {
    fn new(name: &'static str, layer: fn(MemoryStorage) -> L) -> Self {
        Self {
            name,
            layer,
            under: None,
        }
    }
}

impl<L: sequencer_host::Storage> StoreMaker for MemoryUnder<L> {
    type Store = L;

    fn name(&self) -> String {
        self.name.into()
    }

    fn fresh(&mut self) -> Result<L, StorageError> {
        let m = MemoryStorage::new();
        m.set_append_limits(AppendLimits {
            max_events: 4,
            max_bytes: 4096,
        });
        self.under = Some(m.clone());
        Ok((self.layer)(m))
    }

    fn reader<'s>(&'s self, _: &'s L) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
        let under = self.under.as_ref()?;
        Some(Ok(Box::new(under)))
    }
}

#[test]
fn the_own_tail_layer_over_memory_keeps_the_storage_contract() {
    let mut maker = MemoryUnder::new("OwnTail over MemoryStorage", |m| {
        OwnTail::new(Arc::new(m.clone()), Arc::new(m), TailLimits::default())
    });
    kept_all_but(assert_contract(&mut maker), &["reopen"]);
}

#[test]
fn the_read_ahead_layer_over_memory_keeps_the_storage_contract() {
    let mut maker = MemoryUnder::new("ReadAhead over MemoryStorage", |m| {
        ReadAhead::new(Arc::new(m))
    });
    kept_all_but(assert_contract(&mut maker), &["reopen"]);
}

#[test]
fn the_metered_layer_over_memory_keeps_the_storage_contract() {
    let mut maker = MemoryUnder::new("Metered over MemoryStorage", |m| {
        Metered::new(Arc::new(m), Metrics::new())
    });
    kept_all_but(assert_contract(&mut maker), &["reopen"]);
}

/// redb stores with an archive under them (bundles of 2 events), read through the archive
/// layer as a run reads them; between a close and the reopen an archive pass moves what is safe
/// into the archive and trims it from the store, as `sequencer-host archive` would.
struct RedbWithArchive {
    dir: tempfile::TempDir,
    made: u32,
}

impl RedbWithArchive {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            made: 0,
        }
    }
}

impl StoreMaker for RedbWithArchive {
    type Store = WithArchive<RedbStorage>;

    fn name(&self) -> String {
        "RedbStorage with its archive (WithArchive), archived and trimmed at each reopen".into()
    }

    fn fresh(&mut self) -> Result<WithArchive<RedbStorage>, StorageError> {
        let dir = next_dir(self.dir.path(), &mut self.made, "archived");
        std::fs::create_dir_all(&dir).map_err(storage_error)?;
        let hot = RedbStorage::create(&dir.join("store.redb"))?;
        let archive = Archive::create_or_open(&dir.join("archive"), 2).map_err(storage_error)?;
        WithArchive::new(hot, Some(archive)).map_err(storage_error)
    }

    fn reopen(
        &mut self, store: WithArchive<RedbStorage>,
    ) -> Option<Result<WithArchive<RedbStorage>, StorageError>> {
        let file = store.hot().path().to_path_buf();
        let root = store.archive()?.root().to_path_buf();
        Some((|| {
            let archive = Archive::create_or_open(&root, 2).map_err(storage_error)?;
            archive_pass(store.hot(), &archive, |_| {}).map_err(storage_error)?;
            drop(store);
            let hot = RedbStorage::open(&file).map_err(storage_error)?;
            let archive = Archive::open(&root).map_err(storage_error)?;
            WithArchive::new(hot, Some(archive)).map_err(storage_error)
        })())
    }

    fn reader<'s>(
        &'s self, store: &'s WithArchive<RedbStorage>,
    ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
        Some(Ok(Box::new(store)))
    }
}

#[test]
fn redb_with_its_archive_keeps_the_storage_contract() {
    let mut maker = RedbWithArchive::new();
    kept_all_but(assert_contract(&mut maker), &["refused part"]);
}

/// redb stores in a temp dir: a bare `RedbStorage` read through itself, or a `DataDir` read
/// through `RedbReader` (a private copy, since the store is live).
struct Redb {
    dir: tempfile::TempDir,
    made: u32,
    in_data_dir: bool,
}

impl Redb {
    fn new(in_data_dir: bool) -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            made: 0,
            in_data_dir,
        }
    }

    fn open_data_dir(path: &Path, mode: OpenMode) -> Result<RedbStorage, StorageError> {
        let dir = DataDir::open(path, mode).map_err(storage_error)?;
        Ok(dir.store().clone())
    }
}

impl StoreMaker for Redb {
    type Store = RedbStorage;

    fn name(&self) -> String {
        if self.in_data_dir {
            "RedbStorage in a DataDir, read through RedbReader".into()
        } else {
            "RedbStorage".into()
        }
    }

    fn fresh(&mut self) -> Result<RedbStorage, StorageError> {
        let path = next_dir(self.dir.path(), &mut self.made, "store");
        if self.in_data_dir {
            Self::open_data_dir(&path, OpenMode::OpenOrCreate)
        } else {
            RedbStorage::create(&path.with_extension("redb"))
        }
    }

    fn reopen(&mut self, store: RedbStorage) -> Option<Result<RedbStorage, StorageError>> {
        let file = store.path().to_path_buf();
        drop(store);
        Some(match (self.in_data_dir, file.parent()) {
            (true, Some(dir)) => Self::open_data_dir(dir, OpenMode::Existing),
            _ => RedbStorage::open(&file).map_err(storage_error),
        })
    }

    fn reader<'s>(
        &'s self, store: &'s RedbStorage,
    ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
        match (self.in_data_dir, store.path().parent()) {
            (true, Some(dir)) => Some(
                DataDir::open_read_only(dir)
                    .map(|r| Box::new(r) as Box<dyn StoreReader>)
                    .map_err(storage_error),
            ),
            _ => Some(Ok(Box::new(store))),
        }
    }
}

#[test]
fn redb_storage_keeps_the_storage_contract() {
    kept_all_but(assert_contract(&mut Redb::new(false)), &["refused part"]);
}

#[test]
fn a_data_dir_read_through_redb_reader_keeps_the_storage_contract() {
    kept_all_but(assert_contract(&mut Redb::new(true)), &["refused part"]);
}

/// Object stores on the local file system, bundles of 4 events (so merges run during the
/// checks), read through `ObjectReader` as `check` reads them.
struct LocalObjects {
    dir: tempfile::TempDir,
    made: u32,
}

impl StoreMaker for LocalObjects {
    type Store = ObjectStorage;

    fn name(&self) -> String {
        "ObjectStorage on the local file system, read through ObjectReader".into()
    }

    fn fresh(&mut self) -> Result<ObjectStorage, StorageError> {
        let root = next_dir(self.dir.path(), &mut self.made, "objects");
        ObjectStorage::open(&root, Some(4))
    }

    fn reopen(&mut self, store: ObjectStorage) -> Option<Result<ObjectStorage, StorageError>> {
        let root = store.root().to_path_buf();
        drop(store);
        Some(ObjectStorage::open(&root, None))
    }

    fn reader<'s>(
        &'s self, store: &'s ObjectStorage,
    ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
        Some(ObjectReader::open(store.root()).map(|r| Box::new(r) as Box<dyn StoreReader>))
    }
}

#[test]
fn the_object_store_on_the_local_file_system_keeps_the_storage_contract() {
    let mut maker = LocalObjects {
        dir: tempfile::tempdir().expect("temp dir"),
        made: 0,
    };
    kept_all_but(assert_contract(&mut maker), &["refused part"]);
}

#[cfg(feature = "s3")]
mod s3 {
    use super::*;
    use crate::common::s3_server::S3Server;

    /// Object stores whose PLog is on a real S3 server (SeaweedFS), each under a prefix of its
    /// own (bundles of 4), their views in a temp dir, read through `ObjectReader`.
    struct S3 {
        server: S3Server,
        dir: tempfile::TempDir,
        made: u32,
    }

    impl S3 {
        /// The store with its view in `root` and its PLog under the prefix of the same name.
        fn open(&self, root: &Path, bundle: Option<u64>) -> Result<ObjectStorage, StorageError> {
            ObjectStorage::open_with(root, Some(self.server.remote(&prefix(root))), bundle)
        }
    }

    fn prefix(root: &Path) -> String {
        root.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    impl StoreMaker for S3 {
        type Store = ObjectStorage;

        fn name(&self) -> String {
            "ObjectStorage with its PLog on S3 (SeaweedFS), read through ObjectReader".into()
        }

        fn fresh(&mut self) -> Result<ObjectStorage, StorageError> {
            let root = next_dir(self.dir.path(), &mut self.made, "contract");
            self.open(&root, Some(4))
        }

        fn reopen(&mut self, store: ObjectStorage) -> Option<Result<ObjectStorage, StorageError>> {
            let root = store.root().to_path_buf();
            drop(store);
            Some(self.open(&root, None))
        }

        fn reader<'s>(
            &'s self, store: &'s ObjectStorage,
        ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
            let remote = self.server.remote(&prefix(store.root()));
            Some(
                ObjectReader::open_with(store.root(), Some(remote))
                    .map(|r| Box::new(r) as Box<dyn StoreReader>),
            )
        }
    }

    #[test]
    fn the_object_store_with_its_plog_on_s3_keeps_the_storage_contract() {
        let Some(server) = S3Server::real() else {
            return;
        };
        let mut maker = S3 {
            server,
            dir: tempfile::tempdir().expect("temp dir"),
            made: 0,
        };
        kept_all_but(assert_contract(&mut maker), &["refused part"]);
    }
}

#[cfg(feature = "etcd")]
mod etcd {
    use super::*;
    use crate::common::etcd_cluster::EtcdCluster;
    use sequencer_host::store::EtcdObjects;
    use sequencer_host::store::etcd::{EtcdConfig, EtcdStorage};
    use sequencer_host::store::objects::{Access, RemotePlog};

    /// Stores on one 3-member cluster, emptied for each fresh store; reopened with a new
    /// client.
    struct Etcd {
        cluster: EtcdCluster,
    }

    impl Etcd {
        fn connect(&self) -> Result<EtcdStorage, StorageError> {
            EtcdStorage::connect(EtcdConfig::new(self.cluster.endpoints.clone()))
        }
    }

    impl StoreMaker for Etcd {
        type Store = EtcdStorage;

        fn name(&self) -> String {
            "EtcdStorage on a 3-member cluster".into()
        }

        fn fresh(&mut self) -> Result<EtcdStorage, StorageError> {
            self.cluster.wipe();
            self.connect()
        }

        fn reopen(&mut self, store: EtcdStorage) -> Option<Result<EtcdStorage, StorageError>> {
            drop(store);
            Some(self.connect())
        }

        fn reader<'s>(
            &'s self, store: &'s EtcdStorage,
        ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
            Some(Ok(Box::new(store)))
        }
    }

    #[test]
    fn the_etcd_store_on_a_real_cluster_keeps_the_storage_contract() {
        let Some(cluster) = EtcdCluster::start() else {
            return;
        };
        kept_all_but(assert_contract(&mut Etcd { cluster }), &[]);
    }

    /// Composite stores on one cluster (emptied for each fresh store) with their PLog in a new
    /// directory each; reopened with new handles on both.
    struct Composite {
        etcd: Etcd,
        dir: tempfile::TempDir,
        made: u32,
    }

    impl Composite {
        fn open(&self) -> Result<EtcdObjects, StorageError> {
            let dir = self.dir.path().join(format!("plog-{}", self.made));
            let remote = RemotePlog::directory(&dir, true)?;
            let plog = remote.open_plog(Some(&dir), Some(64), Access::Write)?;
            Ok(EtcdObjects::new(
                self.etcd.connect()?,
                plog,
                remote.url,
                None,
            ))
        }
    }

    impl StoreMaker for Composite {
        type Store = EtcdObjects;

        fn name(&self) -> String {
            "EtcdObjects: the PLog in a directory, the view on a 3-member cluster".into()
        }

        fn fresh(&mut self) -> Result<EtcdObjects, StorageError> {
            self.etcd.cluster.wipe();
            self.made += 1;
            self.open()
        }

        fn reopen(&mut self, store: EtcdObjects) -> Option<Result<EtcdObjects, StorageError>> {
            drop(store);
            Some(self.open())
        }

        fn reader<'s>(
            &'s self, store: &'s EtcdObjects,
        ) -> Option<Result<Box<dyn StoreReader + 's>, StorageError>> {
            Some(Ok(Box::new(store)))
        }
    }

    #[test]
    fn the_composite_store_on_a_real_cluster_keeps_the_storage_contract() {
        let Some(cluster) = EtcdCluster::start() else {
            return;
        };
        let mut maker = Composite {
            etcd: Etcd { cluster },
            dir: tempfile::tempdir().expect("temp dir"),
            made: 0,
        };
        // Its PLog's objects have no byte limit, as the object store's (the same PLog).
        kept_all_but(assert_contract(&mut maker), &["refused part"]);
    }
}

/// A promise a [`Flawed`] store breaks.
#[derive(Clone, Copy, Debug)]
enum Flaw {
    /// `write` keeps the values but not the offset.
    ForgetsTheOffset,
    /// Partition 10 is partition 1 (and 20 is 2...): a key prefix taken for a whole key.
    TenIsOne,
    /// An append at any offset is taken (the fence is gone).
    NoFence,
    /// `read_plog` returns every event from `from` on, whatever `max_events` says.
    PagesWithoutLimit,
}

/// A memory store with one flaw, to prove the suite sees it.
struct Flawed {
    inner: MemoryStorage,
    flaw: Flaw,
}

impl Flawed {
    fn partition(&self, p: u32) -> u32 {
        match self.flaw {
            Flaw::TenIsOne if p >= 10 => p / 10,
            _ => p,
        }
    }
}

impl sequencer_host::Storage for Flawed {
    fn read_numbers(&self, p: u32, ws: u64, seqs: &[u16]) -> Result<Vec<u64>, StorageError> {
        self.inner.read_numbers(self.partition(p), ws, seqs)
    }

    fn read_next_offset(&self, p: u32) -> StorageFuture<u64> {
        self.inner.read_next_offset(self.partition(p))
    }

    fn write(
        &self, p: u32, values: Vec<sequencer::SeqValue>, next_offset: u64,
    ) -> StorageFuture<()> {
        let next_offset = match self.flaw {
            Flaw::ForgetsTheOffset => 0,
            _ => next_offset,
        };
        self.inner.write(self.partition(p), values, next_offset)
    }

    fn read_plog(
        &self, p: u32, from: u64, max_events: usize,
    ) -> StorageFuture<sequencer_host::PlogPage> {
        let max_events = match self.flaw {
            Flaw::PagesWithoutLimit => usize::MAX,
            _ => max_events,
        };
        self.inner.read_plog(self.partition(p), from, max_events)
    }

    fn append_events(
        &self, p: u32, batch: &sequencer_host::EventBatch,
    ) -> Result<(), sequencer_host::AppendError> {
        match self.flaw {
            Flaw::NoFence => batch.append_each(|offset, values, _| {
                self.inner.seed_event(p, offset, values);
                Ok(())
            }),
            _ => self.inner.append_events(self.partition(p), batch),
        }
    }
}

struct FlawedMaker(Flaw);

impl StoreMaker for FlawedMaker {
    type Store = Flawed;

    fn name(&self) -> String {
        format!("a store with the flaw {:?}", self.0)
    }

    fn fresh(&mut self) -> Result<Flawed, StorageError> {
        Ok(Flawed {
            inner: MemoryStorage::new(),
            flaw: self.0,
        })
    }
}

#[test]
fn a_store_that_breaks_a_promise_fails_the_suite_naming_that_promise() {
    use sequencer_host::store::testing::check_contract;
    let cases = [
        (
            Flaw::ForgetsTheOffset,
            "a write stores values and the offset",
        ),
        (Flaw::TenIsOne, "partitions are independent"),
        (
            Flaw::NoFence,
            "append_event accepts only the PLog's next offset",
        ),
        (Flaw::PagesWithoutLimit, "read_plog pages from anywhere"),
    ];
    for (flaw, promise) in cases {
        let failure =
            check_contract(&mut FlawedMaker(flaw)).expect_err("a flawed store fails the suite");
        eprintln!("{failure}");
        assert!(failure.promise.starts_with(promise), "{flaw:?}: {failure}");
        assert!(
            failure.to_string().contains(&format!("{flaw:?}")),
            "the failure names the store: {failure}"
        );
    }
}
