-- chain_state at version 61, for a new database: small named values per
-- chain, newest version wins (0005).
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
