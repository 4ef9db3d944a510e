-- stream_events at version 61, for a new database: the change stream,
-- one row per event in sequence order (0054).
CREATE TABLE IF NOT EXISTS stream_events
(
    chain_id    String,
    seq         UInt64,
    kind        String,
    number      UInt64,
    hash        String,
    parent_hash String,
    timestamp   DateTime,
    version     UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(seq, 10000000)
ORDER BY (chain_id, seq)
SETTINGS index_granularity = 1024;
