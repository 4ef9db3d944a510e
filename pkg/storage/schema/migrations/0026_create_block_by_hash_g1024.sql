-- block_by_hash, rebuilt with index_granularity = 1024 (step 1 of 4: the new
-- table; 0029-0035 copy, 0036 swaps, 0037-0043 drop the old one).
--
-- Why: a point read (one block, one transaction, one hash) decompresses
-- the whole granule holding the row, every column it selects. At the
-- default 8,192 rows, and since a hash is looked up in every part of every partition, one granule each,
-- that made the query API's look-ups take 100-500 ms on 18.16
-- (docs/performance.md, "Query API under load"). Smaller granules cost a
-- larger primary index and more marks (one per 1024 rows per column), which
-- is little beside the rows themselves. index_granularity cannot be changed
-- on an existing table, hence the copy.
--
-- Same columns, in the same order, as the table it replaces (its creating
-- migration and the ADD COLUMN of is_canonical), same engine, partitioning
-- and key: every rule of the old table holds for the new one.
CREATE TABLE IF NOT EXISTS block_by_hash_g1024
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
