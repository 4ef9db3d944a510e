-- transactions rebuilt (step 2 of 4): every row, every version and tombstone as
-- it is, into transactions_g256. Run with the workers stopped
-- (docs/operations.md, "Upgrading: the smaller granules"): rows written to
-- transactions after this copy would stay behind in the old table.
--
-- Safe to run again: a second copy adds rows with the same key and
-- version, which FINAL and merges collapse. Runs under
-- clickhouse.migrate_timeout and logs its progress, like the backfills.
INSERT INTO transactions_g256 (chain_id, block_number, block_hash, tx_index, hash, type, from_address, to_address, value, nonce, gas, gas_price, status, gas_used, effective_gas_price, contract_address, log_count, raw, receipt_raw, version, is_canonical)
SELECT chain_id, block_number, block_hash, tx_index, hash, type, from_address, to_address, value, nonce, gas, gas_price, status, gas_used, effective_gas_price, contract_address, log_count, raw, receipt_raw, version, is_canonical
FROM transactions;
