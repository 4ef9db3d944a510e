-- The heights where a topic appears, at any of a log's four positions: one
-- row per (topic, height), ordered by topic, so "the logs with topic T
-- between heights A and B" reads the heights of T, not the range's logs.
-- eth_getLogs and the logs routes narrow their read of logs FINAL to the
-- heights every topic of the filter names (and address_logs' heights for
-- an address), where they used to read every log of the range (or of the
-- address) and test the topics on each: 3.5 s for 2 logs of a busy
-- contract over 100,000 heights.
--
-- A hint, not a copy: a reader always reads the log itself from logs and
-- tests its topics and canonical flag there. So the table holds no
-- position and no tombstones: a height rewritten by a reorganisation gets
-- the rows of its new logs (same version as they), and a stale row of a
-- topic the new block lacks only points the read at one height it then
-- finds nothing at. For the same reason a topic is kept as its low 64
-- bits (topic_key: its last 16 hex digits as a number), not its 66
-- characters: two topics that share them cost a reader a height visited
-- in vain, and the row is a fifth of the bytes to write. Rows of one
-- height, one per distinct topic, cost far less than a row per log and
-- topic (a block's logs share their event signatures and often their
-- accounts).
CREATE TABLE IF NOT EXISTS topic_heights
(
    chain_id     String,
    topic_key    UInt64,
    block_number UInt64,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, topic_key, block_number)
SETTINGS index_granularity = 1024;
