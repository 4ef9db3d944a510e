-- Which heights are completely written. WriteBlock inserts the mark after
-- the block, its transactions and its logs, so a mark means all of them
-- are there; a crash in between leaves the height unmarked and it is
-- indexed again. The scheduler's questions (is H indexed, where are the
-- holes, how far is [from, H] complete) read only this narrow table.
--
-- Engine, ORDER BY and partitioning as for blocks (see 0001). Duplicate
-- marks are harmless: reads use count() > 0, DISTINCT or uniqExact.
CREATE TABLE IF NOT EXISTS indexed_heights
(
    chain_id   String,
    number     UInt64,
    hash       String,
    indexed_at DateTime,
    version    UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, number);
