package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
)

// DiskUsage is what the database holds on the server's disk, for the
// worker's disk gauges and the alert that compares the free disk with what
// the backlog will need (docs/operations.md, "Disk for a catch-up").
type DiskUsage struct {
	// LiveBytes are the active parts of the database's tables: the data.
	LiveBytes uint64
	// ReplacedBytes are parts a merge replaced that the server has not
	// removed yet (it keeps them for old_parts_lifetime): the transient
	// disk of a catch-up.
	ReplacedBytes uint64
	// Heights estimates the heights indexed, every chain together: the
	// rows of indexed_heights' active parts (a height written twice counts
	// twice until a merge folds it).
	Heights uint64
	// FreeBytes is the free space of the disk that holds the data, and
	// FreeKnown whether it could be learnt: from system.disks on a server
	// that has it (19.15 and later), else, for a server on this machine,
	// from the file system of its parts' directory.
	FreeBytes uint64
	FreeKnown bool
}

// BytesPerHeight is the live data per indexed height; zero before any.
func (u DiskUsage) BytesPerHeight() float64 {
	if u.Heights == 0 {
		return 0
	}
	return float64(u.LiveBytes) / float64(u.Heights)
}

// systemDisksSince is the first release with system.disks.
var systemDisksSince = serverVersion{19, 15}

// partsUsageQuery sums the database's parts by state; path is one active
// part's directory, on the data's file system.
type partsUsageQuery struct{}

func (partsUsageQuery) toSQL() (string, []any) {
	return `SELECT sumIf(bytes_on_disk, active), sumIf(bytes_on_disk, NOT active),
		sumIf(rows, active AND table = '` + tableIndexedHeights + `'), anyIf(path, active)
		FROM system.parts WHERE database = currentDatabase()`, nil
}

// diskFreeQuery reads the default disk's free space (19.15 and later).
type diskFreeQuery struct{}

func (diskFreeQuery) toSQL() (string, []any) {
	return `SELECT free_space FROM system.disks WHERE name = 'default'`, nil
}

// DiskUsage reads the database's parts and the data disk's free space.
func (c *Retention) DiskUsage(ctx context.Context) (DiskUsage, error) {
	var u DiskUsage
	var path string
	if err := c.queryRow(ctx, partsUsageQuery{}, &u.LiveBytes, &u.ReplacedBytes, &u.Heights, &path); err != nil {
		return DiskUsage{}, fmt.Errorf("storage: reading the parts of %s: %w", c.cfg.Database, err)
	}
	switch {
	case c.server.atLeast(systemDisksSince):
		if err := c.queryRow(ctx, diskFreeQuery{}, &u.FreeBytes); err != nil {
			return DiskUsage{}, fmt.Errorf("storage: reading system.disks: %w", err)
		}
		u.FreeKnown = true
	case path != "" && isLoopback(c.cfg.Addr):
		u.FreeBytes, u.FreeKnown = freeBytesAt(path)
	}
	return u, nil
}

// freeBytesAt is the space an unprivileged user may fill on the file
// system of path, asked of path or, when this process may not reach it
// (the server's data directory is usually its own user's), of the nearest
// ancestor it may: a data directory on its own mount is still asked at its
// mount point.
func freeBytesAt(path string) (uint64, bool) {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		var st syscall.Statfs_t
		if syscall.Statfs(p, &st) == nil {
			return st.Bavail * uint64(st.Bsize), true
		}
		if p == filepath.Dir(p) {
			return 0, false
		}
	}
}
