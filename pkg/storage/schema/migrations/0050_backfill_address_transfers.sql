-- Backfill of address_transfers (0046) from token_transfers (0044, filled
-- by 0048): one row per canonical transfer for its sender and one for its
-- recipient, a transfer to its own sender once with both flags, as the
-- write path makes them. Idempotent and safe beside the write path for the
-- reasons given in 0017: each row carries its source row's version.
INSERT INTO address_transfers (chain_id, address, block_number, log_index, batch_index, token_address, standard,
    token_id, is_from, is_to, amount_w0, amount_w1, amount_w2, amount_w3, is_canonical, version)
SELECT chain_id, address, block_number, log_index, batch_index, token_address, standard,
    token_id, address = from_address, address = to_address, amount_w0, amount_w1, amount_w2, amount_w3, is_canonical, version
FROM token_transfers FINAL
ARRAY JOIN if(from_address = to_address, [from_address], [from_address, to_address]) AS address
WHERE is_canonical = 1;
