-- transactions rebuilt (step 4 of 4): the old table, renamed transactions_g8192 by
-- 0036, goes; transactions now holds every row of it (0029-0035).
DROP TABLE IF EXISTS transactions_g8192;
