-- Backfill of tx_by_hash (0010) for transactions written before WriteBlocks
-- filled the look-up tables: one row per canonical transaction, as the
-- write path makes it.
--
-- Safe to run again, and safe beside the write path: each row carries the
-- version (and is_canonical) of the transactions row it comes from, so a
-- second run adds copies that collapse with the first, and a row the write
-- path wrote or tombstoned later has a newer version and wins. FINAL reads
-- the newest row per position (an older row of a position would name a
-- hash that is no longer there) and the WHERE after it drops tombstones
-- (never PREWHERE with FINAL: 18.16 would filter before collapsing).
--
-- Migrate runs files that INSERT under clickhouse.migrate_timeout, not the
-- per-statement query_timeout, and logs their progress: over a long chain
-- this reads the whole table (docs/operations.md has the rate).
INSERT INTO tx_by_hash (chain_id, hash, block_number, tx_index, block_hash, is_canonical, version)
SELECT chain_id, hash, block_number, tx_index, block_hash, is_canonical, version
FROM transactions FINAL
WHERE is_canonical = 1;
