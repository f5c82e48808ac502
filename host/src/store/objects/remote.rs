//! The PLog's objects when they are not in the root (S3, or the composite store's directory or
//! S3): where they are, the object store, when it counts as failed, its `FORMAT` object, which
//! every host of one PLog reads its bundle size from, and opening the PLog shared by many hosts.

use std::path::Path;
use std::sync::Arc;

use futures::executor::block_on;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::store::objects::marker::{Marker, OBJECTS_FORMAT_FILE, marker_line, parse_marker};
use crate::store::objects::object::ObjectFormat;
use crate::store::objects::plog::{
    DEFAULT_BUNDLE_EVENTS, ObjectPlog, PlogOptions, REMOTE_DELETE_DELAY,
};
use crate::store::objects::shared::{Access, os_err};
use crate::store::storage::StorageError;

/// Says why a remote PLog takes no writes (it has not answered for too long), if it does not.
pub type RemoteFailure = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The PLog's objects when they are not in the root: an object store elsewhere (S3, or a
/// directory of the composite store's).
#[derive(Clone)]
pub struct RemotePlog {
    /// Where, as a URL (`s3://BUCKET/PREFIX`).
    pub url: String,
    /// The objects, under that location.
    pub objects: Arc<dyn ObjectStore>,
    /// The store's failure once the objects have stayed away too long (see
    /// [`Storage::failure`](crate::Storage::failure)); `None`: never.
    pub failure: Option<RemoteFailure>,
    /// Requests to the objects sent again after a transport failure, where the client counts
    /// them.
    pub retries: Option<Arc<std::sync::atomic::AtomicU64>>,
}

impl RemotePlog {
    /// The PLog's `FORMAT` object (the format of its event objects and its bundle size); with
    /// `create`, the object is created first if absent (with the bundle size asked for, else
    /// the default, and the format given), so that every host of one PLog agrees on the size.
    /// `Ok(None)`: no store there (and `create` was not asked).
    pub(super) fn marker(
        &self, create: Option<(Option<u64>, ObjectFormat)>,
    ) -> Result<Option<Marker>, StorageError> {
        let path = ObjPath::from(OBJECTS_FORMAT_FILE);
        let e = |what: &dyn std::fmt::Display| {
            StorageError(format!("object store {}: {what}", self.url))
        };
        if let Some((asked, format)) = create {
            let n = asked.unwrap_or(DEFAULT_BUNDLE_EVENTS).max(2);
            let put = block_on(self.objects.put_opts(
                &path,
                PutPayload::from(marker_line(format, n, None)),
                PutOptions::from(PutMode::Create),
            ));
            match put {
                Ok(_) => {
                    return Ok(Some(Marker {
                        format,
                        bundle: n,
                        plog: None,
                    }));
                }
                // There already (or our own create, retried after a lost answer): read it.
                Err(object_store::Error::AlreadyExists { .. }) => {}
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(e(&"the bucket does not exist"));
                }
                Err(err) => {
                    return Err(e(&format_args!(
                        "cannot create {OBJECTS_FORMAT_FILE}: {err}"
                    )));
                }
            }
        }
        let text = match block_on(async { self.objects.get(&path).await?.bytes().await }) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(e(&format_args!("cannot read {OBJECTS_FORMAT_FILE}: {err}"))),
        };
        let m = parse_marker(&text, |what| {
            e(&format_args!("{OBJECTS_FORMAT_FILE} {what}"))
        })?;
        Ok(Some(m))
    }

    /// Opens the PLog itself, shared by many hosts that each hold a handle on it (the
    /// composite store's PLog): its `FORMAT` object read (with [`Access::Write`], created first
    /// if absent with `bundle_events`, and a store of format 1 continued in the current one);
    /// scanned read-only first, so that a hole, a broken link or a damaged event refuses it
    /// before anything is written; then opened with `access`, merged objects deleted after
    /// [`REMOTE_DELETE_DELAY`] as on S3. `local`: the directory the objects are files of, so
    /// that appends sync them.
    pub fn open_plog(
        &self, local: Option<&Path>, bundle_events: Option<u64>, access: Access,
    ) -> Result<ObjectPlog, StorageError> {
        let wanted = ObjectFormat::for_writing();
        let create = (access == Access::Write).then_some((bundle_events, wanted));
        let marker = self.marker(create)?.ok_or_else(|| {
            StorageError(format!(
                "object store {}: no sequencer PLog there (no {OBJECTS_FORMAT_FILE} object)",
                self.url
            ))
        })?;
        let format = match access {
            Access::Write => marker.format.max(wanted),
            Access::ReadOnly => marker.format,
        };
        let options = PlogOptions {
            format,
            delete_delay: REMOTE_DELETE_DELAY,
            ..PlogOptions::new(marker.bundle, access)
        };
        let open = |access| {
            let options = PlogOptions { access, ..options };
            ObjectPlog::open_with(self.objects.clone(), local.map(Path::to_path_buf), options)
        };
        if access == Access::ReadOnly {
            return open(Access::ReadOnly);
        }
        let scanned = open(Access::ReadOnly)?;
        if let Some(e) = scanned.damaged() {
            return Err(e);
        }
        drop(scanned);
        if marker.format < format {
            self.rewrite_marker(&Marker { format, ..marker })?;
        }
        open(Access::Write)
    }

    /// The PLog's objects as files under the directory `dir` (created, with its parent, when
    /// missing and `create`), named `dir` in messages.
    pub fn directory(dir: &Path, create: bool) -> Result<Self, StorageError> {
        if create {
            std::fs::create_dir_all(dir).map_err(|e| os_err(dir.display(), e))?;
        }
        if !dir.is_dir() {
            return Err(StorageError(format!(
                "object store {}: there is none",
                dir.display()
            )));
        }
        let fs = LocalFileSystem::new_with_prefix(dir).map_err(|e| os_err(dir.display(), e))?;
        Ok(Self {
            url: dir.display().to_string(),
            objects: Arc::new(fs),
            failure: None,
            retries: None,
        })
    }

    /// Rewrites the PLog's `FORMAT` object as `m` says (a store of format 1 upgraded before
    /// objects of format 2 are written into it).
    pub(super) fn rewrite_marker(&self, m: &Marker) -> Result<(), StorageError> {
        let line = marker_line(m.format, m.bundle, None);
        block_on(
            self.objects
                .put(&ObjPath::from(OBJECTS_FORMAT_FILE), PutPayload::from(line)),
        )
        .map(|_| ())
        .map_err(|err| {
            StorageError(format!(
                "object store {}: cannot rewrite {OBJECTS_FORMAT_FILE}: {err}",
                self.url
            ))
        })
    }
}

#[cfg(feature = "s3")]
impl RemotePlog {
    /// The PLog on S3 at `url` (`s3://BUCKET/PREFIX`, configured from the `AWS_*` environment
    /// variables). With `wait`, the store reports a failure once S3 has answered no request
    /// for that long (each retried first); without, never.
    pub(crate) fn s3(url: &str, wait: Option<std::time::Duration>) -> Result<Self, StorageError> {
        let location = crate::store::objects::s3::S3Location::parse(url)?;
        let s3 = crate::store::objects::s3::connect(&location)?;
        let outage = s3.outage;
        let failure =
            wait.map(|wait| -> RemoteFailure { Arc::new(move || outage.longer_than(wait)) });
        Ok(Self {
            url: location.url(),
            objects: s3.objects,
            failure,
            retries: Some(s3.retries),
        })
    }
}
