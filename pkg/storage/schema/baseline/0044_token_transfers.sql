-- token_transfers at version 61, for a new database: one row per token
-- transfer (ERC-20, ERC-721, ERC-1155 single and batch) decoded from the
-- logs, keyed by position (0044).
CREATE TABLE IF NOT EXISTS token_transfers
(
    chain_id      String,
    block_number  UInt64,
    block_hash    String,
    timestamp     DateTime,
    tx_hash       String,
    tx_index      UInt32,
    log_index     UInt32,
    batch_index   UInt32,
    token_address String,
    standard      String,
    operator      String,
    from_address  String,
    to_address    String,
    token_id      String,
    amount        String,
    amount_w0     UInt64,
    amount_w1     UInt64,
    amount_w2     UInt64,
    amount_w3     UInt64,
    is_canonical  UInt8 DEFAULT 1,
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, block_number, log_index, batch_index)
SETTINGS index_granularity = 1024;
