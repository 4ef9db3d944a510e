-- indexed_chunks at version 61, for a new database: chunks of heights
-- known to be completely indexed, derived from indexed_heights (0009).
CREATE TABLE IF NOT EXISTS indexed_chunks
(
    chain_id   String,
    first      UInt64,
    last       UInt64,
    checked_at DateTime
)
ENGINE = ReplacingMergeTree
PARTITION BY intDiv(first, 1000000)
ORDER BY (chain_id, first, last);
