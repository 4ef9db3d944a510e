-- address_logs at version 61, for a new database: logs by emitting
-- address (0014), 1,024-row granules (0028-0043).
CREATE TABLE IF NOT EXISTS address_logs
(
    chain_id     String,
    address      String,
    block_number UInt64,
    log_index    UInt32,
    topic0       String,
    is_canonical UInt8 DEFAULT 1,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, address, block_number, log_index)
SETTINGS index_granularity = 1024;
