-- Token transfers, derived from the logs: one row per movement of a token.
-- ERC-20 Transfer (3 topics, 32 bytes of data), ERC-721 Transfer (4
-- topics, no data), ERC-1155 TransferSingle and TransferBatch (one row per
-- id of the batch, batch_index its position in the arrays; 0 otherwise).
-- A log with one of these topic0s that fits none of the shapes gives no
-- row (pkg/tokens says the rules; they are counted in
-- indexer_token_transfers_malformed_total).
--
-- Written by WriteBlocks in the same call as the logs, with their version:
-- a position a reorganisation took away gets a tombstone (is_canonical =
-- 0), as in the main tables, so the same reading rules hold (newest
-- version per key, then is_canonical = 1 in WHERE, never PREWHERE).
--
-- Amounts and ids are uint256, which 18.16 has no type for. token_id and
-- amount are decimal strings (as wei amounts elsewhere; token_id '' for
-- ERC-20, amount 1 for ERC-721). The amount is also split in four 64-bit
-- words (amount_w0 the least significant) so that sums are exact on 18.16:
-- sum each word's 32-bit halves (bitAnd(w, 4294967295), bitShiftRight(w,
-- 32)) and combine the eight sums outside, or as an approximation with
-- Float64; a modern server can sum toUInt256(amount) directly
-- (docs/querying.md). operator is ERC-1155's; for ERC-20 and ERC-721,
-- which have none, the sender.
--
-- Ordered by position like logs, with small granules: the API reads rows
-- at the positions the look-up tables (0045, 0046) give.
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
