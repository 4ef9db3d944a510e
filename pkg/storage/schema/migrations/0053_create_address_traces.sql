-- An address's internal transactions: one row per (address, inner call
-- frame) for the frame's caller and callee (for a creation the created
-- contract, is_creation; for a self-destruct the beneficiary), each
-- distinct address once with flags saying which. Top-level frames are the
-- transactions themselves (address_txs). Ordered by address, then
-- position, so an address's history is a key range read newest first.
--
-- transfers is 1 for what Etherscan's txlistinternal lists: a frame that
-- moves value (a call, a creation's endowment, a self-destruct's balance)
-- or creates or destroys a contract; the API's default listing reads only
-- those rows, and every frame with `all`.
--
-- A look-up: the frame is read from traces at (block_number, tx_index,
-- trace_index). Written by WriteBlocks with the traces rows (same
-- version); a position a reorganisation took away gets a tombstone here
-- for each address its old frame had. Rules and partitioning as
-- address_txs (0013), 1,024-row granules (as 0027).
CREATE TABLE IF NOT EXISTS address_traces
(
    chain_id     String,
    address      String,
    block_number UInt64,
    tx_index     UInt32,
    trace_index  UInt32,
    tx_hash      String,
    is_from      UInt8,
    is_to        UInt8,
    is_creation  UInt8,
    transfers    UInt8,
    is_canonical UInt8 DEFAULT 1,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, address, block_number, tx_index, trace_index)
SETTINGS index_granularity = 1024;
