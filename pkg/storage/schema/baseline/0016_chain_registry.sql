-- chain_registry at version 61, for a new database: the chains defined at
-- runtime, newest version wins (0016).
CREATE TABLE IF NOT EXISTS chain_registry
(
    chain_id   String,
    state      String,
    definition String,
    drop_data  UInt8,
    updated_at DateTime,
    version    UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY chain_id;
