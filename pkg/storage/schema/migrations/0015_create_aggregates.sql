-- Cumulative statistics per height: the transactions, logs and block bytes
-- (the node's `size`) of every height from the chain's start height up to
-- and including this one. A range's totals are two rows subtracted:
-- row(to) − row(from − 1), in constant time whatever the range.
--
-- Filled by the aggregator, strictly in height order and never above the
-- watermark (a row exists only when every height below it is counted).
-- block_hash is the block the row counted: a reorganisation below the
-- aggregator's height shows as a stored block whose hash differs, and the
-- aggregator rewrites from the fork point with a newer version.
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
