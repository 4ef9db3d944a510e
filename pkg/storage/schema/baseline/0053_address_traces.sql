-- address_traces at version 61, for a new database: an address's call
-- frames as caller, callee or created contract (0053), without tx_hash
-- (0057: no read used it).
CREATE TABLE IF NOT EXISTS address_traces
(
    chain_id     String,
    address      String,
    block_number UInt64,
    tx_index     UInt32,
    trace_index  UInt32,
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
