-- subscriptions at version 61, for a new database: the change stream's
-- webhook subscriptions, newest version wins (0056).
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
