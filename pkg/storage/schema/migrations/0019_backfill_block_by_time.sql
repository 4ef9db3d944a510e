-- Backfill of block_by_time (0012) from blocks: one row per canonical
-- block, keyed by its time and height, with the block row's version.
-- Idempotent and safe beside the write path for the reasons given in 0016.
INSERT INTO block_by_time (chain_id, timestamp, number, is_canonical, version)
SELECT chain_id, timestamp, number, is_canonical, version
FROM blocks FINAL
WHERE is_canonical = 1;
