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
    /// redb in a data directory: the options' ([`OpenOptions::data`](super::OpenOptions::data)), or its own.
    Redb(Option<PathBuf>),
    /// The PLog on object storage in a local directory (the options' data directory, or its
    /// own), one object per append merged into bundles, the view in redb beside it.
    Objects(Option<PathBuf>),
    /// The PLog on S3 (`s3://BUCKET/PREFIX`, configured from the `AWS_*` variables), the view
    /// in redb in the data directory.
    ObjectsS3(String),
    /// An etcd cluster, `etcd://HOST:PORT,HOST:PORT,...`: shared by many hosts, fenced appends.
    Etcd(String),
    /// The composite store, `etcd://HOST:PORT,...?plog=objects:DIR` or
    /// `etcd://HOST:PORT,...?plog=objects:s3://BUCKET/PREFIX`: the PLog on object storage, the
    /// view, the stored next offsets and the ownership on the etcd cluster; shared by many hosts.
    EtcdObjects {
        /// The cluster, `etcd://HOST:PORT,...` (without the query).
        etcd: String,
        /// Where the PLog's objects are.
        plog: PlogPlace,
    },
}

/// Where the composite store's PLog is ([`StoreUrl::EtcdObjects`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlogPlace {
    /// A directory every host reaches (local, or a shared file system that links atomically),
    /// named by an absolute path.
    Dir(PathBuf),
    /// S3, `s3://BUCKET/PREFIX` (configured from the `AWS_*` variables).
    S3(String),
}

/// The query that names the composite store's PLog in an `etcd://` URL.
const PLOG_QUERY: &str = "?plog=objects:";

impl StoreUrl {
    /// The backend's one name: the store's folder, cargo feature and URL scheme.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redb(_) => "redb",
            Self::Objects(_) | Self::ObjectsS3(_) => "objects",
            Self::Etcd(_) | Self::EtcdObjects { .. } => "etcd",
        }
    }

    /// Whether other hosts may append to the same PLog (etcd, a PLog on S3): an append refused
    /// by the fence then means "actualize and go on", not a bug.
    pub fn shared(&self) -> bool {
        matches!(
            self,
            Self::ObjectsS3(_) | Self::Etcd(_) | Self::EtcdObjects { .. }
        )
    }

    /// The local directory that holds the store (redb), or its view and layout (objects):
    /// its own, or `data`. `None` for memory and etcd.
    pub fn local_dir(&self, data: &Path) -> Option<PathBuf> {
        match self {
            Self::Redb(dir) | Self::Objects(dir) => {
                Some(dir.clone().unwrap_or_else(|| data.to_path_buf()))
            }
            Self::ObjectsS3(_) => Some(data.to_path_buf()),
            Self::Memory | Self::Etcd(_) | Self::EtcdObjects { .. } => None,
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
            _ if s.starts_with("etcd://") => match s.split_once(PLOG_QUERY) {
                None if s.contains('?') => Err(OpenError::UnknownUrl(s.to_string())),
                None => Ok(Self::Etcd(s.to_string())),
                Some((etcd, plog)) => {
                    let plog = match plog.strip_prefix("s3://") {
                        Some(_) => PlogPlace::S3(plog.to_string()),
                        // Every host names the same directory: one relative to each
                        // host's working directory could be another one for each.
                        None if Path::new(plog).is_absolute() => {
                            PlogPlace::Dir(PathBuf::from(plog))
                        }
                        None if dir(plog).is_some() => {
                            return Err(OpenError::Unsupported {
                                url: s.to_string(),
                                what: "the PLog's directory must be an absolute path (every host names the same one)",
                            });
                        }
                        None => return Err(OpenError::UnknownUrl(s.to_string())),
                    };
                    Ok(Self::EtcdObjects {
                        etcd: etcd.to_string(),
                        plog,
                    })
                }
            },
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
            Self::EtcdObjects { etcd, plog } => write!(f, "{etcd}?plog={plog}"),
        }
    }
}

impl fmt::Display for PlogPlace {
    /// `objects:DIR` or `objects:s3://BUCKET/PREFIX`, as the composite store's URL names it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dir(dir) => write!(f, "objects:{}", dir.display()),
            Self::S3(url) => write!(f, "objects:{url}"),
        }
    }
}
