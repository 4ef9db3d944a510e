-- block_by_time at version 61, for a new database: heights by block time
-- (0012). Read by time windows, not by point, so it kept the default
-- 8,192-row granules when 0022-0043 rebuilt the tables read by key.
CREATE TABLE IF NOT EXISTS block_by_time
(
    chain_id     String,
    timestamp    DateTime,
    number       UInt64,
    is_canonical UInt8 DEFAULT 1,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, timestamp, number);
