-- token_metadata at version 61, for a new database: a token's name,
-- symbol, decimals and supply as its contract answered them (0047).
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
