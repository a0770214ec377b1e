//! The criterion `consumer/offset_and_value_len` loop as a plain binary, for counting
//! instructions per record under valgrind (10,000 records a round):
//! `valgrind --tool=cachegrind --cache-sim=no target/release/examples/scan_profile 100`.

#[path = "../benches/support/consumer.rs"]
mod consumer;

fn main() -> Result<(), seglog_records::Error> {
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let batches = consumer::batches();
    let mut sum = 0u64;
    for _ in 0..rounds {
        sum = sum.wrapping_add(consumer::consume(&batches)?);
    }
    println!("{sum}");
    Ok(())
}
