package localstack

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// Temporal is a running Temporal CLI dev server (server + Web UI).
type Temporal struct {
	HostPort string // gRPC frontend, 127.0.0.1:port
	UIURL    string // Web UI, "" when disabled
	Process  *Process
	args     []string
	bin      string
	logPath  string
}

// TemporalOptions chooses ports; zero picks a free one.
type TemporalOptions struct {
	Port   int
	UIPort int
	// NoUI turns the Web UI off (tests do not need it).
	NoUI bool
	// SearchAttributes are registered at start, as NAME=Type
	// (temporal.SearchAttributeSpecs gives tideline's).
	SearchAttributes []string
}

// StartTemporal starts the dev server with its database in dir. The flags
// are the ones measured to matter here: sqlite in WAL mode with relaxed
// syncs (about 5× faster), the new matcher, without which server 1.29
// ignores workflow priority, and one task queue partition: priority orders
// tasks within a partition only, so with the default 4 a partition that has
// run out of urgent tasks serves old ones while another still holds urgent
// ones (measured: 10–15 of 30 Ultra Low served before the last Ultra High).
// One host gains nothing from more partitions. The search attributes
// given are registered before the server answers, so the first workflow
// can carry them.
func StartTemporal(dir string, opts TemporalOptions) (*Temporal, error) {
	bin, err := ToolPath("temporal")
	if err != nil {
		return nil, err
	}
	if opts.Port == 0 {
		if opts.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1",
		"--port", strconv.Itoa(opts.Port),
		"--db-filename", filepath.Join(dir, "temporal.db"),
		"--sqlite-pragma", "journal_mode=wal",
		"--sqlite-pragma", "synchronous=normal",
		"--dynamic-config-value", "matching.useNewMatcher=true",
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
		"--log-level", "warn",
	}
	for _, sa := range opts.SearchAttributes {
		args = append(args, "--search-attribute", sa)
	}
	t := &Temporal{HostPort: fmt.Sprintf("127.0.0.1:%d", opts.Port), bin: bin, logPath: filepath.Join(dir, "temporal.log")}
	if opts.NoUI {
		args = append(args, "--headless")
	} else {
		if opts.UIPort == 0 {
			if opts.UIPort, err = FreePort(); err != nil {
				return nil, err
			}
		}
		args = append(args, "--ui-ip", "127.0.0.1", "--ui-port", strconv.Itoa(opts.UIPort))
		t.UIURL = fmt.Sprintf("http://127.0.0.1:%d", opts.UIPort)
	}
	t.args = args
	if err := t.start(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Temporal) start() error {
	p, err := Start("temporal", t.logPath, t.bin, t.args...)
	if err != nil {
		return err
	}
	t.Process = p
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := WaitTCP(ctx, t.HostPort); err != nil {
		p.Stop()
		return fmt.Errorf("temporal dev server did not come up: %w\n%s", err, p.Tail(2000))
	}
	return nil
}

// Restart stops the server and starts it again on the same ports and
// database, as a crash and recovery of the cluster would.
func (t *Temporal) Restart() error {
	t.Process.Stop()
	return t.start()
}

// Stop stops the server.
func (t *Temporal) Stop() { t.Process.Stop() }
