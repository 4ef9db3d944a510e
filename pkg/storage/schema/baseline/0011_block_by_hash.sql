-- block_by_hash at version 61, for a new database: a block's heights by
-- its hash, orphans kept as tombstones (0011), 1,024-row granules
-- (0026-0043).
CREATE TABLE IF NOT EXISTS block_by_hash
(
    chain_id     String,
    hash         String,
    number       UInt64,
    is_canonical UInt8 DEFAULT 1,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, hash, number)
SETTINGS index_granularity = 1024;
