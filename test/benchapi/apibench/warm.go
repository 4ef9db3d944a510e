package apibench

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// warm reads every file of the bench's database under ClickHouse's data
// folder once, so that the server's reads during the load find them in the
// page cache. Without it, what a route costs depends on what the box did
// before: on the 100,000-height index (3 GB), after other work, a look-up
// of 100 hashes took 90–490 ms with the files on disk and 53–88 ms with
// them in the page cache (docs/performance.md). An index larger than the
// machine's memory cannot be held this way; its figures are the disk's.
func (b *bench) warm(chDir string) error {
	root := filepath.Join(chDir, "data", "data", database)
	start := time.Now()
	var files, bytes int64
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// A part merged away while the walk runs: its files are gone,
			// and the merged part is read when the walk reaches it.
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyBuffer(io.Discard, f, buf)
		files, bytes = files+1, bytes+n
		return err
	})
	if err != nil {
		return fmt.Errorf("warming %s: %w", root, err)
	}
	b.say("bench-api: warmed the page cache: %d files, %.2f GB of %s read in %.1f s",
		files, float64(bytes)/1e9, root, time.Since(start).Seconds())
	return nil
}
