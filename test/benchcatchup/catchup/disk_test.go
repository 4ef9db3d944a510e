package catchup

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vanishingFS removes entries the way ClickHouse does during a walk: a
// merge's temporary part and a replaced part listed by one ReadDir are
// gone by the time the walk reads them.
type vanishingFS struct {
	fs.FS
	root string
	// afterList: removed right after "." has been listed (before the walk
	// reads their info); beforeRead: removed when the walk lists them.
	afterList, beforeRead []string
}

func (v *vanishingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	for _, p := range v.beforeRead {
		if p == name {
			if err := os.RemoveAll(filepath.Join(v.root, p)); err != nil {
				return nil, err
			}
		}
	}
	es, err := fs.ReadDir(v.FS, name)
	if name == "." {
		for _, p := range v.afterList {
			if err := os.RemoveAll(filepath.Join(v.root, p)); err != nil {
				return nil, err
			}
		}
	}
	return es, err
}

func allocated(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Lstat(path)
	require.NoError(t, err)
	return uint64(info.Sys().(*syscall.Stat_t).Blocks) * 512
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", size)), 0o644))
}

func TestDuWalkCountsBlocksSkipsVanishedAndLinksOnce(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "data/db/t/all_1_1_0/n.bin"), 10000)
	writeFile(t, filepath.Join(root, "data/db/t/all_1_1_0/checksums.txt"), 100)
	writeFile(t, filepath.Join(root, "metadata/db/t.sql"), 300)
	// A hard link (as ALTER … FREEZE or a mutation makes) is one file.
	require.NoError(t, os.Link(filepath.Join(root, "data/db/t/all_1_1_0/n.bin"), filepath.Join(root, "n.link")))
	writeFile(t, filepath.Join(root, "gone.bin"), 50000)
	writeFile(t, filepath.Join(root, "tmp_merge_all_1_2_1/n.bin"), 50000)
	writeFile(t, filepath.Join(root, "data/db/t/all_2_2_0/n.bin"), 50000)

	// Everything that stays.
	var want uint64
	for _, p := range []string{".", "data", "data/db", "data/db/t", "data/db/t/all_1_1_0",
		"data/db/t/all_1_1_0/n.bin", "data/db/t/all_1_1_0/checksums.txt", "metadata", "metadata/db", "metadata/db/t.sql"} {
		want += allocated(t, filepath.Join(root, p))
	}
	require.Positive(t, want)

	fsys := &vanishingFS{FS: os.DirFS(root), root: root,
		afterList:  []string{"gone.bin", "tmp_merge_all_1_2_1"},
		beforeRead: []string{"data/db/t/all_2_2_0"}}
	u, err := newDuWalker(fsys).walk()
	require.NoError(t, err)
	require.Equal(t, want, u.Bytes)
	require.Equal(t, 11, u.Entries, "every entry read counts, the link's second name too")

	// The tree as it stands now, walked without anything vanishing.
	u2, err := newDuWalker(os.DirFS(root)).walk()
	require.NoError(t, err)
	require.Equal(t, u, u2)

	// A missing root is an error: nothing was measured.
	_, err = newDuWalker(os.DirFS(filepath.Join(root, "nope"))).walk()
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestDiskSamplerKeepsPeakAndLatest(t *testing.T) {
	root := t.TempDir()
	s := newDiskSampler(root)
	writeFile(t, filepath.Join(root, "a"), 100000)
	big, err := s.sample()
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(root, "a")))
	small, err := s.sample()
	require.NoError(t, err)
	require.Less(t, small, big)
	peak, ok := s.peakSeen()
	require.True(t, ok)
	require.Equal(t, big, peak)
	require.Equal(t, small, s.latest())
	require.Contains(t, s.summary(time.Now()), "2 walks of "+root)

	missing := newDiskSampler(filepath.Join(root, "nope"))
	_, err = missing.sample()
	require.Error(t, err)
	_, ok = missing.peakSeen()
	require.False(t, ok)
	require.Contains(t, missing.summary(time.Now()), "1 walks failed")
}

// A finished part never changes, so the next walk takes its figures from
// the walk before unless its directory changed; a tmp_ part (being
// written) is read every time.
func TestDuWalkReusesFinishedParts(t *testing.T) {
	root := t.TempDir()
	part := filepath.Join(root, "data/db/t/all_1_1_0")
	tmp := filepath.Join(root, "data/db/t/tmp_merge_all_1_2_1")
	writeFile(t, filepath.Join(part, "n.bin"), 5000)
	writeFile(t, filepath.Join(tmp, "n.bin"), 5000)
	require.NoError(t, os.Link(filepath.Join(part, "n.bin"), filepath.Join(root, "n.link")))
	w := newDuWalker(os.DirFS(root))
	first, err := w.walk()
	require.NoError(t, err)
	require.Zero(t, first.Reused)

	// Written in place without a change to the directory: ClickHouse never
	// does that to a finished part, so the walk does not see it, but it
	// does see the growing tmp_ part.
	grow := func(path string) uint64 {
		before := allocated(t, path)
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.Write(make([]byte, 100000))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return allocated(t, path) - before
	}
	grow(filepath.Join(part, "n.bin"))
	tmpGrowth := grow(filepath.Join(tmp, "n.bin"))
	second, err := w.walk()
	require.NoError(t, err)
	require.Equal(t, first.Bytes+tmpGrowth, second.Bytes, "the finished part (and its link, counted once) from the walk before")
	require.Equal(t, 1, second.Reused)
	require.Less(t, second.Entries, first.Entries)

	// A file created in the part changes the directory: read again, the
	// earlier growth included.
	writeFile(t, filepath.Join(part, "checksums.txt"), 100)
	third, err := w.walk()
	require.NoError(t, err)
	require.Zero(t, third.Reused)
	fresh, err := newDuWalker(os.DirFS(root)).walk()
	require.NoError(t, err)
	require.Equal(t, fresh.Bytes, third.Bytes)

	// A removed part is forgotten, not counted from memory.
	require.NoError(t, os.RemoveAll(part))
	fourth, err := w.walk()
	require.NoError(t, err)
	fresh, err = newDuWalker(os.DirFS(root)).walk()
	require.NoError(t, err)
	require.Equal(t, fresh.Bytes, fourth.Bytes)
	require.Less(t, fourth.Bytes, third.Bytes)
}
