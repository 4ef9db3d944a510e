-- Chunks of heights known to be completely indexed: a row (chain, first,
-- last) says every height in [first, last] has a mark in indexed_heights.
-- The gap scan and the watermark (heights.go) record a chunk here the first
-- time they count it full, and skip it afterwards without reading its
-- marks, so their cost follows the chunks that still have holes, not the
-- chain's length (tens of millions of marks).
--
-- It is derived data and only ever grows, which is sound because marks are
-- never deleted. An operator who drops or truncates indexed_heights (or a
-- partition of it) drops the same here: the partition ids match, since a
-- chunk never straddles a million.
CREATE TABLE IF NOT EXISTS indexed_chunks
(
    chain_id   String,
    first      UInt64,
    last       UInt64,
    checked_at DateTime
)
ENGINE = ReplacingMergeTree
PARTITION BY intDiv(first, 1000000)
ORDER BY (chain_id, first, last);
