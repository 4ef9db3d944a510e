package storage

import (
	goflag "flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/tokens"
)

// The backfill of token_transfers from stored logs (migration 0048) is one
// INSERT … SELECT that decodes the logs by pkg/tokens' rules in SQL that
// 18.16 runs. Its one long part, the 256-bit amounts and ids written in
// decimal without a 256-bit type, is generated here (decimalLevels), so the
// file is written by this test with -update and checked against it on
// every run.

var updateBackfill = goflag.Bool("update", false, "rewrite the generated backfill migration")

const backfillTransfersFile = "schema/migrations/0048_backfill_token_transfers.sql"

// decimalLevels wraps from (a SELECT whose columns include the hex
// columns named in hexes, 64 hex digits each) in the subqueries that
// write each in decimal, as the column <prefix>dec, by long division: its
// eight 32-bit limbs are divided by 10^9 nine times over, each pass
// giving one base-10^9 digit as the remainder. Every step fits a UInt64:
// a remainder is below 10^9 < 2^30, so remainder·2^32 + limb < 2^63. A
// pass is one subquery level, its quotients its columns: ClickHouse
// expands aliases where they are used, so the whole division as one
// expression of aliases grows past the largest expression it accepts.
func decimalLevels(from string, hexes map[string]string) string {
	prefixes := make([]string, 0, len(hexes))
	for p := range hexes {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	var cols []string
	for _, p := range prefixes {
		for i := 0; i < 8; i++ { // limb i, least significant first
			cols = append(cols, fmt.Sprintf("toUInt64(reinterpretAsUInt32(reverse(unhex(substring(%s, %d, 8))))) AS %sq_%d", hexes[p], 57-8*i, p, i))
		}
	}
	sql := "SELECT *,\n    " + strings.Join(cols, ",\n    ") + "\nFROM (" + from + ")"
	for pass := 0; pass < 9; pass++ {
		cols = cols[:0]
		for _, p := range prefixes {
			src := func(i int) string { // the limb this pass divides
				if pass == 0 {
					return fmt.Sprintf("%sq_%d", p, i)
				}
				return fmt.Sprintf("%sq%d_%d", p, pass-1, i)
			}
			cur := func(i int) string { return fmt.Sprintf("%sc%d_%d", p, pass, i) }
			for i := 7; i >= 0; i-- {
				def := src(i)
				if i < 7 {
					def = fmt.Sprintf("(%s %% 1000000000) * 4294967296 + %s", cur(i+1), src(i))
				}
				if pass < 8 {
					cols = append(cols, fmt.Sprintf("intDiv((%s AS %s), 1000000000) AS %sq%d_%d", def, cur(i), p, pass, i))
				} else { // the last pass needs the remainders only
					cols = append(cols, fmt.Sprintf("(%s) AS %s", def, cur(i)))
				}
			}
			cols = append(cols, fmt.Sprintf("%s %% 1000000000 AS %sd%d", cur(0), p, pass))
		}
		sql = "SELECT *,\n    " + strings.Join(cols, ",\n    ") + "\nFROM (" + sql + ")"
	}
	cols = cols[:0]
	for _, p := range prefixes {
		digits := "toString(" + p + "d8)"
		for d := 7; d >= 0; d-- {
			digits += fmt.Sprintf(", substring(toString(1000000000 + %sd%d), 2)", p, d)
		}
		cols = append(cols, "replaceRegexpOne(concat("+digits+"), '^0+(.)', '\\\\1') AS "+p+"dec")
	}
	return "SELECT *,\n    " + strings.Join(cols, ",\n    ") + "\nFROM (" + sql + ")"
}

func TestBackfillTransfersFileIsGenerated(t *testing.T) {
	want := backfillTransfersSQL()
	if *updateBackfill {
		require.NoError(t, os.WriteFile(backfillTransfersFile, []byte(want), 0o644))
	}
	got, err := os.ReadFile(backfillTransfersFile)
	require.NoError(t, err)
	require.Equal(t, want, string(got), "run go test -run TestBackfillTransfersFileIsGenerated ./pkg/storage/ -update")
}

// backfillTransfersSQL is migration 0048: the header comment, then the
// statement.
func backfillTransfersSQL() string {
	const zeros48 = "000000000000000000000000000000000000000000000000"
	addrOK := func(topic string) string {
		return fmt.Sprintf("(length(%[1]s) = 66 AND substring(%[1]s, 1, 26) = '0x000000000000000000000000')", topic)
	}
	addr := func(topic string) string { return fmt.Sprintf("concat('0x', substring(%s, 27, 40))", topic) }
	// word(i) is the i-th 32-byte word of d as 64 hex digits; small(w)
	// tells a word whose upper 24 bytes are zero, and val(w) its value.
	word := func(i string) string { return fmt.Sprintf("substring(d, 1 + 64 * (%s), 64)", i) }
	small := func(w string) string { return fmt.Sprintf("(substring(%s, 1, 48) = '%s')", w, zeros48) }
	val := func(w string) string {
		return fmt.Sprintf("reinterpretAsUInt64(reverse(unhex(substring(%s, 49, 16))))", w)
	}

	erc20 := fmt.Sprintf("topic0 = '%s' AND topic_count = 3 AND length(d) = 64 AND %s AND %s",
		tokens.TopicTransfer, addrOK("topic1"), addrOK("topic2"))
	erc721 := fmt.Sprintf("topic0 = '%s' AND topic_count = 4 AND length(d) = 0 AND %s AND %s AND length(topic3) = 66",
		tokens.TopicTransfer, addrOK("topic1"), addrOK("topic2"))
	parties1155 := fmt.Sprintf("topic_count = 4 AND %s AND %s AND %s", addrOK("topic1"), addrOK("topic2"), addrOK("topic3"))
	single := fmt.Sprintf("topic0 = '%s' AND %s AND length(d) = 128", tokens.TopicTransferSingle, parties1155)
	// A batch in the ABI's standard encoding (tokens.decodeBatch): ids at
	// 64, values right after, nothing after them, as many of each.
	batch := fmt.Sprintf("topic0 = '%s' AND %s AND length(d) %% 64 = 0 AND nw >= 4"+
		" AND %s AND %s = 64 AND %s AND %s AND n <= nw AND 3 + n < nw"+
		" AND %s AND %s = 64 + 32 * (n + 1) AND m <= nw AND nw = 4 + n + m AND n = m",
		tokens.TopicTransferBatch, parties1155, small(word("0")), val(word("0")), small(word("1")), small(word("2")),
		small(word("3 + n")), val(word("1")))

	l1 := "SELECT chain_id, block_number, block_hash, tx_hash, tx_index, log_index, address AS token_address, is_canonical, version,\n" +
		"        d, length(d) / 64 AS nw, " + val(word("2")) + " AS n, " + val(word("3 + n")) + " AS m,\n" +
		"        multiIf(" + erc20 + ", 'erc20',\n" +
		"                " + erc721 + ", 'erc721',\n" +
		"                " + single + ", 'erc1155',\n" +
		"                " + batch + ", 'batch', '') AS kind,\n" +
		"        if(kind = 'erc20' OR kind = 'erc721', '', " + addr("topic1") + ") AS operator1155,\n" +
		"        if(kind = 'erc20' OR kind = 'erc721', " + addr("topic1") + ", " + addr("topic2") + ") AS from_address,\n" +
		"        if(kind = 'erc20' OR kind = 'erc721', " + addr("topic2") + ", " + addr("topic3") + ") AS to_address,\n" +
		"        multiIf(kind = 'erc20', [''], kind = 'erc721', [substring(topic3, 3)], kind = 'erc1155', [substring(d, 1, 64)],\n" +
		"                kind = 'batch', arraySlice(extractAll(d, '.{64}'), 4, if(kind = 'batch', n, 0)), emptyArrayString()) AS ids,\n" +
		"        multiIf(kind = 'erc20', [d], kind = 'erc721', ['" + strings.Repeat("0", 63) + "1'], kind = 'erc1155', [substring(d, 65, 64)],\n" +
		"                kind = 'batch', arraySlice(extractAll(d, '.{64}'), 5 + n, if(kind = 'batch', n, 0)), emptyArrayString()) AS amounts\n" +
		"    FROM (SELECT *, if(substring(data, 1, 2) = '0x', substring(data, 3), data) AS d FROM logs FINAL\n" +
		"          WHERE is_canonical = 1 AND topic0 IN ('" + tokens.TopicTransfer + "',\n" +
		"                '" + tokens.TopicTransferSingle + "',\n" +
		"                '" + tokens.TopicTransferBatch + "'))"
	l2 := "SELECT chain_id, block_number, block_hash, tx_hash, tx_index, log_index, toUInt32(batch_pos - 1) AS batch_index,\n" +
		"        token_address, if(kind = 'batch', 'erc1155', kind) AS standard,\n" +
		"        if(operator1155 = '', from_address, operator1155) AS operator, from_address, to_address,\n" +
		"        id_hex, amount_hex, is_canonical, version\n" +
		"    FROM (" + l1 + ")\n" +
		"    ARRAY JOIN ids AS id_hex, amounts AS amount_hex, arrayEnumerate(ids) AS batch_pos"
	blocks := "SELECT chain_id, number AS block_number, timestamp FROM blocks FINAL WHERE is_canonical = 1"
	wordN := func(i int) string {
		return fmt.Sprintf("reinterpretAsUInt64(reverse(unhex(substring(amount_hex, %d, 16))))", 49-16*i)
	}
	out := "SELECT chain_id, block_number, block_hash, timestamp, tx_hash, tx_index, log_index, batch_index, token_address, standard,\n" +
		"    operator, from_address, to_address, if(standard = 'erc20', '', i_dec) AS token_id, a_dec AS amount,\n" +
		"    " + wordN(0) + " AS amount_w0, " + wordN(1) + " AS amount_w1,\n" +
		"    " + wordN(2) + " AS amount_w2, " + wordN(3) + " AS amount_w3,\n" +
		"    is_canonical, version\n" +
		"FROM (" + decimalLevels(l2, map[string]string{"a_": "amount_hex", "i_": "id_hex"}) + ") AS t\n" +
		"ALL INNER JOIN (" + blocks + ") AS b USING (chain_id, block_number)"
	header := `-- Backfill of token_transfers (0044) from the stored logs: the transfers
-- of every canonical log, as the write path derives them (pkg/tokens: the
-- same shapes, the same malformed logs left out), with the block's time.
-- GENERATED by TestBackfillTransfersFileIsGenerated
-- (pkg/storage/transfers_backfill_sql_test.go; go test -run
-- TestBackfillTransfersFileIsGenerated ./pkg/storage/ -update), which also
-- checks that it is what that test generates; TestBackfillTransfersMatches
-- TheWritePath checks it against the write path.
--
-- Decimal amounts and ids without a 256-bit type (18.16 has none): long
-- division of the eight 32-bit limbs by 10^9, nine passes, each remainder
-- one base-10^9 digit, a subquery level a pass (decimalLevels explains).
--
-- Idempotent and safe beside the write path, as the look-up backfills
-- (0017): every row carries the version of its log, so a second run adds
-- copies that collapse, and a row the write path wrote or tombstoned later
-- has a newer version and wins. It reads logs whole (FINAL, then
-- is_canonical = 1 in WHERE, never PREWHERE) and holds the canonical
-- blocks' heights and times in memory for the join (about 30 bytes a
-- block). Runs under clickhouse.migrate_timeout; docs/operations.md has
-- its rate.
--
-- The join runs on 18.16 and on modern servers alike: both sides have an
-- alias (joined_subquery_requires_alias, on since 20.3, refuses a join of
-- unnamed subqueries), and it is ALL, not ANY: the right side has one row
-- per key (blocks FINAL, canonical), so ALL keeps every transfer of a
-- block, where a modern server's ANY (any_join_distinct_right_table_keys
-- = 0) would keep one. The first text of this file (ANY, no aliases) did
-- the same on 18.16, the only server it ran on; Migrate accepts its
-- checksum (mendedMigrations, migrate_files.go).
`
	return header + "INSERT INTO token_transfers (" + strings.Join(tokenTransferColumns, ", ") + ")\n" + out + ";\n"
}
