-- traces rebuilt (step 3 of 4): the rebuilt table takes the name; the old
-- one keeps its rows under traces_hex until 0061 drops it. Migrate counts
-- a RENAME as applied when its names are in place (a crash between this
-- file and its record), so the file is safe to run again.
RENAME TABLE
    traces TO traces_hex,
    traces_bytes TO traces;
