-- One row per transaction joined with its receipt. Wei amounts are decimal
-- strings: they overflow UInt64, and UInt256 does not exist on 18.16.
--
-- ORDER BY (chain_id, block_number, tx_index): a transaction is identified
-- by its position, not its hash (the same hash can land in another block
-- after a reorg), and reads go by block range. Engine and partitioning as
-- for blocks (see 0001), on block_number.
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
    version             UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, block_number, tx_index);
