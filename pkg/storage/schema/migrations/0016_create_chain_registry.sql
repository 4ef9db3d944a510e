-- Chains defined at runtime (`indexer chain add|update|pause|resume|remove`,
-- pkg/registry): every change is a new row with a higher version, and
-- reads take the newest (argMax by version), before and after merges.
-- definition is the chain's settings as JSON, the keys one entry under
-- `chains:` has in the config file; an endpoint URL in it names its API key
-- as an environment variable reference (${NAME}) that each worker expands
-- from its own environment, so this table holds no key. state is active,
-- paused or removed: a removed chain keeps its row, which tells every
-- worker to stop it (and, with drop_data, to delete its rows). A handful
-- of rows: no partitioning.
CREATE TABLE IF NOT EXISTS chain_registry
(
    chain_id   String,
    state      String,
    definition String,
    drop_data  UInt8,
    updated_at DateTime,
    version    UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY chain_id;
