-- traces at version 61, for a new database: one row per call frame,
-- keyed by position (0052), input and output as bytes, not hex text
-- (0058-0061: the copy, swap and drop a new database skips).
CREATE TABLE IF NOT EXISTS traces
(
    chain_id      String,
    block_number  UInt64,
    block_hash    String,
    tx_index      UInt32,
    trace_index   UInt32,
    tx_hash       String,
    trace_address Array(UInt32),
    depth         UInt16,
    type          String,
    from_address  String,
    to_address    String,
    value         String,
    gas           UInt64,
    gas_used      UInt64,
    input         String,
    output        String,
    error         String,
    revert_reason String,
    reverted      UInt8,
    subtraces     UInt32,
    version       UInt64,
    is_canonical  UInt8 DEFAULT 1
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, block_number, tx_index, trace_index)
SETTINGS index_granularity = 1024;
