//! Spec 4.6 test vectors, byte for byte, through the public API.

use seglog_records::{BatchBuilder, BatchHeader, BatchRef, HeaderRead};

use crate::support::legacy_message;

const SPEC_V2_HEX: &str = "00 00 00 00 00 00 00 00 00 00 00 55 ff ff ff ff 02 e5 8c f1 ff 00 00 00 00 00 01 00 00 00 00 00 04 54 c3 00 00 00 00 00 04 54 c3 ff ff ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 02 20 00 00 00 08 6b 65 79 31 0c 76 61 6c 75 65 31 00 24 00 e1 bf 22 02 08 6b 65 79 32 0c 76 61 6c 75 65 32 00";
const OWN_V2_HEX: &str = "00 00 00 00 00 00 00 00 00 00 00 3d 00 00 00 00 02 e6 41 a4 4b 00 00 00 00 00 00 00 00 01 8b cf e5 68 00 00 00 01 8b cf e5 68 00 ff ff ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 01 16 00 00 00 01 0a 68 65 6c 6c 6f 00";

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

#[test]
fn v2_batch_97_bytes_and_kafka_checksum() {
    let mut builder = BatchBuilder::new(0);
    builder
        .append(283843, Some(b"key1"), Some(b"value1"), &[])
        .append(1234, Some(b"key2"), Some(b"value2"), &[]);
    let built = builder.build().unwrap();
    assert_eq!(built.len(), 97);
    assert_eq!(&built[..], &hex(SPEC_V2_HEX)[..]);
    let batch = BatchRef::parse(&built, 0).unwrap();
    assert_eq!(batch.header().crc, 3851219455);
    assert_eq!(batch.compute_crc(), 3851219455);
    batch.ensure_valid().unwrap();
}

#[test]
fn own_v2_example_73_bytes() {
    let mut builder = BatchBuilder::new(0).partition_leader_epoch(0);
    builder.append(1_700_000_000_000, None, Some(b"hello"), &[]);
    let built = builder.build().unwrap();
    assert_eq!(&built[..], &hex(OWN_V2_HEX)[..]);
    let HeaderRead::Batch(header) = BatchHeader::parse(&built, 0, 73).unwrap() else {
        panic!("expected a whole batch");
    };
    assert_eq!(header.crc, 0xE641_A44B);
}

#[test]
fn legacy_v1_and_v0_kafka_checksums() {
    let v1 = legacy_message(1, 0, 0, 283843, Some(b"key1"), Some(b"value1"));
    let v0 = legacy_message(0, 0, 0, 283843, Some(b"key1"), Some(b"value1"));
    for (bytes, crc) in [(&v1, 109425508u32), (&v0, 1978725405)] {
        let batch = BatchRef::parse(bytes, 0).unwrap();
        assert_eq!(batch.header().crc, crc);
        assert_eq!(batch.compute_crc(), crc);
        batch.ensure_valid().unwrap();
    }
}
