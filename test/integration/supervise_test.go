package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// The suite's ClickHouse is Debian's 18.16, a stand-in for the engine users
// run (the modern lanes test that one). It has crashed mid-suite with
// SIGSEGV and nothing in its log (CI of 8369984 and 308d6fa, both times in
// TestSchedulerCatchesUpBacklogOnAnvil), after which every later test
// failed on "connection refused". A deployment restarts a crashed server
// (the compose file's restart policy), and tideline is built to ride out a
// restart (TestServerRestartsMidRunConverge); so the suite does what the
// deployment does: a ClickHouse that ended on its own is started again on
// its ports and data, and the crash is printed when it happens and again
// at the end, never hidden. The tests still assert what they assert
// (every height once, equal to the node) across the restart.
var chSupervisor struct {
	mu      sync.Mutex // held across every swap of stack.ch.Process
	crashes []chCrash
	gaveUp  string // why the last crash could not be restarted from
}

// chCrash is one crash the supervisor restarted from.
type chCrash struct {
	pid    int
	report string // endedReport: what ended, how, and the log's tail
}

// superviseClickHouse restarts the suite's ClickHouse whenever it ends
// without being asked, until stop is closed.
func superviseClickHouse(stop <-chan struct{}) {
	for {
		chSupervisor.mu.Lock()
		p := stack.ch.Process
		chSupervisor.mu.Unlock()
		select {
		case <-stop:
			return
		case <-p.Done():
		}
		chSupervisor.mu.Lock()
		if stack.ch.Process != p || p.EndedOnItsOwn() == nil {
			chSupervisor.mu.Unlock() // a test's restart or the suite's stop
			continue
		}
		crash := endedReport(p, p.EndedOnItsOwn())
		chSupervisor.crashes = append(chSupervisor.crashes, chCrash{pid: p.Pid(), report: crash})
		fmt.Fprintf(os.Stderr, "integration: %s: %s", time.Now().UTC().Format(time.RFC3339), crash)
		err := stack.ch.Restart()
		if err != nil {
			chSupervisor.gaveUp = fmt.Sprintf("restarting ClickHouse after its crash failed: %v\n%s", err, crash)
			fmt.Fprintf(os.Stderr, "integration: %s", chSupervisor.gaveUp)
		} else {
			fmt.Fprintf(os.Stderr, "integration: ClickHouse restarted on %s after its crash\n", stack.ch.Addr)
		}
		chSupervisor.mu.Unlock()
		if err != nil {
			return // later tests fail and stackEnded says why
		}
	}
}

// restartClickHouse is a test's restart of the suite's ClickHouse, which
// the supervisor must not take for a crash.
func restartClickHouse() error {
	chSupervisor.mu.Lock()
	defer chSupervisor.mu.Unlock()
	return stack.ch.Restart()
}

// clickHouseCrashes lists the crashes the supervisor restarted from.
func clickHouseCrashes() string {
	chSupervisor.mu.Lock()
	defer chSupervisor.mu.Unlock()
	if len(chSupervisor.crashes) == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range chSupervisor.crashes {
		b.WriteString(c.report)
	}
	return fmt.Sprintf("ClickHouse crashed %d time(s) during the suite and was restarted:\n%s",
		len(chSupervisor.crashes), b.String())
}

// chProcess is the suite's ClickHouse process now, and why it is not
// running if the supervisor could not restart it.
func chProcess() (*localstack.Process, string) {
	chSupervisor.mu.Lock()
	defer chSupervisor.mu.Unlock()
	return stack.ch.Process, chSupervisor.gaveUp
}

// A ClickHouse that crashes (here: SIGSEGV from outside, as 18.16's own
// crashes end) is started again on its address with its data, and the
// crash is on record; a test's own restart is not taken for one.
func TestACrashedClickHouseIsRestarted(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	migrations := func() (uint64, error) {
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{stack.ch.Addr}, Auth: clickhouse.Auth{Database: database}})
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		var n uint64
		err = conn.QueryRow(ctx, "SELECT count() FROM schema_migrations").Scan(&n)
		return n, err
	}
	before, err := migrations()
	require.NoError(t, err)
	require.Positive(t, before)

	crashesBefore := len(crashesOf(0))
	require.NoError(t, restartClickHouse())
	require.Len(t, crashesOf(0), crashesBefore, "a test's restart is no crash")

	victim, _ := chProcess()
	require.NoError(t, syscall.Kill(victim.Pid(), syscall.SIGSEGV))
	waitFor(t, time.Minute, "ClickHouse restarted after its crash", func() (bool, string) {
		now, gaveUp := chProcess()
		if gaveUp != "" {
			return false, gaveUp
		}
		if now == victim {
			return false, "not restarted yet"
		}
		_, _, err := store.Watermark(ctx, "it-none", 0)
		return err == nil, fmt.Sprint(err)
	})
	crashes := crashesOf(victim.Pid())
	require.Len(t, crashes, 1)
	require.Contains(t, crashes[0], "signal: segmentation fault")
	after, err := migrations()
	require.NoError(t, err)
	require.Equal(t, before, after, "the same data")
	forgetCrash(victim.Pid()) // deliberate: not one to report at the end
}

// crashesOf returns the recorded crashes of the process pid (0: all).
func crashesOf(pid int) []string {
	chSupervisor.mu.Lock()
	defer chSupervisor.mu.Unlock()
	var out []string
	for _, c := range chSupervisor.crashes {
		if pid == 0 || c.pid == pid {
			out = append(out, c.report)
		}
	}
	return out
}

func forgetCrash(pid int) {
	chSupervisor.mu.Lock()
	defer chSupervisor.mu.Unlock()
	kept := chSupervisor.crashes[:0]
	for _, c := range chSupervisor.crashes {
		if c.pid != pid {
			kept = append(kept, c)
		}
	}
	chSupervisor.crashes = kept
}

// stackEnded says which of the suite's servers ended without being asked
// (a crash, the kernel's OOM killer), how, and its log's tail; "" while
// both run. A test that cannot connect adds it to its failure, so the
// cause is read where the symptom is.
func stackEnded() string {
	var b strings.Builder
	ch, gaveUp := chProcess()
	b.WriteString(gaveUp)
	for _, p := range []*localstack.Process{ch, stack.temporal.Process} {
		if err := p.EndedOnItsOwn(); err != nil {
			b.WriteString(endedReport(p, err))
		}
	}
	return b.String()
}

// endedReport is how a server's unasked end reads in the output: how it
// ended, then its log's tail.
func endedReport(p *localstack.Process, ended error) string {
	return fmt.Sprintf("%v\n--- log tail ---\n%s\n--- end of log ---\n", ended, p.Tail(stackLogTail))
}

// stackLogTail is how much of a dead server's log stackEnded shows: enough
// for ClickHouse's stack trace of a fatal signal.
const stackLogTail = 6000
