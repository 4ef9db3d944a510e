-- api_keys at version 61, for a new database: the query API's keys, by
-- their hash, newest version wins (0055).
CREATE TABLE IF NOT EXISTS api_keys
(
    id         String,
    name       String,
    key_hash   String,
    rate       Float64,
    burst      UInt32,
    created_at DateTime,
    revoked    UInt8,
    revoked_at DateTime,
    updated_at DateTime,
    version    UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;
