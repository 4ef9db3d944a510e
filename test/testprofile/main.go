// Command testprofile runs a test command (by default `make test` with
// `go test -json`) and tells where its time and CPU go: per package and
// lane, per test, and per kind of process (the test binary, ClickHouse,
// Temporal, the chain's node, the Go toolchain). It samples /proc once a
// second, so it works on whatever processes the suite starts, without
// the suite knowing it is watched.
//
//	go run ./test/testprofile -out /tmp/prof -- make test GOTEST_FLAGS=-json
//
// The report (report.txt in -out) is what docs/performance.md quotes; the
// raw `go test -json` stream is kept beside it (test.json).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	out := flag.String("out", "", "folder for test.json and report.txt (default: a new temporary folder)")
	every := flag.Duration("every", time.Second, "how often /proc is sampled")
	top := flag.Int("top", 25, "how many tests the report lists by CPU")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: testprofile [flags] -- command [args...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		args = []string{"make", "test", "GOTEST_FLAGS=-json"}
	}
	if *out == "" {
		dir, err := os.MkdirTemp("", "testprofile-")
		if err != nil {
			fail(err)
		}
		*out = dir
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	code, err := run(*out, *every, *top, args)
	if err != nil {
		fail(err)
	}
	os.Exit(code)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testprofile:", err)
	os.Exit(2)
}

// run starts the command, feeds its standard output to the event reader,
// samples /proc until it ends, and writes the report. It returns the
// command's exit code.
func run(out string, every time.Duration, top int, args []string) (int, error) {
	return runWith(out, every, top, args, nil)
}

// runWith is run that also hands the profile and the totals to seen
// (the tests read them).
func runWith(out string, every time.Duration, top int, args []string, seen func(p *profile, wall, total time.Duration)) (int, error) {
	raw, err := os.Create(filepath.Join(out, "test.json"))
	if err != nil {
		return 0, err
	}
	defer raw.Close()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	cmd.Stdin = nil
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	prof := newProfile()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %v: %w", args, err)
	}
	// Ctrl-C reaches the command's process group through the terminal;
	// this process waits for it to end and still writes what it saw.
	signal.Ignore(syscall.SIGINT)

	events := make(chan struct{})
	go func() {
		readEvents(stdout, raw, os.Stdout, prof)
		close(events)
	}()
	done := make(chan error, 1)
	go func() {
		<-events // the pipe must be drained before Wait closes it
		done <- cmd.Wait()
	}()

	tick := time.NewTicker(every)
	defer tick.Stop()
	prof.sample(int32(cmd.Process.Pid))
	var waitErr error
loop:
	for {
		select {
		case <-tick.C:
			prof.sample(int32(cmd.Process.Pid))
		case waitErr = <-done:
			break loop
		}
	}
	wall := time.Since(start)
	var total time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		total = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}

	rep, err := os.Create(filepath.Join(out, "report.txt"))
	if err != nil {
		return 0, err
	}
	defer rep.Close()
	prof.report(rep, wall, total, top, args)
	prof.report(os.Stdout, wall, total, top, args)
	fmt.Printf("testprofile: report in %s\n", filepath.Join(out, "report.txt"))
	if seen != nil {
		seen(prof, wall, total)
	}

	code := 0
	if waitErr != nil {
		code = 1
		if ee, ok := waitErr.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return code, nil
}
