-- address_txs rebuilt (step 4 of 4): the old table, renamed address_txs_g8192 by
-- 0036, goes; address_txs now holds every row of it (0029-0035).
DROP TABLE IF EXISTS address_txs_g8192;
