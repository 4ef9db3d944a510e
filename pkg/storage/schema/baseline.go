package schema

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
)

// The baseline is the schema at version BaselineVersion, written as one
// CREATE TABLE per table in its final form (baseline/NNNN_<table>.sql, the
// number being the migration that first created the table, so tables are
// created in the order history created them). A database with nothing in
// it gets its tables from there, and not by replaying the numbered files:
// those create tables with 8,192-row granules only to copy them into
// smaller-granule tables, swap the names and drop the old ones (0022-0043),
// and traces once more to store their input and output as bytes
// (0058-0061).
// Numbered files above BaselineVersion then run on top, as on an existing
// database. TestBaselineMatchesTheNumberedMigrations keeps the two paths
// equal; the README ("Migrations") says how to move the baseline.
//
//go:embed baseline/*.sql
var baselineFiles embed.FS

// BaselineVersion is the numbered file whose schema the baseline is.
const BaselineVersion = 61

// BaselineMarker is the schema_migrations version of the row that says a
// database is, or was, created from the baseline. Numbered files start at
// 1, so none has it, and a binary that knows no baseline ignores it.
const BaselineMarker = 0

// Baseline is the schema at one version as one file per table.
type Baseline struct {
	Version uint32
	// Tables are the files' CREATE TABLE IF NOT EXISTS statements, in
	// file order.
	Tables []File
	// Covers are the numbered files 1..version: recorded, with their own
	// checksums, once the tables exist, so that the runner skips them and
	// an edit of one is still refused.
	Covers []File
	// Marker is the BaselineMarker row, recorded before the first table:
	// named baseline_NNNN, its checksum covering every baseline file.
	Marker File
}

// baselineCreateRE is the only statement a baseline file may hold: a
// baseline creates, and never copies, renames or drops.
var baselineCreateRE = regexp.MustCompile(`(?is)^CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// Embedded returns the binary's baseline, checked against its numbered
// files ms (Numbered).
func Embedded(ms []File) (Baseline, error) {
	return LoadBaseline(baselineFiles, "baseline", BaselineVersion, ms)
}

// LoadBaseline reads and checks the baseline files of dir against the
// numbered files ms.
func LoadBaseline(fsys fs.FS, dir string, version uint32, ms []File) (Baseline, error) {
	if version < 1 || int(version) > len(ms) {
		return Baseline{}, fmt.Errorf("schema: baseline version %04d: the binary has migrations 0001 to %04d", version, len(ms))
	}
	tables, err := readSQLFiles(fsys, dir, "baseline")
	if err != nil {
		return Baseline{}, err
	}
	if len(tables) == 0 {
		return Baseline{}, fmt.Errorf("schema: no baseline file in %s", dir)
	}
	sum := sha256.New()
	for i, t := range tables {
		table := migrationNameRE.FindStringSubmatch(t.Name)[2]
		create := baselineCreateRE.FindStringSubmatch(t.Stmt)
		switch {
		case create == nil || create[1] != table:
			return Baseline{}, fmt.Errorf("schema: baseline file %q: must be one CREATE TABLE IF NOT EXISTS %s (…)", t.Name, table)
		case table == MigrationsTable:
			return Baseline{}, fmt.Errorf("schema: baseline file %q: %s is created by Migrate itself", t.Name, table)
		case t.Version > version:
			return Baseline{}, fmt.Errorf("schema: baseline file %q: numbered after the baseline's version %04d", t.Name, version)
		case i > 0 && t.Version == tables[i-1].Version:
			return Baseline{}, fmt.Errorf("schema: baseline files %q and %q: one number each", tables[i-1].Name, t.Name)
		}
		fmt.Fprintf(sum, "%s %s\n", t.Name, t.Checksum)
	}
	return Baseline{
		Version: version,
		Tables:  tables,
		Covers:  ms[:version],
		Marker: File{
			Version:  BaselineMarker,
			Name:     fmt.Sprintf("baseline_%04d", version),
			Checksum: hex.EncodeToString(sum.Sum(nil)),
		},
	}, nil
}
