-- The query API's keys (`indexer apikey create|list|update|revoke`,
-- pkg/apikeys): every change is a new row with a higher version, and reads
-- take the newest (argMax by version), before and after merges; a revoked
-- key keeps its rows (revoked = 1), so a revocation is never undone by a
-- merge or an older row. key_hash is the SHA-256 of the key in hex: the
-- key itself is shown once at creation and stored nowhere. id is the first
-- 12 hex digits of that hash, the key's name in logs, metrics and
-- commands. rate (requests/s, 0 = unlimited) and burst are the key's own
-- token bucket. A handful of rows: no partitioning.
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
