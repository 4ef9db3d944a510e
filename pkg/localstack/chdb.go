package localstack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// The modern engine. No modern ClickHouse server installs on these
// machines (Debian packages 18.16), but chDB, ClickHouse's engine as a
// library, does (npm). test/chdbhttp serves ClickHouse's HTTP interface
// from it, one query at a time, so the same clients (clickhouse-go with
// Protocol HTTP, curl) run the same SQL on a modern engine.

// ChDBOptions configure StartChDB.
type ChDBOptions struct {
	// Compatibility is the compatibility setting every request runs under,
	// as a server's user profile would set it ("24.8": what the compose
	// file ships); empty runs at the engine's own defaults.
	Compatibility string
}

// StartChDB starts chdb-http (make tools builds it, with libchdb.so beside
// it in <home>/bin) on a free loopback port with its data under dir and
// waits until it answers `SELECT 1`. The result's Protocol is http and its
// Addr the HTTP interface.
func StartChDB(dir string, opts ChDBOptions) (*ClickHouse, error) {
	bin, err := ToolPath("chdb-http")
	if err != nil {
		return nil, err
	}
	lib, err := ToolPath("libchdb.so")
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("chdb: data dir %q: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("chdb: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("chdb: free port: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := &ClickHouse{
		Addr:     addr,
		Protocol: ProtocolHTTP,
		HTTPAddr: addr,
		Dir:      dir,
		bin:      bin,
		args: []string{"-lib", lib, "-path", filepath.Join(dir, "data"), "-listen", addr,
			"-compatibility", opts.Compatibility},
		logPath: filepath.Join(dir, "chdb-http.log"),
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	version, err := c.version()
	if err != nil {
		c.Stop()
		return nil, err
	}
	c.Engine = "chdb " + version + ", compatibility "
	if opts.Compatibility == "" {
		c.Engine += "none (the engine's defaults)"
	} else {
		c.Engine += opts.Compatibility
	}
	return c, nil
}

// version asks the running engine for its version.
func (c *ClickHouse) version() (string, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{c.Addr}, Protocol: clickhouse.HTTP})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", fmt.Errorf("chdb on %s: asking its version: %w", c.Addr, err)
	}
	return v, nil
}
