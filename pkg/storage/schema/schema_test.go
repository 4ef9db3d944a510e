package schema

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestStatementOf(t *testing.T) {
	cases := []struct {
		name, src, want, err string
	}{
		{name: "comments and trailing semicolon go", src: "-- why ? @x\nCREATE TABLE t (a UInt8) -- trailing ?\nENGINE = Memory;\n", want: "CREATE TABLE t (a UInt8) \nENGINE = Memory"},
		{name: "block comment", src: "/* a ; b ? */ SELECT 1", want: "SELECT 1"},
		{name: "semicolon in literal stays", src: "SELECT 'a;b', \"c;d\", `e;f`;", want: "SELECT 'a;b', \"c;d\", `e;f`"},
		{name: "escaped quotes", src: `SELECT 'it\'s', 'it''s' ;`, want: `SELECT 'it\'s', 'it''s'`},
		{name: "comment marker in literal stays", src: "SELECT '--x', '/*y*/'", want: "SELECT '--x', '/*y*/'"},
		{name: "comment after semicolon is fine", src: "SELECT 1; -- done\n", want: "SELECT 1"},
		{name: "two statements", src: "SELECT 1; SELECT 2", err: "more than one statement"},
		{name: "literal after semicolon", src: "SELECT 1; 'x'", err: "more than one statement"},
		{name: "empty", src: "-- nothing\n ; ", err: "no statement"},
		{name: "unterminated literal", src: "SELECT 'x", err: "unterminated ' literal"},
		{name: "unterminated comment", src: "SELECT 1 /* x", err: "unterminated /* comment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Statement(tc.src)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestLoadMigrationsChecksNames(t *testing.T) {
	ok := fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("SELECT 2")},
		"m/0001_a.sql": {Data: []byte("SELECT 1;")},
	}
	ms, err := Load(ok, "m")
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, "0001_a.sql", ms[0].Name)
	require.Equal(t, "SELECT 1", ms[0].Stmt)
	require.Equal(t, uint32(2), ms[1].Version)

	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/0001_a.sql": {Data: []byte("SELECT 1")}, "m/0003_c.sql": {Data: []byte("SELECT 3")}},
		"repeat":    {"m/0001_a.sql": {Data: []byte("SELECT 1")}, "m/0001_b.sql": {Data: []byte("SELECT 1")}},
		"bad name":  {"m/1_a.sql": {Data: []byte("SELECT 1")}},
		"two stmts": {"m/0001_a.sql": {Data: []byte("SELECT 1; SELECT 2")}},
	} {
		_, err := Load(fsys, "m")
		require.Error(t, err, name)
	}
}

func TestEmbeddedMigrationsLoad(t *testing.T) {
	ms, err := Numbered()
	require.NoError(t, err)
	files, err := fs.Glob(migrationFiles, "migrations/*.sql")
	require.NoError(t, err)
	require.Len(t, ms, len(files), "every file is a migration")
	require.GreaterOrEqual(t, len(ms), 15)
}

func TestLoadBaselineChecksFiles(t *testing.T) {
	ms := []File{{Version: 1, Name: "0001_a.sql"}, {Version: 2, Name: "0002_b.sql"}, {Version: 3, Name: "0003_c.sql"}}
	create := func(table string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("-- why\nCREATE TABLE IF NOT EXISTS " + table + "\n(\n    a UInt8\n)\nENGINE = ReplacingMergeTree\nORDER BY a;\n")}
	}
	ok := fstest.MapFS{"b/0002_t2.sql": create("t2"), "b/0001_t1.sql": create("t1")}
	b, err := LoadBaseline(ok, "b", 2, ms)
	require.NoError(t, err)
	require.Equal(t, []string{"0001_t1.sql", "0002_t2.sql"}, []string{b.Tables[0].Name, b.Tables[1].Name})
	require.Equal(t, ms[:2], b.Covers)
	require.Equal(t, File{Version: BaselineMarker, Name: "baseline_0002", Checksum: b.Marker.Checksum}, b.Marker)
	require.Len(t, b.Marker.Checksum, 64)

	other, err := LoadBaseline(fstest.MapFS{"b/0001_t1.sql": create("t1")}, "b", 2, ms)
	require.NoError(t, err)
	require.NotEqual(t, b.Marker.Checksum, other.Marker.Checksum, "the marker's checksum covers every file")

	for name, tc := range map[string]struct {
		fsys    fstest.MapFS
		version uint32
		err     string
	}{
		"version past the files": {ok, 4, "the binary has migrations 0001 to 0003"},
		"version zero":           {ok, 0, "the binary has migrations 0001 to 0003"},
		"no file":                {fstest.MapFS{"b/x/0001_t.sql": create("t")}, 2, "no baseline file"},
		"bad name":               {fstest.MapFS{"b/t1.sql": create("t1")}, 2, "name must be NNNN_lower_words.sql"},
		"name is not the table":  {fstest.MapFS{"b/0001_t1.sql": create("t2")}, 2, "must be one CREATE TABLE IF NOT EXISTS t1"},
		"without IF NOT EXISTS":  {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("CREATE TABLE t1 (a UInt8) ENGINE = Memory")}}, 2, "must be one CREATE TABLE IF NOT EXISTS t1"},
		"a copy":                 {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("INSERT INTO t1 (a) SELECT a FROM t0")}}, 2, "must be one CREATE TABLE"},
		"a swap":                 {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("RENAME TABLE t0 TO t1")}}, 2, "must be one CREATE TABLE"},
		"a drop":                 {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("DROP TABLE IF EXISTS t1")}}, 2, "must be one CREATE TABLE"},
		"two statements":         {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS t1 (a UInt8) ENGINE = Memory; DROP TABLE t0")}}, 2, "more than one statement"},
		"schema_migrations":      {fstest.MapFS{"b/0001_schema_migrations.sql": create("schema_migrations")}, 2, "created by Migrate itself"},
		"numbered past version":  {fstest.MapFS{"b/0003_t3.sql": create("t3")}, 2, "numbered after the baseline's version 0002"},
		"number repeated":        {fstest.MapFS{"b/0001_t1.sql": create("t1"), "b/0001_t2.sql": create("t2")}, 2, "one number each"},
	} {
		_, err := LoadBaseline(tc.fsys, "b", tc.version, ms)
		require.ErrorContains(t, err, tc.err, name)
	}
}
