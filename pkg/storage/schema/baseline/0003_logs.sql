-- logs at version 61, for a new database: one row per event log, keyed by
-- position (0003), is_canonical (0008), 512-row granules (0024-0043).
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
    version      UInt64,
    is_canonical UInt8 DEFAULT 1
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, block_number, log_index)
SETTINGS index_granularity = 512;
