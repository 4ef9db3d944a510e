-- Webhook subscriptions to a chain's change stream (`indexer subscription
-- add|pause|resume|remove`, pkg/webhook): every change is a new row with a
-- higher version, and reads take the newest (argMax by version), before
-- and after merges, as for chain_registry. url is where events are POSTed
-- (it may hold a token: never logged, never in a workflow input); filter
-- and include are what is delivered (pkg/webhook's text forms);
-- secret_env names the workers' environment variable holding the signing
-- secret (the secret itself is stored nowhere); start_after is the seq
-- after which delivery began. state is active, paused or removed. A
-- handful of rows: no partitioning.
CREATE TABLE IF NOT EXISTS subscriptions
(
    chain_id    String,
    id          String,
    state       String,
    url         String,
    filter      String,
    include     String,
    secret_env  String,
    start_after UInt64,
    created_at  DateTime,
    updated_at  DateTime,
    version     UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (chain_id, id);
