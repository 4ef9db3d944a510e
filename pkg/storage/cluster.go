package storage

import (
	"fmt"
	"regexp"
	"strings"
)

// A ClickHouse cluster (clickhouse.cluster set): every table is replicated
// on every host of the named cluster, through ClickHouse's own replication
// (Replicated*MergeTree engines coordinated by ZooKeeper or ClickHouse
// Keeper), and every DDL statement runs ON CLUSTER so that one migration
// reaches all hosts.
//
// The migration files stay written for one server; clusterDDL rewrites
// each statement as it is applied:
//
//   - CREATE DATABASE / TABLE / MATERIALIZED VIEW … and ALTER TABLE …
//     get ON CLUSTER <cluster> after the object's name;
//   - an engine of the MergeTree family becomes its Replicated form, with
//     the table's replication path /clickhouse/tables/{shard}/<db>/<table>
//     and the replica name {replica} (macros each host defines in its
//     server configuration), followed by the engine's own arguments;
//   - INSERT … SELECT (a backfill) runs as it is on the host the migrator
//     is connected to: on replicated tables the inserted parts reach the
//     other replicas by replication, so running it on every host would
//     only repeat the work (the rows are versioned, so a repeat is
//     harmless, but useless);
//   - RENAME TABLE … and DROP TABLE … get ON CLUSTER <cluster> at the
//     end (a table rebuilt under another name, then swapped in);
//   - any other statement is refused, so a new kind of migration is
//     thought through for clusters before it ships (TestClusterDDL runs
//     every embedded migration through the rewrite).
//
// One shard, many replicas: tideline writes every table through one
// version-ordered path and reads with FINAL, which only collapses versions
// within one host's parts, so all versions of a key must live on one
// shard. Replication gives availability and read capacity; sharding
// (Distributed tables) is not built, see docs/operations.md, "Scaling out".
type clusterDDL struct {
	cluster  string
	database string
}

var (
	createObjectRE = regexp.MustCompile(`(?is)^(CREATE\s+(?:DATABASE|TABLE|MATERIALIZED\s+VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s|\(|$)`)
	alterTableRE   = regexp.MustCompile(`(?is)^(ALTER\s+TABLE\s+)([A-Za-z_][A-Za-z0-9_]*)(\s)`)
	insertSelectRE = regexp.MustCompile(`(?is)^INSERT\s+INTO\s+[A-Za-z_][A-Za-z0-9_]*\s*(\([^)]*\))?\s*SELECT\s`)
	// engineRE finds a MergeTree-family engine with its arguments, if any
	// (none of tideline's has a parenthesis inside its arguments).
	engineRE = regexp.MustCompile(`(?is)\bENGINE\s*=\s*(Replacing|Summing|Aggregating|Collapsing|VersionedCollapsing|Graphite)?MergeTree\b(\s*\(([^()]*)\))?`)
	// replicatedRE spots an engine that is replicated already.
	replicatedRE = regexp.MustCompile(`(?i)\bENGINE\s*=\s*Replicated`)
)

// rewrite returns stmt as it must run on the cluster.
func (c clusterDDL) rewrite(stmt string) (string, error) {
	stmt = strings.TrimSpace(stmt)
	switch {
	case insertSelectRE.MatchString(stmt):
		return stmt, nil
	case renameRE.MatchString(stmt), dropTableRE.MatchString(stmt):
		return strings.TrimSuffix(stmt, ";") + " ON CLUSTER " + c.cluster, nil
	case alterTableRE.MatchString(stmt):
		return alterTableRE.ReplaceAllString(stmt, "${1}${2} ON CLUSTER "+c.cluster+"${3}"), nil
	}
	m := createObjectRE.FindStringSubmatchIndex(stmt)
	if m == nil {
		return "", fmt.Errorf("no rule to run this statement ON CLUSTER %s (CREATE DATABASE/TABLE/MATERIALIZED VIEW, ALTER TABLE, RENAME TABLE, DROP TABLE and INSERT … SELECT have one): %.60s…", c.cluster, stmt)
	}
	name := stmt[m[4]:m[5]]
	out := stmt[:m[5]] + " ON CLUSTER " + c.cluster + stmt[m[5]:]
	if replicatedRE.MatchString(out) {
		return out, nil
	}
	kind := strings.ToUpper(strings.Join(strings.Fields(stmt[m[2]:m[3]]), " "))
	e := engineRE.FindStringSubmatchIndex(out)
	switch {
	case strings.HasPrefix(kind, "CREATE DATABASE"):
	case e == nil && strings.HasPrefix(kind, "CREATE TABLE"):
		return "", fmt.Errorf("table %s: only MergeTree-family engines can be replicated on cluster %s", name, c.cluster)
	case e == nil:
		// A materialized view with TO: its rows land in the TO table,
		// replicated by that table's own migration.
	default:
		family := ""
		if e[2] >= 0 {
			family = out[e[2]:e[3]]
		}
		args := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s', '{replica}'", c.database, name)
		if e[6] >= 0 {
			if own := strings.TrimSpace(out[e[6]:e[7]]); own != "" {
				args += ", " + own
			}
		}
		out = out[:e[0]] + "ENGINE = Replicated" + family + "MergeTree(" + args + ")" + out[e[1]:]
	}
	return out, nil
}
