-- transactions, rebuilt with index_granularity = 256 (step 1 of 4: the new
-- table; 0029-0035 copy, 0036 swaps, 0037-0043 drop the old one).
--
-- Why: a point read (one block, one transaction, one hash) decompresses
-- the whole granule holding the row, every column it selects. At the
-- default 8,192 rows, and since a transaction row carries the transaction and its receipt as JSON
-- (`raw`, `receipt_raw`: 0.5-1 KB, more with large call data), and an
-- address's page reads up to 25 rows at 25 different heights,
-- that made the query API's look-ups take 100-500 ms on 18.16
-- (docs/performance.md, "Query API under load"). Smaller granules cost a
-- larger primary index and more marks (one per 256 rows per column), which
-- is little beside the rows themselves. index_granularity cannot be changed
-- on an existing table, hence the copy.
--
-- Same columns, in the same order, as the table it replaces (its creating
-- migration and the ADD COLUMN of is_canonical), same engine, partitioning
-- and key: every rule of the old table holds for the new one.
CREATE TABLE IF NOT EXISTS transactions_g256
(
    chain_id            String,
    block_number        UInt64,
    block_hash          String,
    tx_index            UInt32,
    hash                String,
    type                UInt64,
    from_address        String,
    to_address          String,
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
