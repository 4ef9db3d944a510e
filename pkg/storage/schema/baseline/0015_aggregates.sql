-- aggregates at version 61, for a new database: cumulative counts per
-- height, written by the aggregator (0015).
CREATE TABLE IF NOT EXISTS aggregates
(
    chain_id     String,
    number       UInt64,
    block_hash   String,
    txs          UInt64,
    logs         UInt64,
    bytes        UInt64,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, number);
