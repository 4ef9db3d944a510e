-- block_by_hash rebuilt (step 4 of 4): the old table, renamed block_by_hash_g8192 by
-- 0036, goes; block_by_hash now holds every row of it (0029-0035).
DROP TABLE IF EXISTS block_by_hash_g8192;
