-- Call traces: one row per call frame of every transaction, from the
-- node's tracer (debug_traceBlockByNumber with the callTracer, or
-- trace_block; pkg/rpc decodes both into one model). Keyed by position
-- like transactions and logs: the transaction, then the frame's index in
-- it (depth first, 0 = the top-level call), so a transaction's call tree
-- is one key range and a rewrite of the height reuses the keys.
--
-- trace_address is the frame's place in the tree (its length is depth);
-- type is call, callcode, delegatecall, staticcall, create, create2 or
-- selfdestruct; value is decimal wei (for a delegatecall its caller's,
-- which it does not move); input and output are whole (a creation's init
-- code and deployed code included), read only by the queries that name
-- them; error is the tracer's own words, revert_reason the reason a
-- reverting frame gave; reverted is 1 when the frame or an ancestor
-- failed, so its effects (value included) were undone.
--
-- Written by WriteBlocks in the same call and with the same version as
-- the block (a chain with tracing on writes no height without its
-- traces); is_canonical = 0 is a tombstone, as in transactions (0007).
-- 1,024-row granules: a transaction's tree is read by key, and input and
-- output make the rows wide.
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
