-- An address's transactions: one row per (address, transaction) for the
-- sender, the recipient and the created contract (flags say which; a
-- transaction to itself is one row with both). Ordered by address, then
-- position, so an address's history is a key range read newest first.
--
-- The row carries what an address listing filters and sorts on; the
-- transaction itself is read from transactions at (block_number,
-- tx_index). Written by WriteBlocks with the transactions rows (same
-- version); a position a reorganisation took away gets a tombstone here
-- for each address its old transaction had. Rules and partitioning as
-- tx_by_hash (0010).
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
ORDER BY (chain_id, address, block_number, tx_index);
