-- logs rebuilt (step 2 of 4): every row, every version and tombstone as
-- it is, into logs_g512. Run with the workers stopped
-- (docs/operations.md, "Upgrading: the smaller granules"): rows written to
-- logs after this copy would stay behind in the old table.
--
-- Safe to run again: a second copy adds rows with the same key and
-- version, which FINAL and merges collapse. Runs under
-- clickhouse.migrate_timeout and logs its progress, like the backfills.
INSERT INTO logs_g512 (chain_id, block_number, block_hash, tx_hash, tx_index, log_index, address, topic0, topic1, topic2, topic3, topic_count, data, raw, version, is_canonical)
SELECT chain_id, block_number, block_hash, tx_hash, tx_index, log_index, address, topic0, topic1, topic2, topic3, topic_count, data, raw, version, is_canonical
FROM logs;
