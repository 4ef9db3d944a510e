-- Small named values per chain (e.g. a persisted watermark). Every save is
-- a new row with a higher version; reads take argMax(value, version), so
-- the newest save wins before and after merges. A handful of keys per
-- chain: no partitioning.
CREATE TABLE IF NOT EXISTS chain_state
(
    chain_id   String,
    key        String,
    value      UInt64,
    updated_at DateTime,
    version    UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (chain_id, key);
