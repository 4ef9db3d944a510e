-- address_logs rebuilt (step 4 of 4): the old table, renamed address_logs_g8192 by
-- 0036, goes; address_logs now holds every row of it (0029-0035).
DROP TABLE IF EXISTS address_logs_g8192;
