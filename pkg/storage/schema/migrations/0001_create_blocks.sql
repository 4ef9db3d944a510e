-- One row per block height: the columns the indexer filters or sorts on,
-- plus the node's block object in `raw` for everything else.
--
-- ReplacingMergeTree(version): writing a height again (a retried activity,
-- a re-index after a reorg) adds a row with a higher version, and merges
-- keep only the newest row per ORDER BY key. Until a merge runs both rows
-- exist, so reads that must see one row per height use FINAL, argMax(…,
-- version) or uniqExact.
--
-- ORDER BY (chain_id, number) is the dedup key and the primary index:
-- every query is "one chain, a range of heights".
--
-- PARTITION BY intDiv(number, 1000000): old ranges settle into partitions
-- that stop changing, FINAL can work partition by partition, and a damaged
-- range can be dropped and re-indexed with DROP PARTITION instead of a
-- mutation. Replacing only dedups within a partition; that is safe because
-- the partition is a function of `number`, which is in the key, so the
-- versions of one height always share a partition. A million heights per
-- partition keeps the count in the hundreds even for fast chains.
--
-- Lookup by hash scans the chain's rows: there is no data-skipping index
-- (not available on 18.16 without experimental settings). If hash lookups
-- become hot, add a table ordered by (chain_id, hash) in a new migration.
CREATE TABLE IF NOT EXISTS blocks
(
    chain_id         String,
    number           UInt64,
    hash             String,
    parent_hash      String,
    timestamp        DateTime,
    miner            String,
    gas_used         UInt64,
    gas_limit        UInt64,
    base_fee_per_gas String, -- decimal wei, '' before London
    size             UInt64,
    tx_count         UInt32,
    log_count        UInt32,
    raw              String,
    version          UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(number, 1000000)
ORDER BY (chain_id, number);
