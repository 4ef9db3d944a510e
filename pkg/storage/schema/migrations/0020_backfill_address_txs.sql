-- Backfill of address_txs (0013) from transactions: per canonical
-- transaction, one row for each distinct non-empty address among sender,
-- recipient and created contract (a transaction to itself is one row with
-- both flags; the empty recipient of a contract creation is no address),
-- as WriteBlocks makes them (lookups.go). ARRAY JOIN turns the list into
-- rows; arrayDistinct and arrayFilter exist on 18.16 and on modern
-- servers. Idempotent and safe beside the write path for the reasons given
-- in 0016.
INSERT INTO address_txs (chain_id, address, block_number, tx_index, hash, is_from, is_to, is_creation, is_canonical, version)
SELECT chain_id, address, block_number, tx_index, hash,
       address = from_address, address = to_address, address = contract_address,
       is_canonical, version
FROM transactions FINAL
ARRAY JOIN arrayDistinct(arrayFilter(a -> a != '', [from_address, to_address, contract_address])) AS address
WHERE is_canonical = 1;
