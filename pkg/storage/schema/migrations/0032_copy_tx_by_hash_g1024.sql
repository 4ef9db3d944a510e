-- tx_by_hash rebuilt (step 2 of 4): every row, every version and tombstone as
-- it is, into tx_by_hash_g1024. Run with the workers stopped
-- (docs/operations.md, "Upgrading: the smaller granules"): rows written to
-- tx_by_hash after this copy would stay behind in the old table.
--
-- Safe to run again: a second copy adds rows with the same key and
-- version, which FINAL and merges collapse. Runs under
-- clickhouse.migrate_timeout and logs its progress, like the backfills.
INSERT INTO tx_by_hash_g1024 (chain_id, hash, block_number, tx_index, block_hash, is_canonical, version)
SELECT chain_id, hash, block_number, tx_index, block_hash, is_canonical, version
FROM tx_by_hash;
