-- The change stream of each chain (pkg/stream): an ordered log of events,
-- "added" (a block at or below the watermark entered the streamed chain)
-- and "removed" (a reorganisation took a streamed block out), numbered by
-- seq from 1 without a gap. One appender per chain writes it, in order;
-- readers resume from any seq, so what a consumer is served again after a
-- reconnect is read back from here, not recomputed. hash, parent_hash and
-- timestamp are those of the block added or removed.
--
-- ReplacingMergeTree(version) keyed by (chain_id, seq): an append retried
-- after a lost answer writes the same events at the same seq again, and
-- the copies collapse. Partitions of ten million events.
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
