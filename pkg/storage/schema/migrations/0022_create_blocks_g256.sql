-- blocks, rebuilt with index_granularity = 256 (step 1 of 4: the new
-- table; 0029-0035 copy, 0036 swaps, 0037-0043 drop the old one).
--
-- Why: a point read (one block, one transaction, one hash) decompresses
-- the whole granule holding the row, every column it selects. At the
-- default 8,192 rows, and since a block row carries the node's whole block object in `raw` (1.5 KB on
-- the simulated chain, tens of KB on a busy mainnet block),
-- that made the query API's look-ups take 100-500 ms on 18.16
-- (docs/performance.md, "Query API under load"). Smaller granules cost a
-- larger primary index and more marks (one per 256 rows per column), which
-- is little beside the rows themselves. index_granularity cannot be changed
-- on an existing table, hence the copy.
--
-- Same columns, in the same order, as the table it replaces (its creating
-- migration and the ADD COLUMN of is_canonical), same engine, partitioning
-- and key: every rule of the old table holds for the new one.
CREATE TABLE IF NOT EXISTS blocks_g256
(
    chain_id         String,
    number           UInt64,
    hash             String,
    parent_hash      String,
    timestamp        DateTime,
    miner            String,
    gas_used         UInt64,
    gas_limit        UInt64,
    base_fee_per_gas String,
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
