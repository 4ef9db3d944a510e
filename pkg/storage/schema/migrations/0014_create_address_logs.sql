-- Logs by emitting address: one row per log, ordered by the contract that
-- emitted it, then position, so "the events of contract X (with topic0 Y)
-- between heights A and B" reads a key range. topic0 is here to filter
-- without reading the log; the log itself is read from logs at
-- (block_number, log_index).
--
-- Written by WriteBlocks with the logs rows (same version); tombstones and
-- partitioning as tx_by_hash (0010).
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
ORDER BY (chain_id, address, block_number, log_index);
