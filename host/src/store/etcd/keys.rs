//! The key scheme (the table in the module's doc): building keys, and reading offsets and
//! numbers back out of keys and values.

use sequencer::{PLogOffset, WsId};

#[cfg(doc)]
use crate::store::layout::Layout;
use crate::store::storage::PartitionId;

/// The key of the numbering layout the first run recorded ([`Layout::to_text`]).
pub(super) const LAYOUT_KEY: &str = "layout";

/// The key that records where the store's archive of old PLog events is
/// (`ArchiveRecord::to_text`).
pub(super) const ARCHIVE_KEY: &str = "archive";

/// The key that records where the PLog of the view kept here is when it is not in the cluster
/// (the composite store's objects, `objects:DIR` or `objects:s3://BUCKET/PREFIX`).
pub(super) const PLOG_PLACE_KEY: &str = "plog-place";

pub(super) fn plog_prefix(p: PartitionId) -> String {
    format!("plog/{p}/")
}

pub(super) fn plog_key(p: PartitionId, offset: PLogOffset) -> String {
    format!("plog/{p}/{offset:020}")
}

pub(super) fn seq_prefix(p: PartitionId) -> String {
    format!("seq/{p}/")
}

/// The key of a workspace's numbers. Keys of the earlier layout, one per (workspace,
/// sequence), are `seq/<p>/<ws:020>/<seq:05>`: this key is their prefix, so a range read from
/// it to [`prefix_end`] finds both.
pub(super) fn ws_key(p: PartitionId, ws: WsId) -> String {
    format!("seq/{p}/{ws:020}")
}

pub(super) fn next_key(p: PartitionId) -> String {
    format!("next/{p}")
}

/// The prefix of the hosts' keys: `hosts/<name>`, each under its host's lease.
pub(super) const HOSTS_PREFIX: &str = "hosts/";

/// The prefix of the partitions' owner keys: `owners/<partition>`, each under its owner's
/// lease; its create revision is the owner's epoch.
pub(super) const OWNERS_PREFIX: &str = "owners/";

pub(super) fn host_key(name: &str) -> String {
    format!("{HOSTS_PREFIX}{name}")
}

pub(super) fn owner_key(p: PartitionId) -> String {
    format!("{OWNERS_PREFIX}{p}")
}

/// The end of a prefix range: the prefix with its last byte incremented ('/' + 1 is '0').
pub(super) fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

pub(super) fn parse_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

pub(super) fn offset_of(key: &[u8]) -> Option<PLogOffset> {
    std::str::from_utf8(key)
        .ok()?
        .rsplit('/')
        .next()?
        .parse()
        .ok()
}
