//! The PLog's objects when they are not in the root (S3): where they are, the object store,
//! when it counts as failed, and its `FORMAT` object, which every host of one PLog reads its
//! bundle size from.

use std::sync::Arc;

use futures::executor::block_on;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::store::objects::marker::{Marker, OBJECTS_FORMAT_FILE, marker_line, parse_marker};
use crate::store::objects::object::ObjectFormat;
use crate::store::objects::plog::DEFAULT_BUNDLE_EVENTS;
use crate::store::storage::StorageError;

/// Says why a remote PLog takes no writes (it has not answered for too long), if it does not.
pub type RemoteFailure = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The PLog's objects when they are not in the root: an object store elsewhere (S3).
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
        &self,
        create: Option<(Option<u64>, ObjectFormat)>,
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
    pub(super) fn s3(url: &str, wait: Option<std::time::Duration>) -> Result<Self, StorageError> {
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
