-- One row per event log. Topics get a column each (empty when absent) so
-- event filters are plain comparisons; topic_count tells an absent topic
-- from an empty one.
--
-- ORDER BY (chain_id, block_number, log_index): log_index is the position
-- in the block, unique within it. Engine and partitioning as for blocks
-- (see 0001), on block_number.
CREATE TABLE IF NOT EXISTS logs
(
    chain_id     String,
    block_number UInt64,
    block_hash   String,
    tx_hash      String,
    tx_index     UInt32,
    log_index    UInt32,
    address      String,
    topic0       String,
    topic1       String,
    topic2       String,
    topic3       String,
    topic_count  UInt8,
    data         String,
    raw          String,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, block_number, log_index);
