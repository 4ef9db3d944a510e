// Package schema is tideline's ClickHouse schema: the numbered migration
// files and the baseline, compiled in, read and checked. Applying them is
// storage.Migrate's; this package has no connection.
package schema

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The numbered migration files: how they are named, read and checked,
// and how the one statement of a file is taken out of its comments.

// The schema belongs to the binary: the files are compiled in, so a binary
// always knows exactly which schema it was tested against.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationNameRE is NNNN_words.sql; the number is the version.
var migrationNameRE = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// File is one numbered migration or baseline file: its version (the
// number in its name), its name, its one statement without comments, and
// the checksum of its whole text, which schema_migrations records.
type File struct {
	Version  uint32
	Name     string
	Stmt     string
	Checksum string
}

// Numbered returns the binary's numbered migration files, checked.
func Numbered() ([]File, error) { return Load(migrationFiles, "migrations") }

// MigrationsTable is the table where Migrate records each file it ran,
// with its checksum; it is created by Migrate itself, never by a file.
const MigrationsTable = "schema_migrations"

// Load reads and checks every file. Versions must run 1, 2, 3…
// without gaps or repeats: two branches that both add 0006 then fail here
// instead of one silently shadowing the other.
func Load(fsys fs.FS, dir string) ([]File, error) {
	out, err := readSQLFiles(fsys, dir, "migration")
	if err != nil {
		return nil, err
	}
	for i, m := range out {
		if want := uint32(i + 1); m.Version != want {
			return nil, fmt.Errorf("schema: migration file %q: expected version %04d (versions start at 1, without gaps or repeats)", m.Name, want)
		}
	}
	return out, nil
}

// readSQLFiles reads every NNNN_words.sql file of dir, sorted by number,
// each with its one statement and the checksum of its whole text. what
// names the kind of file in errors.
func readSQLFiles(fsys fs.FS, dir, what string) ([]File, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("schema: reading %s files: %w", what, err)
	}
	var out []File
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationNameRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("schema: %s file %q: name must be NNNN_lower_words.sql", what, e.Name())
		}
		v, _ := strconv.ParseUint(m[1], 10, 32)
		src, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("schema: %s file %q: %w", what, e.Name(), err)
		}
		stmt, err := Statement(string(src))
		if err != nil {
			return nil, fmt.Errorf("schema: %s file %q: %w", what, e.Name(), err)
		}
		out = append(out, File{
			Version:  uint32(v),
			Name:     e.Name(),
			Stmt:     stmt,
			Checksum: Checksum(src),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// mendedMigrations lists, by version, the checksums of earlier texts of a
// numbered file that was mended after it had been applied: a file is
// never edited, except where its first text fails or stores the wrong
// rows on a server it must run on, and then only so that the new text
// stores what the old one stored wherever the old one ran. A database
// that recorded an earlier text has what the file makes; Migrate accepts
// that checksum and runs nothing again. Any other checksum is still an
// edit, and refused. Each entry says why the text changed.
var mendedMigrations = map[uint32][]mendedText{
	48: {{
		checksum: "e49631a27cf8761d4e25e3eace9cd533a5365722d0d3ffa28bd9b15298cf37d0",
		why: "the join's subqueries had no aliases (refused since ClickHouse 20.3) and it was ANY, " +
			"which keeps one transfer per block on modern servers; on 18.16, the only server where it ran, it stored what the new text stores",
	}},
}

// mendedText is one earlier text of a numbered file.
type mendedText struct {
	checksum string
	why      string
}

// Mended says whether sum is the checksum of an earlier text of f that
// was mended (mendedMigrations), and why the text changed.
func (f File) Mended(sum string) (why string, ok bool) {
	for _, t := range mendedMigrations[f.Version] {
		if t.checksum == sum {
			return t.why, true
		}
	}
	return "", false
}

// Checksum is the checksum of a file's text as schema_migrations records it.
func Checksum(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// Statement returns the one statement in a migration file, with comments
// removed and a final `;` dropped. Comments go because clickhouse-go scans
// query text for `?` placeholders and a comment could hold one; a second
// statement is refused because the native protocol runs one per query.
func Statement(src string) (string, error) {
	var b strings.Builder
	ended := false // a `;` was seen outside literals and comments
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
			} else {
				i += j
			}
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return "", fmt.Errorf("unterminated /* comment at byte %d", i)
			}
			b.WriteByte(' ')
			i += j + 4
		case c == '\'' || c == '"' || c == '`':
			if ended {
				return "", fmt.Errorf("more than one statement (text after `;` at byte %d)", i)
			}
			j, err := literalEnd(src, i)
			if err != nil {
				return "", err
			}
			b.WriteString(src[i:j])
			i = j
		case c == ';':
			ended = true
			i++
		default:
			if ended && !isSpace(c) {
				return "", fmt.Errorf("more than one statement (text after `;` at byte %d)", i)
			}
			b.WriteByte(c)
			i++
		}
	}
	stmt := strings.TrimSpace(b.String())
	if stmt == "" {
		return "", fmt.Errorf("no statement")
	}
	return stmt, nil
}

// literalEnd returns the index just past the quoted literal starting at
// src[start]. ClickHouse escapes a quote with a backslash or by doubling it.
func literalEnd(src string, start int) (int, error) {
	q := src[start]
	for i := start + 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case q:
			if i+1 < len(src) && src[i+1] == q {
				i++
				continue
			}
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated %c literal at byte %d", q, start)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
