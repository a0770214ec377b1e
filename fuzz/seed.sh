#!/bin/sh
# Builds the seed corpus for `parse_batches` from the shared Kafka corpus (read in place, never
# modified): each small .log whole, plus the first 64 KiB of every larger one. The corpus
# directory is git-ignored; run this before `cargo +nightly fuzz run parse_batches`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src="${1:-$here/../../shared/kafka-corpus}"
out="$here/corpus/parse_batches"
[ -d "$src" ] || { echo "Kafka corpus not found at $src" >&2; exit 1; }
mkdir -p "$out"
find "$src" -name '*.log' | while read -r log; do
    name=$(echo "$log" | sed "s|^$src/||; s|/|_|g")
    head -c 65536 "$log" > "$out/$name"
done
echo "$(ls "$out" | wc -l) seeds in $out"
