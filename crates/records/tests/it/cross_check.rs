//! Cross-check against an implementation we did not write: the `kafka-protocol` crate's
//! `RecordBatchEncoder` / `RecordBatchDecoder`, over every codec it supports (all five with its
//! default features; its lz4 is the C liblz4, a different implementation from ours).
//!
//! Batches we build decode there with identical records, and batches it encodes decode here.

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KpCompression, Record as KpRecord, RecordBatchDecoder, RecordBatchEncoder,
    RecordEncodeOptions, TimestampType as KpTimestampType,
};
use proptest::prelude::*;
use seglog_records::{BatchBuilder, Compression, OwnedBatches, Record, TimestampType};

#[derive(Debug, Clone)]
struct Input {
    timestamp_ms: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    /// Unique keys: kafka-protocol keeps headers in a map.
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn bytes_opt() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(Vec::new())),
        4 => proptest::collection::vec(any::<u8>(), 1..64).prop_map(Some),
    ]
}

fn timestamp() -> impl Strategy<Value = i64> {
    // Large and negative, but keeping `ts - base` inside i64: kafka-protocol subtracts without
    // wrapping.
    prop_oneof![
        4 => 1_600_000_000_000i64..1_800_000_000_000,
        1 => -(1i64 << 61)..(1i64 << 61),
        1 => Just(-1i64),
        1 => Just(0i64),
    ]
}

fn input() -> impl Strategy<Value = Input> {
    (
        timestamp(),
        bytes_opt(),
        bytes_opt(),
        proptest::collection::btree_map("[a-zA-Z0-9_.é-]{0,12}", bytes_opt(), 0..4),
    )
        .prop_map(|(timestamp_ms, key, value, headers)| Input {
            timestamp_ms,
            key,
            value,
            headers: headers.into_iter().collect(),
        })
}

fn codec() -> impl Strategy<Value = Compression> {
    prop::sample::select(Compression::ALL.to_vec())
}

fn kp_codec(c: Compression) -> KpCompression {
    match c {
        Compression::None => KpCompression::None,
        Compression::Gzip => KpCompression::Gzip,
        Compression::Snappy => KpCompression::Snappy,
        Compression::Lz4 => KpCompression::Lz4,
        Compression::Zstd => KpCompression::Zstd,
    }
}

fn decode_ours(bytes: Bytes) -> Vec<(seglog_records::BatchHeader, Vec<Record>)> {
    let mut batches = OwnedBatches::new(bytes, 0).validated();
    let out = batches
        .by_ref()
        .map(|b| {
            let b = b.unwrap();
            let records = b.records(16 << 20).collect::<Result<Vec<_>, _>>().unwrap();
            (*b.header(), records)
        })
        .collect();
    assert_eq!(batches.partial_tail_bytes(), 0);
    out
}

fn same_record(ours: &Record, theirs: &KpRecord, input: &Input, offset: i64) {
    assert_eq!(ours.offset, offset);
    assert_eq!(theirs.offset, offset);
    assert_eq!(ours.timestamp_ms, Some(input.timestamp_ms));
    assert_eq!(theirs.timestamp, input.timestamp_ms);
    assert_eq!(ours.key.as_deref(), input.key.as_deref());
    assert_eq!(theirs.key.as_deref(), input.key.as_deref());
    assert_eq!(ours.value.as_deref(), input.value.as_deref());
    assert_eq!(theirs.value.as_deref(), input.value.as_deref());
    let ours_headers: Vec<(&str, Option<&[u8]>)> = ours
        .headers
        .iter()
        .map(|h| (h.key.as_str(), h.value.as_deref()))
        .collect();
    let theirs_headers: Vec<(&str, Option<&[u8]>)> = theirs
        .headers
        .iter()
        .map(|(k, v)| (&**k, v.as_deref()))
        .collect();
    let input_headers: Vec<(&str, Option<&[u8]>)> = input
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    assert_eq!(ours_headers, input_headers);
    assert_eq!(theirs_headers, input_headers);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn batches_we_build_decode_in_kafka_protocol(
        inputs in proptest::collection::vec(input(), 1..120),
        codec in codec(),
        base_offset in 0i64..1 << 50,
        producer in prop_oneof![Just((-1i64, -1i16, -1i32)), (0i64..1 << 40, 0i16..100, 0i32..1 << 20)],
        transactional in any::<bool>(),
        leader_epoch in -1i32..1000,
    ) {
        let mut builder = BatchBuilder::new(base_offset)
            .compression(codec)
            .producer(producer.0, producer.1, producer.2)
            .transactional(transactional)
            .partition_leader_epoch(leader_epoch);
        for input in &inputs {
            let headers: Vec<(&str, Option<&[u8]>)> =
                input.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
            builder.append(input.timestamp_ms, input.key.as_deref(), input.value.as_deref(), &headers);
        }
        let bytes = builder.build().unwrap();

        let mut buf = bytes.clone();
        let theirs = RecordBatchDecoder::decode(&mut buf).unwrap();
        prop_assert_eq!(buf.len(), 0);
        prop_assert_eq!(theirs.records.len(), inputs.len());
        let ours = decode_ours(bytes);
        prop_assert_eq!(ours.len(), 1);
        let (header, records) = &ours[0];
        prop_assert_eq!(header.max_timestamp_ms, inputs.iter().map(|i| i.timestamp_ms).max().unwrap());
        for (i, input) in inputs.iter().enumerate() {
            let t = &theirs.records[i];
            same_record(&records[i], t, input, base_offset + i as i64);
            prop_assert_eq!(t.producer_id, producer.0);
            prop_assert_eq!(t.producer_epoch, producer.1);
            let sequence = if producer.2 < 0 { -1 + i as i32 } else { producer.2 + i as i32 };
            prop_assert_eq!(t.sequence, sequence);
            prop_assert_eq!(t.transactional, transactional);
            prop_assert!(!t.control);
            prop_assert_eq!(t.partition_leader_epoch, leader_epoch);
            prop_assert_eq!(t.timestamp_type, KpTimestampType::Creation);
        }
    }

    #[test]
    fn batches_kafka_protocol_encodes_decode_here(
        inputs in proptest::collection::vec(input(), 1..120),
        codec in codec(),
        base_offset in 0i64..1 << 50,
        base_sequence in prop_oneof![Just(None), (0i32..1 << 20).prop_map(Some)],
        producer_id in -1i64..1 << 40,
        transactional in any::<bool>(),
        leader_epoch in -1i32..1000,
    ) {
        let records: Vec<KpRecord> = inputs
            .iter()
            .enumerate()
            .map(|(i, input)| {
                let mut r = KpRecord {
                    transactional,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: leader_epoch,
                    producer_id,
                    producer_epoch: 1,
                    timestamp_type: KpTimestampType::Creation,
                    offset: base_offset + i as i64,
                    // With a base sequence the records share one batch; with -1 for all,
                    // kafka-protocol writes one batch per record.
                    sequence: base_sequence.map_or(-1, |s| s + i as i32),
                    timestamp: input.timestamp_ms,
                    key: input.key.clone().map(Bytes::from),
                    value: input.value.clone().map(Bytes::from),
                    headers: Default::default(),
                };
                for (k, v) in &input.headers {
                    r.headers.insert(StrBytes::from_string(k.clone()), v.clone().map(Bytes::from));
                }
                r
            })
            .collect();
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions { version: 2, compression: kp_codec(codec) };
        RecordBatchEncoder::encode(&mut buf, &records, &options).unwrap();

        let ours = decode_ours(buf.freeze());
        let expected_batches = if base_sequence.is_some() { 1 } else { inputs.len() };
        prop_assert_eq!(ours.len(), expected_batches);
        let mut i = 0usize;
        for (header, decoded) in &ours {
            prop_assert_eq!(header.compression, codec);
            prop_assert_eq!(header.producer_id, producer_id);
            prop_assert_eq!(header.is_transactional, transactional);
            prop_assert_eq!(header.partition_leader_epoch, leader_epoch);
            prop_assert_eq!(header.timestamp_type, Some(TimestampType::CreateTime));
            prop_assert_eq!(header.record_count, Some(decoded.len() as i32));
            for record in decoded {
                same_record(record, &records[i], &inputs[i], base_offset + i as i64);
                i += 1;
            }
        }
        prop_assert_eq!(i, inputs.len());
    }
}
