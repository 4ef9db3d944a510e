-- tx_by_hash at version 61, for a new database: a transaction's positions
-- by its hash (0010), 1,024-row granules (0025-0043).
CREATE TABLE IF NOT EXISTS tx_by_hash
(
    chain_id     String,
    hash         String,
    block_number UInt64,
    tx_index     UInt32,
    block_hash   String,
    is_canonical UInt8 DEFAULT 1,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, hash, block_number, tx_index)
SETTINGS index_granularity = 1024;
