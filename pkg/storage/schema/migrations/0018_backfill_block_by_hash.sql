-- Backfill of block_by_hash (0011) from blocks: one row per canonical
-- block, with the block row's version. Idempotent and safe beside the
-- write path for the reasons given in 0016.
INSERT INTO block_by_hash (chain_id, hash, number, is_canonical, version)
SELECT chain_id, hash, number, is_canonical, version
FROM blocks FINAL
WHERE is_canonical = 1;
