-- address_txs at version 61, for a new database: an address's
-- transactions as sender, recipient or created contract (0013), 1,024-row
-- granules (0027-0043).
CREATE TABLE IF NOT EXISTS address_txs
(
    chain_id     String,
    address      String,
    block_number UInt64,
    tx_index     UInt32,
    hash         String,
    is_from      UInt8,
    is_to        UInt8,
    is_creation  UInt8,
    is_canonical UInt8 DEFAULT 1,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, address, block_number, tx_index)
SETTINGS index_granularity = 1024;
