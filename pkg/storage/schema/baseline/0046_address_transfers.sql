-- address_transfers at version 61, for a new database: an address's
-- token transfers as sender or recipient (0046).
CREATE TABLE IF NOT EXISTS address_transfers
(
    chain_id      String,
    address       String,
    block_number  UInt64,
    log_index     UInt32,
    batch_index   UInt32,
    token_address String,
    standard      String,
    token_id      String,
    is_from       UInt8,
    is_to         UInt8,
    amount_w0     UInt64,
    amount_w1     UInt64,
    amount_w2     UInt64,
    amount_w3     UInt64,
    is_canonical  UInt8 DEFAULT 1,
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, address, block_number, log_index, batch_index)
SETTINGS index_granularity = 1024;
