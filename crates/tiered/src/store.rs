//! Opening a store from a URL: `file:///dir` (always; the directory Kafka's
//! `LocalTieredStorage` takes as its `dir`) and, with the `aws` feature, `s3://bucket/prefix`.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::path::Path;

use crate::{Error, Result};

/// A store and the root prefix inside it under which the layout lives.
#[derive(Debug, Clone)]
pub struct StoreRoot {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// The prefix in it (empty for `file://`: the directory is the root).
    pub root: Path,
}

/// Opens the store a URL names. `file:///abs/dir` creates the directory when missing, and its
/// store fsyncs every object it writes (the file, then its directory) before the write
/// answers: a `file://` store is as durable as S3's answer is, so a COPY_SEGMENT_FINISHED it
/// acknowledged (which lets local retention delete the segment) still has its record and
/// its data after a power loss. object_store's `LocalFileSystem` does not fsync by default.
/// `s3://bucket[/prefix]` (feature `aws`) takes its credentials, region and endpoint from the
/// usual `AWS_*` variables (`AWS_ENDPOINT`, `AWS_ALLOW_HTTP=true` for a local server).
///
/// # Errors
/// [`Error::BadName`] for a URL of another scheme or a relative path; [`Error::Io`] when the
/// directory cannot be created; [`Error::Store`] when the store cannot be built.
pub fn open_store(url: &str) -> Result<StoreRoot> {
    let bad = |reason| Error::BadName {
        name: url.to_owned(),
        what: "store URL",
        reason,
    };
    if let Some(dir) = url.strip_prefix("file://") {
        let dir = std::path::Path::new(dir);
        if !dir.is_absolute() {
            return Err(bad(
                "a file:// URL names an absolute directory (file:///path)",
            ));
        }
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            op: "create",
            path: dir.to_path_buf(),
            source,
        })?;
        let store = LocalFileSystem::new_with_prefix(dir)
            .map_err(|source| Error::Store {
                op: "open",
                key: url.to_owned(),
                source,
            })?
            .with_fsync(true);
        return Ok(StoreRoot {
            store: Arc::new(store),
            root: Path::default(),
        });
    }
    if let Some(rest) = url.strip_prefix("s3://") {
        return open_s3(url, rest);
    }
    Err(bad(if cfg!(feature = "aws") {
        "the schemes are file:// and s3://"
    } else {
        "the scheme is file:// (s3:// needs the `aws` feature)"
    }))
}

#[cfg(feature = "aws")]
fn open_s3(url: &str, rest: &str) -> Result<StoreRoot> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(Error::BadName {
            name: url.to_owned(),
            what: "store URL",
            reason: "s3:// needs a bucket",
        });
    }
    let builder = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
    Ok(StoreRoot {
        store: s3_store(builder, url)?,
        root: Path::from(prefix),
    })
}

/// Builds an S3 store, first installing rustls's ring provider as the process default (the
/// `aws` feature's TLS stack has no other; installing twice is harmless).
///
/// # Errors
/// [`Error::Store`] naming `what` when the builder's settings do not make a store.
#[cfg(feature = "aws")]
pub fn s3_store(
    builder: object_store::aws::AmazonS3Builder,
    what: &str,
) -> Result<Arc<dyn ObjectStore>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = builder.build().map_err(|source| Error::Store {
        op: "open",
        key: what.to_owned(),
        source,
    })?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "aws"))]
fn open_s3(url: &str, _rest: &str) -> Result<StoreRoot> {
    Err(Error::BadName {
        name: url.to_owned(),
        what: "store URL",
        reason: "s3:// needs seglog-tiered's `aws` feature, not in this build",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_open_or_say_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().join("remote").display());
        let opened = open_store(&url).unwrap();
        assert_eq!(opened.root, Path::default());
        assert!(dir.path().join("remote").is_dir());
        // `LocalFileSystem` shows its fsync setting only in its `Debug` form.
        let debug = format!("{:?}", opened.store);
        assert!(debug.contains("fsync: true"), "{debug}");
        for url in ["file://relative/dir", "http://x", "remote", "s3://"] {
            assert!(
                matches!(
                    open_store(url),
                    Err(Error::BadName {
                        what: "store URL",
                        ..
                    })
                ),
                "{url}"
            );
        }
    }
}
