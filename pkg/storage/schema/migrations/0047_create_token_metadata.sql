-- A token's metadata as its contract answers eth_call at the latest block
-- when the indexer first sees a transfer of it (the TokenMetadata
-- workflow, off the write path): one logical row per token, the newest
-- version wins (read with argMax or FINAL; no tombstones: a token's
-- metadata is not a height's data, and retention keeps it).
--
-- name and symbol are '' when not answered; name_encoding says how they
-- were answered: 'string' (ERC-20's ABI string), 'bytes32' (older tokens
-- such as MKR) or '' (no answer: a contract without them, a revert).
-- decimals counts only with has_decimals = 1. total_supply is decimal,
-- '' when not answered, as of total_supply_height. standard is the first
-- standard its transfers were seen with.
CREATE TABLE IF NOT EXISTS token_metadata
(
    chain_id            String,
    token_address       String,
    standard            String,
    name                String,
    symbol              String,
    name_encoding       String,
    decimals            UInt8,
    has_decimals        UInt8,
    total_supply        String,
    total_supply_height UInt64,
    fetched_at          DateTime,
    version             UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (chain_id, token_address);
