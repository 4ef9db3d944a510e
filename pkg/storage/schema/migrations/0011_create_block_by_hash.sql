-- Look-up of a block by its hash. One row per (hash, height): a hash
-- names one block, but an orphaned block stays here as a tombstone
-- (is_canonical = 0) after a reorganisation replaced it, which is how a
-- reader tells "orphaned" from "never seen".
--
-- Written by WriteBlocks with the blocks row (same version); rules and
-- partitioning as tx_by_hash (0010).
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
ORDER BY (chain_id, hash, number);
