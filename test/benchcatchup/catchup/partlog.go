package catchup

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// tableWrites is what one table's parts wrote during the run, from
// system.part_log: bytes of the parts inserts created and of the parts
// merges wrote.
type tableWrites struct {
	Table            string
	Merged, Inserted uint64
}

// amplification is the bytes merges wrote per byte inserted: how many
// times the data was rewritten on its way to its final parts. -1 when
// nothing was inserted (undefined, not zero).
func (w tableWrites) amplification() float64 {
	if w.Inserted == 0 {
		return -1
	}
	return float64(w.Merged) / float64(w.Inserted)
}

// sumWrites is the writes of every table together.
func sumWrites(ws []tableWrites) tableWrites {
	var t tableWrites
	for _, w := range ws {
		t.Merged += w.Merged
		t.Inserted += w.Inserted
	}
	return t
}

// byMerged orders tables by the bytes their merges wrote, most first (then
// by name): the tables to look at come first.
func byMerged(ws []tableWrites) {
	slices.SortFunc(ws, func(a, b tableWrites) int {
		if c := cmp.Compare(b.Merged, a.Merged); c != 0 {
			return c
		}
		return cmp.Compare(a.Table, b.Table)
	})
}

// mergesLine is the progress line of the write amplification, overall and
// per table (ws sorted by byMerged).
func mergesLine(ws []tableWrites) string {
	t := sumWrites(ws)
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s %.3f/%.3f GB = %.2f", w.Table, gb(w.Merged), gb(w.Inserted), w.amplification()))
	}
	return fmt.Sprintf("merges (part log of %s, merged/inserted): %.3f/%.3f GB = %.2f; %s",
		database, gb(t.Merged), gb(t.Inserted), t.amplification(), strings.Join(parts, "; "))
}

// partLogWrites flushes the server's logs and reads, per table of db, the
// bytes of new parts and of merged parts. The event types are compared by
// their numbers, which 18.16 (NEW_PART = 1, MERGE_PARTS = 2) and later
// servers (NewPart, MergeParts) share; failed events (error ≠ 0) wrote
// nothing that stayed. Mutations (MUTATE_PART) are not merges: a catch-up
// runs none.
func partLogWrites(ctx context.Context, conn driver.Conn, db string) ([]tableWrites, error) {
	// The part log is written from memory every 7.5 s: the last merges
	// would be missing without the flush.
	if err := conn.Exec(ctx, "SYSTEM FLUSH LOGS"); err != nil {
		return nil, fmt.Errorf("SYSTEM FLUSH LOGS: %w", err)
	}
	rows, err := conn.Query(ctx, `
		SELECT table,
		       sumIf(size_in_bytes, toInt8(event_type) = 2) AS merged,
		       sumIf(size_in_bytes, toInt8(event_type) = 1) AS inserted
		FROM system.part_log
		WHERE database = ? AND error = 0
		GROUP BY table`, db)
	if err != nil {
		return nil, fmt.Errorf("reading system.part_log for %s: %w", db, err)
	}
	defer rows.Close()
	var ws []tableWrites
	for rows.Next() {
		var w tableWrites
		if err := rows.Scan(&w.Table, &w.Merged, &w.Inserted); err != nil {
			return nil, fmt.Errorf("reading system.part_log for %s: %w", db, err)
		}
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading system.part_log for %s: %w", db, err)
	}
	byMerged(ws)
	return ws, nil
}

// liveBytes is the size of db's active parts: the data that stays once
// every replaced part is gone.
func liveBytes(ctx context.Context, conn driver.Conn, db string) (uint64, error) {
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = ? AND active = 1", db).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading system.parts for %s: %w", db, err)
	}
	return n, nil
}

// traceTables are the tables a traced catch-up adds (storage's
// traces_rows.go).
var traceTables = []string{"traces", "address_traces"}

// tableBytes is the size of each of tables' active parts in db.
func tableBytes(ctx context.Context, conn driver.Conn, db string, tables []string) (map[string]uint64, error) {
	// The names are the bench's own constants, quoted here: a bound slice
	// reaches 18.16 as an Array, which IN refuses.
	rows, err := conn.Query(ctx, "SELECT table, sum(bytes_on_disk) FROM system.parts WHERE database = ? AND active = 1 AND table IN ('"+
		strings.Join(tables, "', '")+"') GROUP BY table", db)
	if err != nil {
		return nil, fmt.Errorf("reading system.parts for %s: %w", db, err)
	}
	defer rows.Close()
	out := map[string]uint64{}
	for rows.Next() {
		var t string
		var n uint64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, fmt.Errorf("reading system.parts for %s: %w", db, err)
		}
		out[t] = n
	}
	return out, rows.Err()
}

// measureTraces says the trace tables' bytes on disk, per height and per
// frame, by table.
func (b *bench) measureTraces(ctx context.Context, res *result) {
	res.TraceBytes = -1
	if res.Frames == 0 {
		return
	}
	sizes, err := tableBytes(ctx, b.conn, database, traceTables)
	if err != nil {
		b.say("trace tables: %v", err)
		return
	}
	var all uint64
	var parts []string
	for _, t := range traceTables {
		all += sizes[t]
		parts = append(parts, fmt.Sprintf("%s %.3f GB, %.0f bytes/height, %.1f bytes/frame",
			t, gb(sizes[t]), float64(sizes[t])/float64(res.Heights), float64(sizes[t])/float64(res.Frames)))
	}
	res.TraceBytes = float64(all)
	b.say("trace tables on disk (active parts, %d frames, %d heights): %s; together %.0f bytes/height, %.1f bytes/frame",
		res.Frames, res.Heights, strings.Join(parts, "; "), res.traceBytesPer(res.Heights), res.traceBytesPer(res.Frames))
}

// measureDisk ends the disk measurement after the check: the last walk
// (disk_end_gb), the peak, the live data and the merges' amplification.
// What cannot be read is reported as -1 and said, the run goes on.
func (b *bench) measureDisk(ctx context.Context, res *result) {
	res.DiskPeakGB, res.DiskEndGB, res.LiveGB, res.MergeAmplification = -1, -1, -1, -1
	b.disk.halt()
	if end, err := b.disk.sample(); err != nil {
		b.say("%v", err)
	} else {
		res.DiskEndGB = gb(end)
	}
	if peak, ok := b.disk.peakSeen(); ok {
		res.DiskPeakGB = gb(peak)
	}
	b.say("%s", b.disk.summary(b.workerStart))
	if live, err := liveBytes(ctx, b.conn, database); err != nil {
		b.say("live data: %v", err)
	} else {
		res.LiveGB = gb(live)
		b.say("live data (active parts of %s): %.3f GB", database, res.LiveGB)
	}
	b.measureTraces(ctx, res)
	ws, err := partLogWrites(ctx, b.conn, database)
	if err != nil {
		b.say("merges: %v", err)
		return
	}
	res.MergeAmplification = sumWrites(ws).amplification()
	b.say("%s", mergesLine(ws))
}
