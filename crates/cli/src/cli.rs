//! The command-line interface: every subcommand, flag and default.
//!
//! This file is the contract that scripts rely on: subcommand names, flag names and the
//! meaning of each flag. Change it only by adding.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `seglog`: open, inspect, verify and repair Kafka-compatible partition logs.
#[derive(Debug, Parser)]
#[command(name = "seglog", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Hide progress bars (they are only drawn when stderr is a terminal anyway).
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Print the log's events on stderr: `-v` what an operator wants (opens, rolls,
    /// recoveries, retention, truncations), `-vv` developer detail, `-vvv` everything.
    /// `RUST_LOG` (e.g. `RUST_LOG=seglog=debug`) overrides it.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Append records to a log (created when it does not exist).
    Produce(ProduceArgs),
    /// Print records in offset order. Read-only.
    Read(ReadArgs),
    /// Summarise a log (or every partition of a `log.dirs` root). Read-only.
    Info(InfoArgs),
    /// Print the raw contents of a `.log`, `.index`, `.timeindex` file or a directory. Read-only.
    Dump(DumpArgs),
    /// Check the consistency of a whole log. Read-only; exit 1 when anything is wrong.
    Verify(VerifyArgs),
    /// Recover every segment as after a crash, then close the log cleanly.
    Recover(RecoverArgs),
    /// Apply retention and report what was deleted.
    Retain(RetainArgs),
    /// Remove every offset at and above OFFSET (Kafka's truncateTo, at batch granularity).
    Truncate(TruncateArgs),
    /// Write a transaction marker (COMMIT or ABORT) for a producer, as a broker does for
    /// its transaction coordinator (WriteTxnMarkers).
    Marker(MarkerArgs),
    /// Run one log-cleaner round now: keep the latest record of every key (cleanup.policy=compact).
    Compact(CompactArgs),
    /// Copy the sealed segments to a remote tier in Kafka's tiered-storage layout
    /// (`seglog tier DIR --store URL`), or show what is there (`seglog tier status`).
    Tier(TierArgs),
    /// Show the engine at work: produce, roll, read, retain, crash, recover, verify, then an
    /// idempotent retry, an aborted and a committed transaction, a read_committed scan and a
    /// compaction round.
    Demo(DemoArgs),
}

/// How keys, values and header values are written as JSON strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Encoding {
    /// UTF-8 text. On output, invalid UTF-8 is replaced by U+FFFD, as a Kafka
    /// `StringDeserializer` would; use `hex` for exact bytes.
    #[default]
    Utf8,
    /// Lower-case hexadecimal bytes (input accepts either case).
    Hex,
}

/// Batch compression codec for `produce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum CompressionArg {
    /// No compression.
    #[default]
    None,
    /// gzip (codec 1).
    Gzip,
    /// snappy, Kafka/xerial framing (codec 2).
    Snappy,
    /// lz4 frame (codec 3).
    Lz4,
    /// zstd (codec 4).
    Zstd,
}

/// How far `read` goes and what it shows (a Kafka consumer's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum IsolationArg {
    /// Every record up to the log end offset, aborted transactions included.
    #[default]
    ReadUncommitted,
    /// Up to the last stable offset, without the records of aborted transactions.
    ReadCommitted,
}

/// `seglog produce`.
#[derive(Debug, Args)]
pub struct ProduceArgs {
    /// Partition directory (created when it does not exist).
    pub dir: PathBuf,
    /// JSON Lines input, one record per line; `-` reads standard input.
    #[arg(long, value_name = "FILE|-", conflicts_with = "count")]
    pub input: Option<PathBuf>,
    /// How keys, values and header values are written in the input.
    #[arg(long, value_enum, default_value_t = Encoding::Utf8)]
    pub encoding: Encoding,
    /// Records per batch.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub batch_records: u32,
    /// Batch compression.
    #[arg(long, value_enum, default_value_t = CompressionArg::None)]
    pub compression: CompressionArg,
    /// fsync every batch before reporting it (with `--json`, a line is printed only once
    /// its batch is durable).
    #[arg(long)]
    pub durable: bool,
    /// Generate N synthetic records instead of reading `--input`.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Value size of each synthetic record, in bytes.
    #[arg(long, value_name = "B", requires = "count")]
    pub record_bytes: Option<usize>,
    /// Topic configuration override, Kafka names (e.g. `segment.bytes=1048576`). Repeatable.
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub config: Vec<String>,
    /// Write as the idempotent producer P (batches carry its id, epoch and sequences; a
    /// retry of one of its last 5 batches is answered from the log's deduplication cache).
    #[arg(long, value_name = "P", requires = "producer_epoch",
          value_parser = clap::value_parser!(i64).range(0..))]
    pub producer_id: Option<i64>,
    /// The producer's epoch (with `--producer-id`).
    #[arg(long, value_name = "E", requires = "producer_id",
          value_parser = clap::value_parser!(i16).range(0..))]
    pub producer_epoch: Option<i16>,
    /// Sequence of the first record (with `--producer-id`); later batches follow on.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "producer_id",
          value_parser = clap::value_parser!(i32).range(0..))]
    pub base_sequence: i32,
    /// Write the batches as part of the producer's transaction (end it with `seglog marker`).
    #[arg(long, requires = "producer_id")]
    pub transactional: bool,
    /// Print one JSON line per appended batch: `{"base_offset": N, "last_offset": N}` (and
    /// `"duplicate": true` for a retry the log answered from its cache).
    #[arg(long)]
    pub json: bool,
}

/// `seglog marker`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("result").required(true).args(["commit", "abort"])))]
pub struct MarkerArgs {
    /// Partition directory.
    pub dir: PathBuf,
    /// The producer whose transaction ends.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(i64).range(0..))]
    pub producer_id: i64,
    /// The producer's epoch.
    #[arg(long, value_name = "E", value_parser = clap::value_parser!(i16).range(0..))]
    pub producer_epoch: i16,
    /// Commit the transaction.
    #[arg(long)]
    pub commit: bool,
    /// Abort the transaction.
    #[arg(long)]
    pub abort: bool,
    /// The transaction coordinator's epoch.
    #[arg(long, value_name = "C", default_value_t = 0)]
    pub coordinator_epoch: i32,
    /// The transaction version the marker is written under (Kafka's `transaction.version`):
    /// 0 or 1, a marker's epoch must not be below the producer's; 2 (transactions v2), it
    /// must be above it, except a repeat of a completed marker at the current epoch. Default
    /// 0, what a WriteTxnMarkers request without the field carries.
    #[arg(long, value_name = "V", default_value_t = 0,
          value_parser = clap::value_parser!(i16).range(0..=2))]
    pub transaction_version: i16,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `seglog read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// Partition directory.
    pub dir: PathBuf,
    /// First offset to print (default: the log start offset).
    #[arg(long, value_name = "OFFSET", conflicts_with = "from_timestamp",
          value_parser = clap::value_parser!(i64).range(0..))]
    pub from: Option<i64>,
    /// Start at the first record whose timestamp is at least MS. Kafka's ListOffsets markers
    /// are accepted too: -1 (LATEST: the log end), -2 (EARLIEST: the log start), -3 (the
    /// record with the largest timestamp), -4 (EARLIEST_LOCAL: the local log start), -5
    /// (LATEST_TIERED: the highest offset in remote storage), -6 (EARLIEST_PENDING_UPLOAD:
    /// the first offset not yet in remote storage); nothing is printed when the answer is
    /// offset -1 (no remote storage, or nothing tiered).
    #[arg(long, value_name = "MS", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-6..))]
    pub from_timestamp: Option<i64>,
    /// Stop after N records.
    #[arg(long, value_name = "N")]
    pub max_records: Option<u64>,
    /// How keys, values and header values are printed.
    #[arg(long, value_enum, default_value_t = Encoding::Utf8)]
    pub encoding: Encoding,
    /// Also print control records (transaction markers, KRaft control records).
    #[arg(long)]
    pub include_control: bool,
    /// `read-uncommitted` (every record to the log end) or `read-committed` (stop at the last
    /// stable offset and drop the records of aborted transactions, as a Kafka consumer does).
    #[arg(long, value_enum, default_value_t = IsolationArg::ReadUncommitted)]
    pub isolation: IsolationArg,
    /// One JSON object per record.
    #[arg(long)]
    pub json: bool,
    /// The remote tier of a tiered partition (read across both tiers).
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `seglog info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Partition directory, or a `log.dirs` root holding partition directories.
    pub dir: PathBuf,
    /// One JSON object per partition.
    #[arg(long)]
    pub json: bool,
    /// The remote tier of a tiered partition (its remote segments are listed too).
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `seglog dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// A `.log`, `.index`, `.timeindex` or `.txnindex` file, or a directory.
    pub path: PathBuf,
    /// Also print every record of every batch.
    #[arg(long)]
    pub records: bool,
    /// How keys, values and header values are printed with `--records`.
    #[arg(long, value_enum, default_value_t = Encoding::Utf8)]
    pub encoding: Encoding,
    /// One JSON object per batch or index entry.
    #[arg(long)]
    pub json: bool,
    /// The largest batch accepted, in bytes: a length field above it is reported as
    /// corruption at its position (files are streamed; memory stays bounded by this).
    #[arg(long, value_name = "B", default_value_t = crate::log_stream::DEFAULT_MAX_BATCH_BYTES,
          value_parser = clap::value_parser!(u32).range(61..))]
    pub max_batch_bytes: u32,
}

/// `seglog verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Partition directory.
    pub dir: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The largest batch accepted, in bytes: a length field above it is reported as
    /// corruption at its position (files are streamed; memory stays bounded by this).
    #[arg(long, value_name = "B", default_value_t = crate::log_stream::DEFAULT_MAX_BATCH_BYTES,
          value_parser = clap::value_parser!(u32).range(61..))]
    pub max_batch_bytes: u32,
    /// The remote tier of a tiered partition (its finished segments are checked too).
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// The remote tier of a tiered partition, for the read-only commands (`read`, `info`,
/// `verify`): nothing in the store is written.
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteArgs {
    /// The store of the partition's remote tier: `file:///abs/dir`, or `s3://bucket/prefix` in
    /// a build with the `s3` feature (as `seglog tier --store`).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The topic id in the remote object names (Kafka's Uuid text); default: the `topic_id`
    /// of the directory's `partition.metadata`. Only with `--store`.
    #[arg(long, value_name = "UUID", requires = "store")]
    pub topic_id: Option<String>,
}

/// `seglog recover`.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// Partition directory, or a `log.dirs` root: then every partition is recovered, in
    /// parallel on `--recovery-threads` threads, with a progress bar on a terminal.
    pub dir: PathBuf,
    /// The threads a `log.dirs` root's partitions are recovered on (Kafka's
    /// `num.recovery.threads.per.data.dir`).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(i32).range(1..))]
    pub recovery_threads: i32,
    /// Also cut damage in data that was flushed (Kafka's rule: everything from the first bad
    /// batch of a segment on, and every later segment). Without it, flushed data is never
    /// cut: damaged bytes stay on disk, later segments are kept, and the run exits 1 saying
    /// where the damage is.
    #[arg(long)]
    pub truncate_damaged: bool,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `seglog truncate`.
#[derive(Debug, Args)]
pub struct TruncateArgs {
    /// Partition directory.
    pub dir: PathBuf,
    /// The new log end offset: every offset at and above it is removed. Kafka truncates whole
    /// batches: a batch holding OFFSET goes entirely, also its records below OFFSET.
    #[arg(long, value_name = "OFFSET", value_parser = clap::value_parser!(i64).range(0..))]
    pub to: i64,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `seglog compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Partition directory.
    pub dir: PathBuf,
    /// The current time, in ms since the epoch (default: the clock): tombstone horizons
    /// (`delete.retention.ms`) and compaction lags are measured against it.
    #[arg(long, value_name = "MS")]
    pub now: Option<i64>,
    /// A setting in Kafka's topic syntax, e.g. `delete.retention.ms=0` (repeatable); the log
    /// is compacted (`cleanup.policy=compact`) unless this says `compact,delete`.
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub config: Vec<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `seglog retain`.
#[derive(Debug, Args)]
pub struct RetainArgs {
    /// Partition directory.
    pub dir: PathBuf,
    /// Delete segments whose largest timestamp is more than MS older than `--now`
    /// (`retention.ms`; negative = unlimited).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub retention_ms: Option<i64>,
    /// Delete oldest segments while the log is larger than B bytes
    /// (`retention.bytes`; negative = unlimited).
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub retention_bytes: Option<i64>,
    /// Raise the log start offset to N first (like Kafka's DeleteRecords).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(0..))]
    pub log_start_offset: Option<i64>,
    /// The current time for time retention, in ms since the epoch (default: the clock).
    #[arg(long, value_name = "MS")]
    pub now: Option<i64>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl Command {
    /// Whether the command never writes in the log directory (`read`, `info`, `dump`,
    /// `verify`).
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            Command::Read(_)
                | Command::Info(_)
                | Command::Dump(_)
                | Command::Verify(_)
                | Command::Tier(TierArgs {
                    action: Some(TierAction::Status(_)),
                    ..
                })
        )
    }
}

/// `seglog tier`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct TierArgs {
    /// `status`: show the remote tier instead of copying.
    #[command(subcommand)]
    pub action: Option<TierAction>,
    /// What to copy and where.
    #[command(flatten)]
    pub copy: TierCopyArgs,
}

/// `seglog tier status`.
#[derive(Debug, Subcommand)]
pub enum TierAction {
    /// The remote segments of a partition and their states, and what is still only local.
    /// Read-only.
    Status(TierTarget),
}

/// The partition and the store of a `seglog tier` command.
#[derive(Debug, Args)]
pub struct TierTarget {
    /// Partition directory (`<topic>-<partition>`: its name gives the remote layout's topic
    /// and partition).
    #[arg(required = true)]
    pub dir: Option<PathBuf>,
    /// The store: `file:///abs/dir` (Kafka's `LocalTieredStorage` reads it with `dir=` that
    /// directory), or `s3://bucket/prefix` in a build with the `s3` feature.
    #[arg(long, value_name = "URL", required = true)]
    pub store: Option<String>,
    /// The topic id (Kafka's Uuid text); default: the `topic_id` of the directory's
    /// `partition.metadata`.
    #[arg(long, value_name = "UUID")]
    pub topic_id: Option<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `seglog tier DIR --store URL`.
#[derive(Debug, Args)]
pub struct TierCopyArgs {
    /// The partition and the store.
    #[command(flatten)]
    pub target: TierTarget,
    /// After copying, delete local segments wholly in the remote tier while the local part is
    /// larger than B bytes (`local.retention.bytes`; default: keep them all).
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub local_retention_bytes: Option<i64>,
    /// ... or older than MS (`local.retention.ms`).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub local_retention_ms: Option<i64>,
    /// Remote retention over the whole log: delete the oldest remote segments while it is
    /// larger than B bytes (`retention.bytes`; default: unlimited).
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub retention_bytes: Option<i64>,
    /// ... or whose records are older than MS (`retention.ms`; default: unlimited).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub retention_ms: Option<i64>,
    /// The current time for time retention, in ms since the epoch (default: the clock).
    #[arg(long, value_name = "MS")]
    pub now: Option<i64>,
    /// Instead of copying: adopt the segments a Kafka broker tiered to the store with
    /// `LocalTieredStorage` (`dir=` the store's directory) into seglog's remote metadata, so
    /// seglog reads them. Copies and deletes nothing; the partition directory is only read.
    #[arg(long, conflicts_with_all = ["local_retention_bytes", "local_retention_ms", "retention_bytes", "retention_ms", "now"])]
    pub adopt: bool,
}

/// `seglog demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the demo log (default: a temporary directory, removed afterwards).
    pub dir: Option<PathBuf>,
    /// How many records to produce (1,000 to 100,000,000; about 120 bytes each on disk).
    #[arg(long, value_name = "N", default_value_t = 2_000_000,
          value_parser = clap::value_parser!(u64).range(1000..=100_000_000))]
    pub records: u64,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn produce_flags_parse() {
        let cli = Cli::try_parse_from([
            "seglog",
            "produce",
            "d",
            "--input",
            "-",
            "--encoding",
            "hex",
            "--batch-records",
            "7",
            "--compression",
            "zstd",
            "--durable",
            "--config",
            "segment.bytes=1048576",
            "--config",
            "index.interval.bytes=10",
            "--json",
        ])
        .unwrap();
        let Command::Produce(args) = cli.command else {
            panic!("not produce")
        };
        assert_eq!(args.input.as_deref(), Some(std::path::Path::new("-")));
        assert_eq!(args.encoding, Encoding::Hex);
        assert_eq!(args.batch_records, 7);
        assert_eq!(args.compression, CompressionArg::Zstd);
        assert!(args.durable && args.json);
        assert_eq!(args.config.len(), 2);
    }

    #[test]
    fn conflicting_flags_are_rejected() {
        assert!(
            Cli::try_parse_from([
                "seglog",
                "read",
                "d",
                "--from",
                "1",
                "--from-timestamp",
                "5"
            ])
            .is_err()
        );
        assert!(
            Cli::try_parse_from(["seglog", "produce", "d", "--input", "x", "--count", "5"])
                .is_err()
        );
        assert!(Cli::try_parse_from(["seglog", "read", "d", "--from", "-1"]).is_err());
        assert!(Cli::try_parse_from(["seglog", "produce", "d", "--batch-records", "0"]).is_err());
    }

    #[test]
    fn quiet_is_global() {
        let cli = Cli::try_parse_from(["seglog", "verify", "d", "--quiet"]).unwrap();
        assert!(cli.quiet);
        let cli = Cli::try_parse_from(["seglog", "-q", "demo", "--records", "5000"]).unwrap();
        assert!(cli.quiet);
    }

    #[test]
    fn retain_accepts_negative_retention() {
        let cli = Cli::try_parse_from([
            "seglog",
            "retain",
            "d",
            "--retention-ms",
            "-1",
            "--now",
            "5",
        ])
        .unwrap();
        let Command::Retain(args) = cli.command else {
            panic!("not retain")
        };
        assert_eq!(args.retention_ms, Some(-1));
        assert_eq!(args.now, Some(5));
    }
}
