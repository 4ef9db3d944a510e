-- address_logs rebuilt (step 2 of 4): every row, every version and tombstone as
-- it is, into address_logs_g1024. Run with the workers stopped
-- (docs/operations.md, "Upgrading: the smaller granules"): rows written to
-- address_logs after this copy would stay behind in the old table.
--
-- Safe to run again: a second copy adds rows with the same key and
-- version, which FINAL and merges collapse. Runs under
-- clickhouse.migrate_timeout and logs its progress, like the backfills.
INSERT INTO address_logs_g1024 (chain_id, address, block_number, log_index, topic0, is_canonical, version)
SELECT chain_id, address, block_number, log_index, topic0, is_canonical, version
FROM address_logs;
