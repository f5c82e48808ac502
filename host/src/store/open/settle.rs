//! The rules every backend's opener applies: the layout rule at open (before anything is
//! written, then once the store is open), the largest event, a backend this build lacks.

use crate::store::layout::{self, Layout, Settled};
use crate::store::reader::StoreReader;

use super::error::OpenError;
use super::options::OpenOptions;
use super::url::StoreUrl;

/// The refusal of a URL whose backend this build lacks.
pub(super) fn not_built(url: &StoreUrl) -> OpenError {
    let feature = match url {
        StoreUrl::ObjectsS3(_) => "s3",
        StoreUrl::EtcdObjects {
            plog: super::url::PlogPlace::S3(_),
            ..
        } => "etcd,s3",
        StoreUrl::EtcdObjects { .. } => "etcd,objects",
        other => other.backend(),
    };
    OpenError::NotBuilt {
        url: url.to_string(),
        feature,
    }
}

/// Refuses, before anything is written, an event larger than one write of a store whose
/// append limits are `limits` (see [`OpenOptions::largest_event`]).
pub(super) fn refuse_large_events(
    options: &OpenOptions, limits: crate::store::storage::AppendLimits,
) -> Result<(), OpenError> {
    match options.largest_event {
        Some(largest) if largest > limits.max_bytes => Err(OpenError::EventTooLarge {
            largest,
            max: limits.max_bytes,
        }),
        _ => Ok(()),
    }
}

#[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
/// Settles the layout of a store whose record is `recorded` (read before anything was
/// written) against the layout asked for: refuses a difference. `store` names the store.
pub(super) fn refuse_another(
    recorded: Option<&Layout>, options: &OpenOptions, store: &dyn Fn() -> String,
    backend: &'static str,
) -> Result<(), OpenError> {
    if let (Some(r), Some(wanted)) = (recorded, &options.layout) {
        layout::settle(Some(r), wanted, &[]).map_err(|refusal| OpenError::Layout {
            store: store(),
            backend,
            refusal,
        })?;
    }
    Ok(())
}

/// After the store is open: the layout it numbers by. A store that records one keeps it (the
/// opener's was compared already); one that records none takes the opener's, unless it holds a
/// partition that layout lacks, through `record` (which answers the layout that holds, for a
/// store where another opener may record first).
pub(super) fn settle_open(
    recorded: Option<Layout>, options: &OpenOptions, reader: &dyn StoreReader, created: bool,
    store: &dyn Fn() -> String, backend: &'static str,
    record: impl FnOnce(&Layout) -> Result<Layout, OpenError>,
) -> Result<Option<Layout>, OpenError> {
    let Some(wanted) = &options.layout else {
        return Ok(recorded);
    };
    let refused = |refusal| OpenError::Layout {
        store: store(),
        backend,
        refusal,
    };
    let held = match &recorded {
        Some(_) => Vec::new(),
        None => reader.partitions()?,
    };
    match layout::settle(recorded.as_ref(), wanted, &held).map_err(refused)? {
        Settled::Recorded => Ok(recorded),
        Settled::Record => {
            let holds = record(wanted)?;
            layout::settle(Some(&holds), wanted, &[]).map_err(refused)?;
            // A store that holds partitions but no layout was made before layouts were
            // recorded; an empty one (an etcd cluster a first host opens) is simply new.
            if !created && recorded.is_none() && !held.is_empty() {
                tracing::info!(
                    "{}: recorded the numbering layout ({} partitions) of a store made before layouts were recorded",
                    store(),
                    wanted.partitions
                );
            }
            Ok(Some(holds))
        }
    }
}
