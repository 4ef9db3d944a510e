package catchup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// diskEvery is the period of the data directory's walk: often enough to
// catch a peak that builds up over minutes (replaced parts stay on disk for
// old_parts_lifetime, 8 minutes on 18.16), rare enough that the walks cost
// little CPU.
const diskEvery = 10 * time.Second

// diskUsage is what a directory tree takes on disk, counted as du counts
// it: the allocated blocks of every file and directory (ClickHouse's parts
// are many small files, each taking at least one block), a file with
// several hard links once.
type diskUsage struct {
	Bytes   uint64
	Entries int // files and directories read by this walk
	Reused  int // finished leaf directories counted from the last walk's figures
}

// duWalker measures a directory tree again and again. A long catch-up
// holds hundreds of thousands of files (every part is a directory of two
// files per column, and replaced parts stay for minutes), and an lstat of
// each every 10 s would cost a large share of a core. But a part is
// written under a tmp_ name and never changes once renamed, so a directory
// without subdirectories whose name does not start with "tmp" is counted
// once and remembered by its inode and mtime (which any file created,
// renamed or removed in it changes); the next walks read only the
// directories above the parts and the new parts.
type duWalker struct {
	fsys   fs.FS
	leaves map[string]leafUsage // by path, the finished leaf directories of the last walk
}

type inode struct{ dev, ino uint64 }

// leafUsage is a remembered leaf directory: what it counted, and the files
// with several links, deduplicated again on every walk.
type leafUsage struct {
	id     inode
	mtime  syscall.Timespec
	bytes  uint64           // the directory and its files with one link
	linked map[inode]uint64 // blocks of its files with several links
}

func newDuWalker(fsys fs.FS) *duWalker { return &duWalker{fsys: fsys} }

// walk measures the tree once. ClickHouse removes a merge's temporary part
// and replaced parts while the walk runs: an entry listed and gone before
// it is read is skipped, not an error. Only a missing root is.
func (w *duWalker) walk() (diskUsage, error) {
	t := duTally{linked: map[inode]bool{}, leaves: map[string]leafUsage{}}
	root, err := fs.Stat(w.fsys, ".")
	if err != nil {
		return diskUsage{}, err
	}
	if err := w.dir(".", root, &t); err != nil {
		return diskUsage{}, err
	}
	w.leaves = t.leaves
	return t.usage, nil
}

// duTally is one walk's running count.
type duTally struct {
	usage  diskUsage
	linked map[inode]bool // files with several links counted so far
	leaves map[string]leafUsage
}

// addLinked counts a file with several links the first time one of its
// names is seen.
func (t *duTally) addLinked(id inode, blocks uint64) {
	if !t.linked[id] {
		t.linked[id] = true
		t.usage.Bytes += blocks
	}
}

// dir counts the directory at path (info is its own) and what it holds.
func (w *duWalker) dir(path string, info fs.FileInfo, t *duTally) error {
	st, _ := info.Sys().(*syscall.Stat_t)
	cacheable := path != "." && st != nil && !strings.HasPrefix(info.Name(), "tmp")
	if cacheable {
		if l, ok := w.leaves[path]; ok && l.id == (inode{uint64(st.Dev), st.Ino}) && l.mtime == st.Mtim {
			t.usage.Bytes += l.bytes
			for id, blocks := range l.linked {
				t.addLinked(id, blocks)
			}
			t.leaves[path] = l
			t.usage.Reused++
			return nil
		}
	}
	entries, err := fs.ReadDir(w.fsys, path)
	if err != nil {
		if path != "." && errors.Is(err, fs.ErrNotExist) {
			return nil // gone between its listing and its reading
		}
		return err
	}
	var leaf leafUsage
	isLeaf := true
	count := func(fi fs.FileInfo) {
		t.usage.Entries++
		fst, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			t.usage.Bytes += uint64(fi.Size())
			cacheable = false
			return
		}
		id, blocks := inode{uint64(fst.Dev), fst.Ino}, uint64(fst.Blocks)*512 // st_blocks is in 512-byte units
		if fst.Nlink > 1 && !fi.IsDir() {
			if leaf.linked == nil {
				leaf.linked = map[inode]uint64{}
			}
			leaf.linked[id] = blocks
			t.addLinked(id, blocks)
			return
		}
		leaf.bytes += blocks
		t.usage.Bytes += blocks
	}
	count(info)
	for _, e := range entries {
		sub := e.Name()
		if path != "." {
			sub = path + "/" + sub
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			isLeaf = false
			if err := w.dir(sub, fi, t); err != nil {
				return err
			}
			continue
		}
		count(fi)
	}
	if cacheable && isLeaf {
		leaf.id, leaf.mtime = inode{uint64(st.Dev), st.Ino}, st.Mtim
		t.leaves[path] = leaf
	}
	return nil
}

// rusageThread is RUSAGE_THREAD (Linux): getrusage for the calling thread
// only, so a walk's CPU is told apart from the simulated chain's, which
// serves the worker from the same process.
const rusageThread = 1

// threadCPU is the calling thread's user and system CPU time.
func threadCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// walkCost is what one walk took.
type walkCost struct {
	Entries, Reused int // as in diskUsage
	Wall, CPU       time.Duration
}

// diskSampler walks ClickHouse's data directory every diskEvery from the
// worker's start to the end of the check, keeping the largest size seen
// and the costliest walk.
type diskSampler struct {
	root   string
	walker *duWalker

	walkMu sync.Mutex // one walk at a time: the walker keeps the last walk's leaves

	mu       sync.Mutex
	walks    int
	peak     uint64
	peakAt   time.Time
	last     uint64
	costly   walkCost      // the walk that took the most CPU
	walkCPU  time.Duration // every walk's
	failures int
	lastErr  error

	stopOnce sync.Once
	stop     func()
}

func newDiskSampler(root string) *diskSampler {
	return &diskSampler{root: root, walker: newDuWalker(os.DirFS(root)), stop: func() {}}
}

// start samples once now, then every diskEvery in the background until
// halt (or ctx's end).
func (s *diskSampler) start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.sample()
		every(ctx, diskEvery, func() { s.sample() })
	}()
	s.stop = func() {
		cancel()
		<-done
	}
}

// halt stops the background walks and waits for the one under way.
func (s *diskSampler) halt() { s.stopOnce.Do(func() { s.stop() }) }

// sample walks the directory once and records the size and the cost.
func (s *diskSampler) sample() (uint64, error) {
	s.walkMu.Lock()
	defer s.walkMu.Unlock()
	// The thread's CPU counts this walk only if the goroutine stays on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, cpuErr := threadCPU()
	t0 := time.Now()
	u, err := s.walker.walk()
	wall := time.Since(t0)
	cpu1, cpuErr2 := threadCPU()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failures++
		s.lastErr = fmt.Errorf("walking %s: %w", s.root, err)
		return 0, s.lastErr
	}
	s.walks++
	s.last = u.Bytes
	if u.Bytes > s.peak {
		s.peak, s.peakAt = u.Bytes, time.Now()
	}
	c := walkCost{Entries: u.Entries, Reused: u.Reused, Wall: wall, CPU: -1}
	if cpuErr == nil && cpuErr2 == nil {
		c.CPU = cpu1 - cpu0
		s.walkCPU += c.CPU
	}
	if s.walks == 1 || c.CPU > s.costly.CPU {
		s.costly = c
	}
	return u.Bytes, nil
}

// peakSeen is the largest size any walk found; false before a walk
// succeeded.
func (s *diskSampler) peakSeen() (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.walks > 0
}

// latest is the size the newest walk found (0 before any).
func (s *diskSampler) latest() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// summary is the sampler's progress line, relative to the worker's start.
func (s *diskSampler) summary(workerStart time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("disk: %d walks of %s (every %s): peak %.3f GB at %.0fs, end %.3f GB; the walks' CPU %s in all, the costliest %s CPU and %s wall, reading %d entries (%d finished parts taken from the walk before)",
		s.walks, s.root, diskEvery, gb(s.peak), s.peakAt.Sub(workerStart).Seconds(), gb(s.last),
		s.walkCPU.Round(time.Millisecond), s.costly.CPU.Round(time.Millisecond), s.costly.Wall.Round(time.Millisecond), s.costly.Entries, s.costly.Reused)
	if s.failures > 0 {
		line += fmt.Sprintf("; %d walks failed, the last: %v", s.failures, s.lastErr)
	}
	return line
}

// gb is bytes in GB (10^9 bytes, as disks are sold).
func gb(bytes uint64) float64 { return float64(bytes) / 1e9 }
