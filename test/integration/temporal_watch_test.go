package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// The suite's one Temporal dev server answers every test. CI of 84a89ef
// failed 18 parallel tests in a row: from one moment on, heartbeats timed
// out, workers could not reach the server and every call said "Namespace
// default is not found" (server 1.29 answers that for any failed read of
// a namespace it has not cached, a timeout included), while the process
// ran on, so nothing said when it began or what the server logged. The
// watch below puts both on record: when the server stops answering and
// when it answers again, and, when the suite fails, what it logged.

// temporalProbeEvery is how often the watch asks the server, and how long
// it waits for an answer. One describe in 10 s costs the server nothing.
const temporalProbeEvery = 10 * time.Second

// watchTemporal asks the suite's Temporal to describe the default
// namespace every temporalProbeEvery until stop is closed, and prints
// each change between answering and not answering, with the time.
func watchTemporal(stop <-chan struct{}) {
	c, err := client.Dial(client.Options{HostPort: stack.temporal.HostPort, Namespace: "default"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: watching Temporal: %v\n", err)
		return
	}
	defer c.Close()
	var silentSince time.Time
	tick := time.NewTicker(temporalProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), temporalProbeEvery)
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
		cancel()
		now := time.Now().UTC()
		switch {
		case err != nil && silentSince.IsZero():
			silentSince = now
			fmt.Fprintf(os.Stderr, "integration: %s: Temporal did not describe the default namespace within %s: %v\n",
				now.Format(time.RFC3339), temporalProbeEvery, err)
		case err == nil && !silentSince.IsZero():
			fmt.Fprintf(os.Stderr, "integration: %s: Temporal answers again, after %s\n",
				now.Format(time.RFC3339), now.Sub(silentSince).Round(time.Second))
			silentSince = time.Time{}
		}
	}
}

// temporalLogReport is what the suite's Temporal logged (its level is
// warn): how many lines at ERROR, the first few of them (the onset) and
// the log's last lines.
func temporalLogReport() string {
	const tail = 4000
	return fmt.Sprintf("the Temporal dev server %s--- its log's last %d bytes ---\n%s\n--- end of log ---\n",
		errorLines(stack.temporal.Process.LogPath, 15), tail, stack.temporal.Process.Tail(tail))
}

// errorLines counts a log's lines at ERROR and quotes the first n of
// them, each cut to a readable length.
func errorLines(path string, n int) string {
	const lineCut = 400
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("log: %v\n", err)
	}
	defer f.Close()
	var b strings.Builder
	seen := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "level=ERROR") {
			continue
		}
		seen++
		if seen <= n {
			b.WriteString(cut(line, lineCut) + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(&b, "(reading the log stopped: %v)\n", err)
	}
	return fmt.Sprintf("logged %d lines at ERROR; the first %d:\n%s", seen, min(seen, n), b.String())
}

// The report quotes the first errors, counts them all and leaves out the
// lines below ERROR.
func TestErrorLinesQuotesTheFirstAndCountsAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal.log")
	var log strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&log, "time=t level=WARN msg=\"warn %d\"\n", i)
		fmt.Fprintf(&log, "time=t level=ERROR msg=\"error %d\" %s\n", i, strings.Repeat("x", 500))
	}
	require.NoError(t, os.WriteFile(path, []byte(log.String()), 0o600))
	got := errorLines(path, 3)
	require.Contains(t, got, "logged 20 lines at ERROR; the first 3:")
	require.Contains(t, got, `msg="error 3"`)
	require.NotContains(t, got, `msg="error 4"`)
	require.NotContains(t, got, "warn")
	require.Contains(t, got, "x…\n", "long lines are cut")
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
