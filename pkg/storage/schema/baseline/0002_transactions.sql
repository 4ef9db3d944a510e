-- transactions at version 61, for a new database: one row per transaction
-- with its receipt, keyed by position (0002), is_canonical (0007),
-- 256-row granules (0023-0043).
CREATE TABLE IF NOT EXISTS transactions
(
    chain_id            String,
    block_number        UInt64,
    block_hash          String,
    tx_index            UInt32,
    hash                String,
    type                UInt64,
    from_address        String,
    to_address          String, -- '' for contract creation
    value               String,
    nonce               UInt64,
    gas                 UInt64,
    gas_price           String,
    status              UInt8,
    gas_used            UInt64,
    effective_gas_price String,
    contract_address    String,
    log_count           UInt32,
    raw                 String,
    receipt_raw         String,
    version             UInt64,
    is_canonical        UInt8 DEFAULT 1
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, block_number, tx_index)
SETTINGS index_granularity = 256;
