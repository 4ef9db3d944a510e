-- The rebuilt tables (0022-0035) take the names of the old ones, all in one
-- statement, so no reader or writer ever sees one table rebuilt and its
-- look-up table not. The old tables keep their rows under <name>_g8192
-- until 0037-0043 drop them.
--
-- Migrate counts a RENAME as applied when its targets exist and its
-- sources that are not also targets are gone (a crash between this file
-- and its record), so the file is safe to run again.
RENAME TABLE
    blocks TO blocks_g8192,
    blocks_g256 TO blocks,
    transactions TO transactions_g8192,
    transactions_g256 TO transactions,
    logs TO logs_g8192,
    logs_g512 TO logs,
    tx_by_hash TO tx_by_hash_g8192,
    tx_by_hash_g1024 TO tx_by_hash,
    block_by_hash TO block_by_hash_g8192,
    block_by_hash_g1024 TO block_by_hash,
    address_txs TO address_txs_g8192,
    address_txs_g1024 TO address_txs,
    address_logs TO address_logs_g8192,
    address_logs_g1024 TO address_logs;
