//! The remote tier against a real S3 wire protocol: moto's server (`pip install
//! "moto[server]"`), started on 127.0.0.1 with a free port by the test and stopped on every exit
//! path. Without `moto_server` on PATH the test prints why and passes, except under `CI=true`,
//! where it fails (`.ci/run` installs it).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions};
use seglog_tiered::{
    IndexType, Layout, LogSegmentData, Part, PartitionTier, SegmentToCopy, TopicIdPartition, Uuid,
};

/// A running `moto_server`, killed when dropped (its output kept in a temp file, printed if
/// it did not come up).
struct Moto {
    child: Child,
    port: u16,
    _log: tempfile::NamedTempFile,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// Starts moto, or says why not: `None` outside CI when the binary is missing.
    fn start() -> Option<Moto> {
        let found = Command::new("moto_server")
            .arg("--help")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "moto_server is not installed (CI=true): pip install \"moto[server]\""
            );
            eprintln!("skipped: moto_server not found (pip install \"moto[server]\")");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let moto = Moto {
            child,
            port,
            _log: log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if moto
                .request("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
            {
                return Some(moto);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut text = String::new();
        let _ = std::fs::File::open(moto._log.path()).and_then(|mut f| f.read_to_string(&mut text));
        panic!("moto_server did not answer on port {port} within 30 s; its output:\n{text}");
    }

    fn request(&self, raw: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream.write_all(raw.as_bytes()).ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        Some(answer)
    }

    /// A new bucket (moto does not check signatures, so a bare PUT creates it).
    fn bucket(&self, name: &str) -> Arc<dyn ObjectStore> {
        let answer = self.request(&format!("PUT /{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let builder = AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", self.port))
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_bucket_name(name);
        seglog_tiered::s3_store(builder, name).unwrap()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn copy_read_recover_and_delete_over_s3() {
    let Some(moto) = Moto::start() else { return };
    let rt = runtime();
    let store = moto.bucket("seglog-tier");
    let tp = TopicIdPartition::new("orders", 3, Uuid::from_halves(11, 12)).unwrap();
    // S3 parts are at least 5 MiB: a 6 MiB .log goes up in two.
    let tier = PartitionTier::new(store.clone(), Layout::new(Path::from("prefix"), tp), 1)
        .with_part_size(5 << 20);
    let log: Vec<u8> = (0..6u32 << 20).map(|i| (i % 251) as u8).collect();
    let segment = SegmentToCopy {
        base_offset: 0,
        next_base_offset: 1000,
        max_timestamp_ms: 5,
        size_in_bytes: log.len() as u64,
        segment_leader_epochs: vec![(0, 0)],
        data: LogSegmentData {
            log: Part::Bytes(Bytes::from(log.clone())),
            offset_index: Part::Bytes(Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 9])),
            time_index: Part::Bytes(Bytes::from_static(&[7; 12])),
            txn_index: None,
            producer_snapshot: Part::Bytes(Bytes::from_static(b"snap")),
            leader_epochs: vec![(0, 0)],
        },
    };
    let done = rt.block_on(tier.copy_segment(&segment)).unwrap();
    assert_eq!(
        rt.block_on(tier.segments()).unwrap(),
        std::slice::from_ref(&done)
    );
    let range = rt
        .block_on(
            tier.rsm()
                .fetch_log_segment(&done, 4 << 20, Some((5 << 20) + 99)),
        )
        .unwrap();
    assert_eq!(range.as_ref(), &log[4 << 20..(5 << 20) + 100]);
    assert_eq!(
        rt.block_on(tier.rsm().fetch_index(&done, IndexType::Timestamp))
            .unwrap()
            .as_ref(),
        &[7; 12]
    );
    assert!(
        rt.block_on(tier.rsm().fetch_index(&done, IndexType::Transaction))
            .unwrap_err()
            .is_not_found()
    );
    // The conditional create is real: a second create of a slot fails with AlreadyExists.
    let slot = tier.layout().metadata_slot_key(0, done.segment_id, 0);
    let again = rt.block_on(store.put_opts(
        &slot,
        Bytes::from_static(b"{}").into(),
        PutOptions::from(PutMode::Create),
    ));
    assert!(
        matches!(again, Err(object_store::Error::AlreadyExists { .. })),
        "{again:?}"
    );
    // An orphan part (no metadata at all) is cleaned up by recovery; the finished segment stays.
    let orphan_id = Uuid::random();
    let data = tier
        .layout()
        .data_key(1000, orphan_id, seglog_tiered::FileKind::Segment);
    rt.block_on(store.put(&data, Bytes::from_static(b"partial").into()))
        .unwrap();
    let report = rt.block_on(tier.recover()).unwrap();
    assert_eq!(report.orphans, 1);
    assert_eq!(
        rt.block_on(tier.segments()).unwrap(),
        std::slice::from_ref(&done)
    );
    rt.block_on(tier.delete_segment(&done)).unwrap();
    let left: Vec<_> = rt
        .block_on(futures_util::TryStreamExt::try_collect::<Vec<_>>(
            store.list(None),
        ))
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    drop(moto);
}
