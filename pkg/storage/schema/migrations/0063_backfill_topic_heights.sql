-- Backfill of topic_heights (0062) from logs: every topic of a canonical
-- log, once per height, as its topic_key (the last 16 hex digits read as a
-- big-endian number, as storage.topicKey computes it), with the newest
-- version of that height's logs carrying it. Idempotent by version, and
-- safe beside the write path for the reasons given in 0017: a height the
-- worker writes meanwhile gets its rows, at its newer version, either way.
-- The WHERE follows FINAL (never PREWHERE: 18.16 would filter before
-- collapsing).
INSERT INTO topic_heights (chain_id, topic_key, block_number, version)
SELECT chain_id, reinterpretAsUInt64(reverse(unhex(substring(topic, 51, 16)))) AS topic_key, block_number, max(version)
FROM logs FINAL
ARRAY JOIN [topic0, topic1, topic2, topic3] AS topic
WHERE is_canonical = 1 AND topic != ''
GROUP BY chain_id, topic_key, block_number;
