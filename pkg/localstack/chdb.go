package localstack

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	version, err := ChDBVersion()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	engine := "chdb " + version + ", compatibility "
	if opts.Compatibility == "" {
		engine += "none (the engine's defaults)"
	} else {
		engine += opts.Compatibility
	}
	c := &ClickHouse{
		Addr:     addr,
		Protocol: ProtocolHTTP,
		Engine:   engine,
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
	return c, nil
}

// ChDBVersion is the version of the installed libchdb.so, as the engine
// answers `SELECT version()`.
func ChDBVersion() (string, error) {
	bin, err := ToolPath("chdb-http")
	if err != nil {
		return "", err
	}
	lib, err := ToolPath("libchdb.so")
	if err != nil {
		return "", err
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(bin, "-lib", lib, "-version")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("chdb: asking %s for its version: %w: %s", lib, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
