//! `redb`, `redb:DIR`: the embedded store in a data directory, its layout in the `LAYOUT` file
//! and its archive record in the `ARCHIVE` file beside the database.

use std::path::PathBuf;
use std::sync::Arc;

use crate::store::live::LiveSource;
use crate::store::reader::StoreReader;
use crate::store::redb::data_dir::{DataDir, DirState, OpenMode};
use crate::store::stats::{Counter, StoreStats};
use crate::store::trim::Trim;

use super::archive;
use super::error::OpenError;
use super::live::{DirReader, RedbLive, open_dir};
use super::options::OpenOptions;
use super::settle;
use super::store::{Backend, Opened};
use super::url::StoreUrl;

impl Backend for DataDir {
    fn reader(&self) -> &dyn StoreReader {
        self.store()
    }

    fn describe(&self) -> String {
        format!("redb {}", self.store().path().display())
    }

    fn stats(&self) -> StoreStats {
        let c = self.store().counts();
        StoreStats::of([
            (Counter::ViewWrites, c.writes),
            (Counter::ViewRows, c.values_written),
            (Counter::Commits, c.commits),
            (Counter::CommitNanos, c.commit_nanos),
            (Counter::EventsAppended, c.appends),
            (Counter::Appends, c.append_writes),
        ])
    }

    fn trim(&self) -> Option<&dyn Trim> {
        Some(self.store())
    }

    fn live(&self) -> Option<(PathBuf, Arc<dyn LiveSource>)> {
        let source = RedbLive {
            store: self.store().clone(),
        };
        Some((self.path().to_path_buf(), Arc::new(source)))
    }
}

pub(super) fn open(url: &StoreUrl, options: &OpenOptions) -> Result<Opened, OpenError> {
    let dir = url
        .local_dir(&options.data)
        .unwrap_or_else(|| options.data.clone());
    let mode = match options.create {
        true => OpenMode::OpenOrCreate,
        false => OpenMode::Existing,
    };
    // Everything validated and read before anything is written.
    let state = DataDir::validate(&dir, mode)?;
    let existing = state == DirState::Existing;
    let recorded = match existing {
        true => DataDir::read_layout(&dir)?,
        false => None,
    };
    let name = || format!("data directory {}", dir.display());
    settle::refuse_another(recorded.as_ref(), options, &name, "redb")?;
    let chosen = archive::choose(&options.archive, url, || match existing {
        true => Ok(DataDir::read_archive(&dir)?),
        false => Ok(None),
    })?;
    if existing {
        chosen.check_before_writing(|| Ok(DataDir::open_read_only(&dir)?))?;
    }

    let data_dir = DataDir::open_validated(&dir, state)?;
    tracing::info!(
        "{} data directory {}",
        if data_dir.created() {
            "created"
        } else {
            "opened"
        },
        dir.display()
    );
    let layout = settle::settle_open(
        recorded,
        options,
        data_dir.store(),
        data_dir.created(),
        &name,
        "redb",
        |l| {
            data_dir.record_layout(l)?;
            Ok(l.clone())
        },
    )?;
    let (archive, storage) = chosen.open_under(options, data_dir.store(), |root| {
        Ok(data_dir.record_archive(root)?)
    })?;
    Ok(Opened {
        created: data_dir.created(),
        backend: std::sync::Arc::new(data_dir),
        layout,
        archive,
        storage,
    })
}

pub(super) fn open_reader(
    url: &StoreUrl, options: &OpenOptions,
) -> Result<Box<dyn StoreReader + Send + Sync>, OpenError> {
    let dir = url
        .local_dir(&options.data)
        .unwrap_or_else(|| options.data.clone());
    // `open_dir` validates the directory first.
    let read_record = || Ok(DataDir::read_archive(&dir)?);
    match open_dir(&dir, options.hold_live_run)? {
        DirReader::File(reader) => archive::reader_with_recorded(reader, read_record),
        #[cfg(unix)]
        DirReader::Live(reader) => archive::reader_with_recorded(reader, read_record),
    }
}
