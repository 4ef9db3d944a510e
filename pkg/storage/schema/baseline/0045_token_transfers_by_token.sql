-- token_transfers_by_token at version 61, for a new database: a token's
-- transfers by its address (0045).
CREATE TABLE IF NOT EXISTS token_transfers_by_token
(
    chain_id      String,
    token_address String,
    block_number  UInt64,
    log_index     UInt32,
    batch_index   UInt32,
    standard      String,
    from_address  String,
    to_address    String,
    token_id      String,
    amount_w0     UInt64,
    amount_w1     UInt64,
    amount_w2     UInt64,
    amount_w3     UInt64,
    is_canonical  UInt8 DEFAULT 1,
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, token_address, block_number, log_index, batch_index)
SETTINGS index_granularity = 1024;
