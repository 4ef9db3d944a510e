-- A token's transfers: one row per transfer, keyed by the token contract,
-- so that a token's history is a key range read newest first.
--
-- Besides the position it carries the parties, the id and the amount's
-- words, so that a token's holders (per holder: what it received minus
-- what it sent, summed over the canonical rows) are summed here without
-- reading token_transfers. Listings read the rows themselves from
-- token_transfers at the positions and check them (same token).
--
-- Written by WriteBlocks with the token_transfers rows (same version); a
-- position a reorganisation took away, or gave another token, gets a
-- tombstone here. Rules and partitioning as the other look-up tables
-- (0010).
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
