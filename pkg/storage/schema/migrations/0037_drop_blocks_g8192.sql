-- blocks rebuilt (step 4 of 4): the old table, renamed blocks_g8192 by
-- 0036, goes; blocks now holds every row of it (0029-0035).
DROP TABLE IF EXISTS blocks_g8192;
