-- Look-up of heights by block time: "the first block at or after T", "the
-- blocks between two times". blocks is ordered by height and 18.16 has no
-- skipping index, so a time condition there reads the timestamp of every
-- block of the chain.
--
-- One row per height (the key is the height; the timestamp leads the
-- order so a time range is a key range). A reorganisation rewrites the
-- height with the canonical block's time and a newer version; a removed
-- height gets a tombstone. Written by WriteBlocks with the blocks row.
CREATE TABLE IF NOT EXISTS block_by_time
(
    chain_id     String,
    timestamp    DateTime,
    number       UInt64,
    is_canonical UInt8 DEFAULT 1,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, timestamp, number);
