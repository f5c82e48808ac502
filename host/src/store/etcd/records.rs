//! What the cluster records beside the data: the numbering layout the first run recorded (key
//! `layout`) and where the store's archive is (key `archive`), each recorded by one conditional
//! transaction so two first runs cannot both record theirs.

use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use crate::store::archive_record::ArchiveRecord;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{ARCHIVE_KEY, LAYOUT_KEY};
use crate::store::layout::Layout;
use crate::store::storage::StorageError;

impl EtcdStorage {
    /// The numbering layout recorded in the cluster (key `layout`), `None` if none is.
    pub fn read_layout(&self) -> Result<Option<Layout>, StorageError> {
        let this = self.clone();
        let resp = self.block(async move {
            let opts = this.get_options();
            this.retrying("read the numbering layout".into(), |mut kv| {
                let opts = opts.clone();
                async move { kv.get(LAYOUT_KEY, Some(opts)).await }
            })
            .await
        })?;
        match resp.kvs().first() {
            None => Ok(None),
            Some(kv) => {
                let text = String::from_utf8_lossy(kv.value());
                Layout::parse(&text).map(Some).map_err(|e| {
                    self.err(
                        "read the numbering layout",
                        &format!("the record is damaged: {e}"),
                    )
                })
            }
        }
    }

    /// Records `layout` in the cluster unless one is recorded already (one conditional
    /// transaction, so two first runs cannot both record theirs); returns the layout recorded
    /// now (`layout`, or the one another run recorded first).
    pub fn record_layout(&self, layout: &Layout) -> Result<Layout, StorageError> {
        let text = layout.to_text();
        let this = self.clone();
        let txn = Txn::new()
            .when(vec![Compare::create_revision(
                LAYOUT_KEY,
                CompareOp::Equal,
                0,
            )])
            .and_then(vec![TxnOp::put(LAYOUT_KEY, text, None)]);
        let recorded = self.block(async move {
            this.retrying("record the numbering layout".into(), |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
        })?;
        if recorded.succeeded() {
            return Ok(layout.clone());
        }
        self.read_layout()?.ok_or_else(|| {
            self.err(
                "record the numbering layout",
                "another run recorded one and it is gone again",
            )
        })
    }
}

impl EtcdStorage {
    /// Where the store's archive is (key `archive`), `None` if none is recorded.
    pub fn read_archive(&self) -> Result<Option<std::path::PathBuf>, StorageError> {
        let this = self.clone();
        let resp = self.block(async move {
            let opts = this.get_options();
            this.retrying("read the archive record".into(), |mut kv| {
                let opts = opts.clone();
                async move { kv.get(ARCHIVE_KEY, Some(opts)).await }
            })
            .await
        })?;
        resp.kvs()
            .first()
            .map(|kv| {
                ArchiveRecord::parse(
                    &String::from_utf8_lossy(kv.value()),
                    &format!("{}: key {ARCHIVE_KEY}", self.inner.label),
                )
            })
            .transpose()
    }

    /// Records `root` as the store's archive unless one is recorded already (one conditional
    /// transaction); a different one recorded first is an error naming both.
    pub fn record_archive(&self, root: &std::path::Path) -> Result<(), StorageError> {
        let text = ArchiveRecord::to_text(root);
        let this = self.clone();
        let txn = Txn::new()
            .when(vec![Compare::create_revision(
                ARCHIVE_KEY,
                CompareOp::Equal,
                0,
            )])
            .and_then(vec![TxnOp::put(ARCHIVE_KEY, text, None)]);
        let done = self.block(async move {
            this.retrying("record the archive".into(), |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
        })?;
        match self.read_archive()? {
            Some(r) if r == root => Ok(()),
            _ if done.succeeded() => Ok(()),
            other => Err(self.err(
                "record the archive",
                &format!("another one is recorded: {other:?}"),
            )),
        }
    }
}
