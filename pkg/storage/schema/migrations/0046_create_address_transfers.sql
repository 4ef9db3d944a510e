-- An address's transfers, sent and received in one list: one row per
-- (address, transfer) for the sender and the recipient (flags say which;
-- a transfer to itself is one row with both). Ordered by address, then
-- position, so an address's transfers are a key range read newest first.
--
-- It carries the token, standard, id and the amount's words, so that an
-- address's balances (per token, and per id for ERC-1155: received minus
-- sent over the canonical rows) are summed here. The mint sender and burn
-- recipient, the zero address, has rows too (its "balance" is minus what
-- was minted and not burnt).
--
-- Written by WriteBlocks with the token_transfers rows (same version); a
-- position a reorganisation took away gets a tombstone here for each
-- address its old transfer had. Rules and partitioning as address_txs
-- (0013).
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
