-- Backfill of token_transfers_by_token (0045) from token_transfers (0044,
-- filled by 0048): one row per canonical transfer, as the write path
-- makes it. Idempotent and safe beside the write path for the reasons
-- given in 0017: each row carries its source row's version.
INSERT INTO token_transfers_by_token (chain_id, token_address, block_number, log_index, batch_index, standard,
    from_address, to_address, token_id, amount_w0, amount_w1, amount_w2, amount_w3, is_canonical, version)
SELECT chain_id, token_address, block_number, log_index, batch_index, standard,
    from_address, to_address, token_id, amount_w0, amount_w1, amount_w2, amount_w3, is_canonical, version
FROM token_transfers FINAL
WHERE is_canonical = 1;
