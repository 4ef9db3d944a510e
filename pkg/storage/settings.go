package storage

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// Insert settings. Every insert of this package (WriteBlocks, RemoveBlock,
// SaveState, Migrate's records) is sent with them, so the write order
// "transactions, logs, blocks, marks last" means the same thing on every
// server: when an insert returns, its rows are in a part and visible.
//
// The live path (WriteBlocks of one height) and the bulk path (a range of
// a thousand) use the same settings on purpose: both must be synchronous
// for the mark to follow the data, and what makes the bulk path cheap is
// its size (one insert per table per call), not a setting.
//
//   - async_insert = 0: 26.2 and later turn asynchronous inserts on by
//     default, native-protocol batches included. An asynchronous insert
//     waits for a buffer flush (~50-200 ms) before it returns, which is
//     latency on the live path and nothing gained on the bulk path whose
//     inserts are already large; with wait_for_async_insert = 0 it would
//     even return before the rows are written, and a mark could become
//     visible before its block's rows.
//   - wait_for_async_insert = 1: if a user profile forces async_insert on
//     anyway, the insert still returns only once the rows are written, so
//     the marks still come last.
//   - optimize_on_insert = 0: with it on (the default since it exists) the
//     server runs the ReplacingMergeTree merge over each inserted block.
//     WriteBlocks never sends two rows with one key in a block (it refuses
//     a height twice in a call, and a stale position's tombstone is only
//     made for a position the new block lacks), so that pass finds nothing
//     to merge and only costs time on large inserts.
//
// 18.16 rejects a setting it does not know (UNKNOWN_SETTING), so each one
// is sent only to servers from the version that introduced it.

// knownSetting is one insert setting and the first server version that
// accepts it.
type knownSetting struct {
	name  string
	value any
	since serverVersion
}

var insertSettingsTable = []knownSetting{
	{"async_insert", 0, serverVersion{21, 11}},
	{"wait_for_async_insert", 1, serverVersion{21, 11}},
	{"optimize_on_insert", 0, serverVersion{20, 12}},
}

// serverVersion is a ClickHouse release as major.minor; the patch and build
// numbers never change which settings exist.
type serverVersion struct {
	major, minor int
}

func (v serverVersion) atLeast(o serverVersion) bool {
	return v.major > o.major || (v.major == o.major && v.minor >= o.minor)
}

func (v serverVersion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// parseServerVersion reads what `SELECT version()` returns ("18.16.1",
// "26.7.1.1", "24.8.4.13-lts" …).
func parseServerVersion(s string) (serverVersion, error) {
	parts := strings.SplitN(strings.TrimSpace(s), ".", 3)
	if len(parts) < 2 {
		return serverVersion{}, fmt.Errorf("server version %q is not major.minor[.patch…]", s)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return serverVersion{}, fmt.Errorf("server version %q is not major.minor[.patch…]", s)
	}
	return serverVersion{major, minor}, nil
}

// insertSettings returns the settings of the table above that the server
// knows.
func insertSettings(v serverVersion) clickhouse.Settings {
	out := clickhouse.Settings{}
	for _, s := range insertSettingsTable {
		if v.atLeast(s.since) {
			out[s.name] = s.value
		}
	}
	return out
}

// serverVersionQuery is asked once at Open.
type serverVersionQuery struct{}

func (serverVersionQuery) toSQL() (string, []any) { return "SELECT version()", nil }

// RecommendedOldPartsLifetime is the server setting old_parts_lifetime
// (MergeTree, in the server's <merge_tree> section) tideline's deployment
// sets and bench-catchup runs with: how long a part a merge replaced stays
// on disk. The server's default, 8 minutes, keeps several times a
// catch-up's data in replaced parts; a minute still outlasts Linux's
// write-back of dirty pages (30 s), which is what the kept parts guard
// against on a server that does not fsync its parts (docs/operations.md,
// "Disk for a catch-up").
const RecommendedOldPartsLifetime = time.Minute
