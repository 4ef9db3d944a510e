-- traces rebuilt (step 2 of 4): every row, every version and tombstone as
-- it is, into traces_bytes, input and output turned from 0x hex into their
-- bytes (a tombstone's '' stays ''). Run with the workers of traced
-- chains stopped (docs/operations.md, "Upgrading: traces as bytes"): frames
-- written to traces after this copy would stay behind in the old table.
--
-- Safe to run again: a second copy adds rows with the same key and
-- version, which FINAL and merges collapse. Runs under
-- clickhouse.migrate_timeout and logs its progress, like the backfills.
INSERT INTO traces_bytes (chain_id, block_number, block_hash, tx_index, trace_index, tx_hash, trace_address, depth, type, from_address, to_address, value, gas, gas_used, input, output, error, revert_reason, reverted, subtraces, version, is_canonical)
SELECT chain_id, block_number, block_hash, tx_index, trace_index, tx_hash, trace_address, depth, type, from_address, to_address, value, gas, gas_used, unhex(substring(input, 3)), unhex(substring(output, 3)), error, revert_reason, reverted, subtraces, version, is_canonical
FROM traces;
