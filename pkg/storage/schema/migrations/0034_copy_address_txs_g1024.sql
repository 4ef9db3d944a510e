-- address_txs rebuilt (step 2 of 4): every row, every version and tombstone as
-- it is, into address_txs_g1024. Run with the workers stopped
-- (docs/operations.md, "Upgrading: the smaller granules"): rows written to
-- address_txs after this copy would stay behind in the old table.
--
-- Safe to run again: a second copy adds rows with the same key and
-- version, which FINAL and merges collapse. Runs under
-- clickhouse.migrate_timeout and logs its progress, like the backfills.
INSERT INTO address_txs_g1024 (chain_id, address, block_number, tx_index, hash, is_from, is_to, is_creation, is_canonical, version)
SELECT chain_id, address, block_number, tx_index, hash, is_from, is_to, is_creation, is_canonical, version
FROM address_txs;
