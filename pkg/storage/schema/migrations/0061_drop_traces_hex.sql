-- traces rebuilt (step 4 of 4): the old table, renamed traces_hex by 0060,
-- goes; traces now holds every row of it (0059).
DROP TABLE IF EXISTS traces_hex;
