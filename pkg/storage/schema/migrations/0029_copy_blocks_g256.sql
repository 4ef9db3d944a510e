-- blocks rebuilt (step 2 of 4): every row, every version and tombstone as
-- it is, into blocks_g256. Run with the workers stopped
-- (docs/operations.md, "Upgrading: the smaller granules"): rows written to
-- blocks after this copy would stay behind in the old table.
--
-- Safe to run again: a second copy adds rows with the same key and
-- version, which FINAL and merges collapse. Runs under
-- clickhouse.migrate_timeout and logs its progress, like the backfills.
INSERT INTO blocks_g256 (chain_id, number, hash, parent_hash, timestamp, miner, gas_used, gas_limit, base_fee_per_gas, size, tx_count, log_count, raw, version, is_canonical)
SELECT chain_id, number, hash, parent_hash, timestamp, miner, gas_used, gas_limit, base_fee_per_gas, size, tx_count, log_count, raw, version, is_canonical
FROM blocks;
