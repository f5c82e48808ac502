//! What the cluster records beside the data: the numbering layout the first run recorded (key
//! `layout`), where the store's archive is (key `archive`) and where its PLog is when it is
//! not in the cluster (key `plog-place`), each recorded by one conditional transaction so two
//! first runs cannot both record theirs.

use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use crate::store::archive_record::ArchiveRecord;
use crate::store::etcd::handle::EtcdStorage;
use crate::store::etcd::keys::{ARCHIVE_KEY, LAYOUT_KEY, PLOG_PLACE_KEY};
use crate::store::layout::Layout;
use crate::store::storage::StorageError;

impl EtcdStorage {
    /// The text recorded under `key`, `None` if none is; `what` names the read in errors.
    fn read_record(&self, key: &'static str, what: &str) -> Result<Option<String>, StorageError> {
        let this = self.clone();
        let opts = self.get_options();
        let resp = self.block(this.get_retrying(what.into(), key, opts))?;
        Ok(resp
            .kvs()
            .first()
            .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()))
    }

    /// Records `text` under `key` unless the key exists (one conditional transaction, so two
    /// first runs cannot both record theirs); whether this recorded it.
    fn record_if_absent(
        &self, key: &'static str, text: String, what: &'static str,
    ) -> Result<bool, StorageError> {
        let this = self.clone();
        let txn = Txn::new()
            .when(vec![Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then(vec![TxnOp::put(key, text, None)]);
        let recorded = self.block(async move {
            this.retrying(what.into(), |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
        })?;
        Ok(recorded.succeeded())
    }

    /// The numbering layout recorded in the cluster (key `layout`), `None` if none is.
    pub fn read_layout(&self) -> Result<Option<Layout>, StorageError> {
        match self.read_record(LAYOUT_KEY, "read the numbering layout")? {
            None => Ok(None),
            Some(text) => Layout::parse(&text).map(Some).map_err(|e| {
                self.err(
                    "read the numbering layout",
                    &format!("the record is damaged: {e}"),
                )
            }),
        }
    }

    /// Records `layout` in the cluster unless one is recorded already (one conditional
    /// transaction, so two first runs cannot both record theirs); returns the layout recorded
    /// now (`layout`, or the one another run recorded first).
    pub fn record_layout(&self, layout: &Layout) -> Result<Layout, StorageError> {
        if self.record_if_absent(LAYOUT_KEY, layout.to_text(), "record the numbering layout")? {
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
        self.read_record(ARCHIVE_KEY, "read the archive record")?
            .map(|text| {
                ArchiveRecord::parse(&text, &format!("{}: key {ARCHIVE_KEY}", self.inner.label))
            })
            .transpose()
    }

    /// Records `root` as the store's archive unless one is recorded already (one conditional
    /// transaction); a different one recorded first is an error naming both.
    pub fn record_archive(&self, root: &std::path::Path) -> Result<(), StorageError> {
        let text = ArchiveRecord::to_text(root);
        let recorded = self.record_if_absent(ARCHIVE_KEY, text, "record the archive")?;
        match self.read_archive()? {
            Some(r) if r == root => Ok(()),
            _ if recorded => Ok(()),
            other => Err(self.err(
                "record the archive",
                &format!("another one is recorded: {other:?}"),
            )),
        }
    }
}

impl EtcdStorage {
    /// Where the PLog of the view kept in this cluster is when it is not in the cluster (key
    /// `plog-place`: the composite store's objects, as its URL names them), `None` when no
    /// such record is there (the PLog is in the cluster, or nothing is stored yet).
    pub fn read_plog_place(&self) -> Result<Option<String>, StorageError> {
        self.read_record(PLOG_PLACE_KEY, "read where the PLog is")
    }

    /// Records `place` as where the PLog of this cluster's view is, unless a place is recorded
    /// already (one conditional transaction); returns the place recorded now (`place`, or the
    /// one another run recorded first).
    pub fn record_plog_place(&self, place: &str) -> Result<String, StorageError> {
        let what = "record where the PLog is";
        if self.record_if_absent(PLOG_PLACE_KEY, place.to_string(), what)? {
            return Ok(place.to_string());
        }
        (self.read_plog_place()?)
            .ok_or_else(|| self.err(what, "another run recorded one and it is gone again"))
    }
}
