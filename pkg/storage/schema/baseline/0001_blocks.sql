-- blocks at version 61, for a new database: one row per block height
-- (0001), is_canonical for tombstones (0006), 256-row granules so that a
-- point read decompresses little of `raw` (0022-0043). The reasons for the
-- engine, key and partitioning are in those files.
CREATE TABLE IF NOT EXISTS blocks
(
    chain_id         String,
    number           UInt64,
    hash             String,
    parent_hash      String,
    timestamp        DateTime,
    miner            String,
    gas_used         UInt64,
    gas_limit        UInt64,
    base_fee_per_gas String, -- decimal wei, '' before London
    size             UInt64,
    tx_count         UInt32,
    log_count        UInt32,
    raw              String,
    version          UInt64,
    is_canonical     UInt8 DEFAULT 1
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, number)
SETTINGS index_granularity = 256;
