package storage

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The documents whose SQL operators and data teams copy.
var sqlDocs = []string{"../../docs/querying.md", "../../docs/operations.md"}

// sqlBlockRE is a ```sql block, indented or not (a runbook's list).
var sqlBlockRE = regexp.MustCompile("(?ms)^([ \\t]*)```sql\\n(.*?)^[ \\t]*```")

// docPlaceholders are the <words> the documents ask the reader to fill in,
// with what the test fills in.
var docPlaceholders = map[string]string{"<from>": "100", "<to>": "120"}

// placeholderRE is a <word> left unfilled.
var placeholderRE = regexp.MustCompile(`<[a-z_]+>`)

// accessControlRE is a statement of SQL access control (users, profiles,
// grants): 18.16 has none (it came in 20.4, and querying.md gives 18.16
// its users.xml instead), and the modern engine here has no users to
// create, so on it such a statement is only parsed (formatQuery).
var accessControlRE = regexp.MustCompile(`(?i)^\s*(CREATE\s+(USER|SETTINGS\s+PROFILE|ROLE|QUOTA)|GRANT|REVOKE)\b`)

type docStatement struct {
	doc, sql string
	line     int
}

// docStatements returns every statement of every ```sql block of the
// documents, placeholders filled in.
func docStatements(t *testing.T) []docStatement {
	t.Helper()
	var out []docStatement
	for _, doc := range sqlDocs {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range sqlBlockRE.FindAllStringSubmatchIndex(string(text), -1) {
			indent := string(text[m[2]:m[3]])
			body := string(text[m[4]:m[5]])
			line := 1 + strings.Count(string(text[:m[0]]), "\n")
			var lines []string
			for _, l := range strings.Split(body, "\n") {
				lines = append(lines, strings.TrimPrefix(l, indent))
			}
			body = strings.Join(lines, "\n")
			for k, v := range docPlaceholders {
				body = strings.ReplaceAll(body, k, v)
			}
			if p := placeholderRE.FindString(body); p != "" {
				t.Fatalf("%s:%d: placeholder %s has no value in docPlaceholders", doc, line, p)
			}
			for _, stmt := range strings.Split(body, ";") {
				if strings.TrimSpace(stripComments(stmt)) != "" {
					out = append(out, docStatement{doc, strings.TrimSpace(stmt), line})
				}
			}
		}
	}
	return out
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "--"); i >= 0 {
			l = l[:i]
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// Every SQL statement of docs/querying.md and docs/operations.md runs on
// the engine of the lane against a migrated database holding a chain
// named as the documents name theirs, so that a runbook cannot rot on a
// server version nobody tried it on. The reorganisation runbook's query
// finds the one height whose parent is not the stored block below it.
func TestDocsSQLRuns(t *testing.T) {
	ctx := testContext(t)
	c := openTest(t)
	const docChain = "mainnet"
	var blocks []*chaindata.BlockData
	for n := uint64(99); n <= 121; n++ {
		blocks = append(blocks, withTraces(transferBlock(n)))
	}
	require.NoError(t, c.WriteBlocks(ctx, docChain, blocks))
	// 110 replaced by a block of another hash: 111's parent is orphaned.
	require.NoError(t, c.WriteBlocks(ctx, docChain, blocksOf(forkWith(110, 2, 1, func(*chaindata.BlockData) {}))))
	require.NoError(t, c.SaveState(ctx, docChain, StateWatermark, 121))

	stmts := docStatements(t)
	require.Greater(t, len(stmts), 15, "the documents' SQL was found")
	ran := 0
	for _, s := range stmts {
		where := s.doc + ":" + strconv.Itoa(s.line)
		if accessControlRE.MatchString(stripComments(s.sql)) {
			if testCH.Native() {
				continue // no SQL access control on 18.16 (see accessControlRE)
			}
			var formatted string
			require.NoError(t, c.conn.QueryRow(ctx, "SELECT formatQuery(?)", s.sql).Scan(&formatted), where)
			continue
		}
		rows, err := c.conn.Query(ctx, s.sql)
		require.NoError(t, err, "%s:\n%s", where, s.sql)
		n := 0
		for rows.Next() {
			n++
		}
		require.NoError(t, rows.Err(), where)
		rows.Close()
		ran++
		if strings.Contains(s.sql, "prev_hash") {
			require.Equal(t, 1, n, "%s: the reorganisation runbook finds the orphaned height", where)
			var number uint64
			var parent, prev string
			require.NoError(t, c.conn.QueryRow(ctx, s.sql).Scan(&number, &parent, &prev))
			require.Equal(t, uint64(111), number)
		}
		if strings.Contains(s.sql, "-- name: progress") || strings.Contains(s.sql, "-- name: blocks_per_day") {
			require.Positive(t, n, "%s: reads the chain", where)
		}
	}
	require.Greater(t, ran, 15)
}
