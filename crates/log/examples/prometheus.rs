//! Kafka's log metrics in Prometheus' text format while a log is appended to and read.
//!
//! ```text
//! cargo run -p seglog --features metrics --example prometheus -- [--records N] [--listen ADDR] [--scrapes K]
//! curl http://127.0.0.1:9898/metrics
//! ```
//!
//! Installs `metrics-exporter-prometheus`' recorder as the global `metrics` recorder (before
//! any log is opened: a log registers its series when it opens), serves `GET /metrics` on
//! `ADDR` (default `127.0.0.1:9898`; port 0 picks one) from a thread of its own, opens a log
//! `orders-0` in a temporary directory, appends `N` records (default 100,000) in batches of
//! 100 while a reader follows them, and then keeps serving until `K` scrapes were answered
//! (default: forever). The series are labelled `topic="orders",partition="0"`; their names
//! are in `seglog::metric_names` and docs/observability.md.

use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::thread::JoinHandle;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use seglog::{BatchBuilder, Clock, Isolation, Log, LogConfig, SystemClock};

type BoxError = Box<dyn Error + Send + Sync>;

/// What the example does.
pub struct Options {
    /// Records to append.
    pub records: u64,
    /// Where to serve `GET /metrics`.
    pub listen: SocketAddr,
    /// Scrapes to answer before the server stops (`None`: never stops).
    pub scrapes: Option<u64>,
}

/// A running exporter: the workload finished, the server answers scrapes.
pub struct Exporter {
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// The records appended and read back.
    pub records: u64,
    server: JoinHandle<std::io::Result<()>>,
    // The log lives as long as the exporter (its gauges keep their last values anyway).
    _log: Arc<Log>,
    _dir: tempfile::TempDir,
}

impl Exporter {
    /// Waits until the server answered its scrapes.
    ///
    /// # Errors
    /// The server's I/O error.
    pub fn wait(self) -> Result<(), BoxError> {
        self.server
            .join()
            .map_err(|_| "the metrics server panicked")??;
        Ok(())
    }
}

/// Installs the recorder, starts the server, then appends and reads `options.records`
/// records (the server answers meanwhile) and returns.
///
/// # Errors
/// A recorder already installed, the listener, the log's errors, a record read back that
/// differs from the one appended.
pub fn start(options: Options) -> Result<Exporter, BoxError> {
    let handle = PrometheusBuilder::new().install_recorder()?;
    let listener = TcpListener::bind(options.listen)?;
    let addr = listener.local_addr()?;
    let scrapes = options.scrapes;
    let server = std::thread::spawn(move || serve(&listener, &handle, scrapes));

    let dir = tempfile::tempdir()?;
    let log = Arc::new(Log::open(
        dir.path().join("orders-0"),
        LogConfig::default(),
    )?);
    let appender = {
        let log = Arc::clone(&log);
        let records = options.records;
        std::thread::spawn(move || -> Result<(), BoxError> {
            let mut next = 0u64;
            while next < records {
                let mut batch = BatchBuilder::new(0);
                let end = (next + 100).min(records);
                for i in next..end {
                    let value = i.to_be_bytes();
                    batch.append(SystemClock.now_ms(), None, Some(&value), &[]);
                }
                log.append(&batch.build()?)?;
                next = end;
            }
            Ok(())
        })
    };
    // The reader follows the appender until it has read every record.
    let mut reader = log.reader(0, Isolation::LogEnd);
    let mut read = 0u64;
    while read < options.records {
        reader.poll(|_, record| {
            let expected = read.to_be_bytes();
            if record.value() != Some(&expected[..]) {
                return Err(BoxError::from(format!("record {read} differs")));
            }
            read += 1;
            Ok(ControlFlow::Continue(()))
        })?;
        if read < options.records {
            reader.wait(std::time::Duration::from_millis(100))?;
        }
    }
    appender.join().map_err(|_| "the appender panicked")??;
    Ok(Exporter {
        addr,
        records: read,
        server,
        _log: log,
        _dir: dir,
    })
}

/// Answers `scrapes` HTTP requests (every path) with the rendered metrics.
fn serve(
    listener: &TcpListener,
    handle: &PrometheusHandle,
    scrapes: Option<u64>,
) -> std::io::Result<()> {
    let mut answered = 0u64;
    while scrapes.is_none_or(|limit| answered < limit) {
        let (stream, _) = listener.accept()?;
        answer(stream, handle)?;
        answered += 1;
    }
    Ok(())
}

fn answer(mut stream: TcpStream, handle: &PrometheusHandle) -> std::io::Result<()> {
    // The request head (ignored beyond its end: every path gets the metrics).
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        if stream.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let body = handle.render();
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn parse_options() -> Result<Options, BoxError> {
    let mut options = Options {
        records: 100_000,
        listen: "127.0.0.1:9898".parse()?,
        scrapes: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--records" => options.records = value.parse()?,
            "--listen" => options.listen = value.parse()?,
            "--scrapes" => options.scrapes = Some(value.parse()?),
            _ => return Err(format!("unknown argument {arg}").into()),
        }
    }
    Ok(options)
}

fn main() -> Result<(), BoxError> {
    let exporter = start(parse_options()?)?;
    println!(
        "appended and read {} records; metrics at http://{}/metrics",
        exporter.records, exporter.addr
    );
    exporter.wait()
}
