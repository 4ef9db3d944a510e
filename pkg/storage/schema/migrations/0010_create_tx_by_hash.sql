-- Look-up of a transaction by its hash: one row per (transaction hash,
-- position). The transactions table is ordered by height, so finding a
-- hash there reads every row of the chain; here it reads a few granules
-- per partition.
--
-- The key holds the position as well as the hash because a hash is not
-- unique: the same transaction can be mined again at another height after
-- a reorganisation (and replayed on a fork). Readers take the first
-- canonical position by height and read the row itself from transactions.
--
-- Written by WriteBlocks in the same call and with the same version as the
-- transactions rows it points at; a position a reorganisation took away
-- gets a tombstone (is_canonical = 0) here too, so the rules of the main
-- tables hold: newest version per key (FINAL or argMax), then
-- is_canonical = 1 in WHERE (never PREWHERE with FINAL on 18.16).
--
-- PARTITION BY the height, as the main tables: every version of a key
-- shares a partition, and pruning drops the same partitions everywhere.
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
ORDER BY (chain_id, hash, block_number, tx_index);
