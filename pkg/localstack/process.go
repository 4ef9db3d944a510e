// Package localstack starts the real services tideline runs against on one
// machine (Temporal dev server, ClickHouse, anvil, geth) as plain child
// processes on 127.0.0.1. Both the `dev` subcommand and the integration
// tests use it, so what the tests prove is what a newcomer runs.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// modulePath identifies the repository root when walking up from the
// working directory.
const modulePath = "module github.com/tideline-dev/tideline\n"

// ErrToolMissing is returned when a tool the stack needs is not installed.
var ErrToolMissing = errors.New("tool not installed (run `make tools`)")

// Home is the folder that holds tools and local data: $TIDELINE_HOME, or
// .tideline/ at the repository root.
func Home() (string, error) {
	if h := os.Getenv("TIDELINE_HOME"); h != "" {
		return h, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), modulePath) {
			return filepath.Join(dir, ".tideline"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("localstack: not inside the tideline repository and TIDELINE_HOME is not set")
		}
		dir = parent
	}
}

// ToolPath returns the path of an installed tool: <home>/bin/<name>, else
// the same name on PATH.
func ToolPath(name string) (string, error) {
	if home, err := Home(); err == nil {
		p := filepath.Join(home, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s: %w", name, ErrToolMissing)
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now.
//
// The port is chosen outside the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), where the kernel picks the local end of
// every outgoing connection: a server restarted on its port (ClickHouse or
// Temporal restarted mid-test) would otherwise find, now and then, that an
// unrelated connection took it while the server was down, and fail to
// bind.
func FreePort() (int, error) {
	lo, hi := listenPorts()
	for range 200 {
		p := lo + rand.IntN(hi-lo+1)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken; try another
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free loopback port in [%d, %d]", lo, hi)
}

// Listening ports are taken from [listenPortsLow, the ephemeral range's
// start) or, when that is too small, above the ephemeral range.
const (
	listenPortsLow  = 10000
	listenPortsHigh = 65535
	minListenPorts  = 1000
)

// listenPorts returns the range FreePort picks from.
func listenPorts() (lo, hi int) {
	ephLo, ephHi := 32768, 60999 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			l, err1 := strconv.Atoi(f[0])
			h, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && l <= h {
				ephLo, ephHi = l, h
			}
		}
	}
	switch {
	case ephLo-listenPortsLow >= minListenPorts:
		return listenPortsLow, ephLo - 1
	case listenPortsHigh-ephHi >= minListenPorts:
		return ephHi + 1, listenPortsHigh
	default: // the ephemeral range is nearly everything: share it
		return listenPortsLow, listenPortsHigh
	}
}

// WaitTCP waits until addr accepts connections or ctx ends.
func WaitTCP(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", addr, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Process is a started child process whose output goes to a log file.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	// Set before done closes.
	waitErr error
	endedAt time.Time
	// asked is set by Stop and Kill: an end from then on was asked for.
	asked atomic.Bool
}

// EndedError says that a process ended without Stop or Kill: a crash, an
// exit of its own, or a signal from elsewhere (the kernel's OOM killer).
type EndedError struct {
	Name    string
	Pid     int
	At      time.Time
	Err     error // how it ended, from Wait: "signal: killed", "exit status 70"; nil for status 0
	LogPath string
}

func (e *EndedError) Error() string {
	how := "exit status 0"
	if e.Err != nil {
		how = e.Err.Error()
	}
	return fmt.Sprintf("%s (pid %d) ended on its own at %s: %s (log %s)",
		e.Name, e.Pid, e.At.UTC().Format(time.RFC3339), how, e.LogPath)
}

func (e *EndedError) Unwrap() error { return e.Err }

// Start runs bin with args; stdout and stderr go to logPath.
func Start(name, logPath, bin string, args ...string) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group, so that Ctrl-C on the parent reaches us first and
	// we stop children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		p.endedAt = time.Now()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has ended, asked or not.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended on its own.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// EndedOnItsOwn returns an *EndedError once the process has ended without
// Stop or Kill, and nil while it runs or after an end that was asked for.
// A test stack checks it to tell "the server crashed" from "the code under
// test failed" when a connection is refused.
func (p *Process) EndedOnItsOwn() error {
	if !p.Exited() || p.asked.Load() {
		return nil
	}
	return &EndedError{Name: p.Name, Pid: p.Pid(), At: p.endedAt, Err: p.waitErr, LogPath: p.LogPath}
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL and waits for the process to end.
func (p *Process) Kill() {
	p.asked.Store(true)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM, then SIGKILL if the process has not ended in 10 s.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	p.asked.Store(true)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// Tail returns the last n bytes of the log, for error messages.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
