//! Where a store is: [`StoreUrl`], parsed once from its text.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::error::OpenError;

/// Where a store is: a URL parsed once ([`FromStr`]); see [`store::open`](crate::store::open) for
/// the forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    /// In memory: nothing is kept after the process ends.
    Memory,
    /// redb in a data directory: the options' ([`OpenOptions::data`]), or its own.
    Redb(Option<PathBuf>),
    /// The PLog on object storage in a local directory (the options' data directory, or its
    /// own), one object per append merged into bundles, the view in redb beside it.
    Objects(Option<PathBuf>),
    /// The PLog on S3 (`s3://BUCKET/PREFIX`, configured from the `AWS_*` variables), the view
    /// in redb in the data directory.
    ObjectsS3(String),
    /// An etcd cluster, `etcd://HOST:PORT,HOST:PORT,...`: shared by many hosts, fenced appends.
    Etcd(String),
}

impl StoreUrl {
    /// The backend's one name: the store's folder, cargo feature and URL scheme.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redb(_) => "redb",
            Self::Objects(_) | Self::ObjectsS3(_) => "objects",
            Self::Etcd(_) => "etcd",
        }
    }

    /// Whether other hosts may append to the same PLog (etcd, a PLog on S3): an append refused
    /// by the fence then means "actualize and go on", not a bug.
    pub fn shared(&self) -> bool {
        matches!(self, Self::ObjectsS3(_) | Self::Etcd(_))
    }

    /// The local directory that holds the store (redb), or its view and layout (objects):
    /// its own, or `data`. `None` for memory and etcd.
    pub fn local_dir(&self, data: &Path) -> Option<PathBuf> {
        match self {
            Self::Redb(dir) | Self::Objects(dir) => {
                Some(dir.clone().unwrap_or_else(|| data.to_path_buf()))
            }
            Self::ObjectsS3(_) => Some(data.to_path_buf()),
            Self::Memory | Self::Etcd(_) => None,
        }
    }
}

impl FromStr for StoreUrl {
    type Err = OpenError;

    fn from_str(s: &str) -> Result<Self, OpenError> {
        let dir = |rest: &str| (!rest.is_empty()).then(|| PathBuf::from(rest));
        match s {
            "memory" => Ok(Self::Memory),
            "redb" | "embedded" => Ok(Self::Redb(None)),
            "objects" => Ok(Self::Objects(None)),
            _ if s.starts_with("etcd://") => Ok(Self::Etcd(s.to_string())),
            _ if s.starts_with("objects:s3://") => {
                Ok(Self::ObjectsS3(s["objects:".len()..].to_string()))
            }
            _ => match s.split_once(':') {
                Some(("redb", rest)) if dir(rest).is_some() => Ok(Self::Redb(dir(rest))),
                Some(("objects", rest)) if dir(rest).is_some() => Ok(Self::Objects(dir(rest))),
                _ => Err(OpenError::UnknownUrl(s.to_string())),
            },
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory => f.write_str("memory"),
            Self::Redb(None) => f.write_str("redb"),
            Self::Redb(Some(dir)) => write!(f, "redb:{}", dir.display()),
            Self::Objects(None) => f.write_str("objects"),
            Self::Objects(Some(dir)) => write!(f, "objects:{}", dir.display()),
            Self::ObjectsS3(url) => write!(f, "objects:{url}"),
            Self::Etcd(url) => f.write_str(url),
        }
    }
}
