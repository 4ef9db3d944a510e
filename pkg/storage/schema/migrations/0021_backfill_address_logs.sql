-- Backfill of address_logs (0014) from logs: one row per canonical log,
-- keyed by the emitting address, with topic0 ('' for an anonymous event).
-- Idempotent and safe beside the write path for the reasons given in 0016.
INSERT INTO address_logs (chain_id, address, block_number, log_index, topic0, is_canonical, version)
SELECT chain_id, address, block_number, log_index, topic0, is_canonical, version
FROM logs FINAL
WHERE is_canonical = 1;
