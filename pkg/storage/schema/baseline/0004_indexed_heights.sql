-- indexed_heights at version 61, for a new database: the mark written
-- after a height's rows (0004), whether the height's traces were stored
-- (0051). Its rows are narrow, so it keeps the default 8,192-row
-- granules.
CREATE TABLE IF NOT EXISTS indexed_heights
(
    chain_id   String,
    number     UInt64,
    hash       String,
    indexed_at DateTime,
    version    UInt64,
    traced     UInt8 DEFAULT 0
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, number);
