//! The Prometheus example (`examples/prometheus.rs`, feature `metrics`): one scrape after its
//! workload finds every series of a log with the values the workload produced.
//!
//! The only test of this binary that installs a global `metrics` recorder (a process has one).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use seglog::metric_names as names;

#[path = "../../examples/prometheus.rs"]
#[allow(dead_code)] // its `main` and argument parsing
mod example;

/// `name{labels} value` lines of the log `orders-0`, by name.
fn series_of_orders_0(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, rest)) = line.split_once('{') else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let mut labels: Vec<&str> = labels.split(',').collect();
        labels.sort_unstable();
        // Summaries (histograms) have a `quantile` label too: keep the plain series.
        if labels == ["partition=\"0\"", "topic=\"orders\""] {
            out.insert(name.to_owned(), value.trim().parse().unwrap());
        }
    }
    out
}

#[test]
fn one_scrape_finds_kafkas_log_metrics_with_the_workloads_values() {
    let records = 1_000;
    let exporter = example::start(example::Options {
        records,
        listen: "127.0.0.1:0".parse().unwrap(),
        scrapes: Some(1),
    })
    .unwrap();
    assert_eq!(exporter.records, records);
    let mut stream = TcpStream::connect(exporter.addr).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    exporter.wait().unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");

    let series = series_of_orders_0(body);
    let value = |name: &str| {
        *series
            .get(name)
            .unwrap_or_else(|| panic!("no series {name} in:\n{body}"))
    };
    let records = records as f64;
    assert_eq!(value(names::LOG_END_OFFSET), records);
    assert_eq!(value(names::LOG_START_OFFSET), 0.0);
    assert_eq!(value(names::NUM_LOG_SEGMENTS), 1.0);
    assert_eq!(value(names::RECORDS_APPENDED), records);
    assert_eq!(value(names::RECORDS_READ), records);
    let appended = value(names::BYTES_APPENDED);
    assert!(appended > records, "{appended} bytes for {records} records");
    // One segment holds every appended byte, and the reader read each of them once at least.
    assert_eq!(value(names::SIZE), appended);
    assert!(value(names::BYTES_READ) >= appended);
    // A fresh log recovers nothing; no fsync ran in this workload (page-cache appends).
    assert_eq!(value(names::RECOVERY_BYTES_SCANNED), 0.0);
    // Descriptions reach the exposition format.
    assert!(
        body.contains(&format!(
            "# HELP {} Kafka's LogEndOffset",
            names::LOG_END_OFFSET
        )),
        "{body}"
    );
}
