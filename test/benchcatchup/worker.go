package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// repoRoot is the module root, found from the working directory (make runs
// at the root; `go run` from a subfolder works too).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/tideline-dev/tideline\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the tideline repository: run from its root")
		}
		dir = parent
	}
}

// buildIndexer compiles app/indexer into dir: the worker runs as its own
// process, as in production, so its memory and CPU are its own.
func buildIndexer(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "indexer")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./app/indexer")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./app/indexer: %w\n%s", err, out)
	}
	return bin, nil
}

// dropTidelineEnv removes TIDELINE_* variables but TIDELINE_HOME (which
// only locates tools) from this process's environment, which the worker
// inherits: they would override the generated config behind its back. It
// returns the names dropped.
func dropTidelineEnv() []string {
	var dropped []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TIDELINE_") && k != "TIDELINE_HOME" {
			os.Unsetenv(k)
			dropped = append(dropped, k)
		}
	}
	return dropped
}

// startWorker runs `indexer worker --config cfgPath` with its log in dir.
// localstack.Start gives the child its own process group and a parent death
// signal, so a killed benchmark does not leave a worker behind.
func startWorker(bin, cfgPath, dir string) (*localstack.Process, error) {
	return localstack.Start("indexer", filepath.Join(dir, "worker.log"), bin, "worker", "--config", cfgPath)
}

// scrape reads the worker's /metrics.
func scrape(ctx context.Context, addr string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	// Sum each counter or gauge over its series: one chain per run, and
	// the labels that remain (priority, stage, source) are summed on purpose.
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				out[name] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] += m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}

// cpuSeconds is the user plus system CPU time of a process, from
// /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	ticks, err := statCPUTicks(string(raw))
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return float64(ticks) / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// Linux for every architecture this runs on.
const clockTicks = 100

// statCPUTicks adds utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so fields are counted from the
// last ')'.
func statCPUTicks(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // from field 3 (state) on
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q, stime %q are not numbers", f[11], f[12])
	}
	return utime + stime, nil
}

// vmHWM is the peak resident set of a process (VmHWM in /proc/<pid>/status)
// in MiB.
func vmHWM(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: unexpected VmHWM %q", pid, rest)
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: VmHWM %q: %w", pid, rest, err)
		}
		return float64(kb) / 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// errNoPprof means the worker does not serve net/http/pprof.
var errNoPprof = errors.New("the worker serves no /debug/pprof/ on its metrics listener")

// cpuProfile fetches a CPU profile of the given length from the worker's
// metrics listener into path.
func cpuProfile(ctx context.Context, addr string, seconds int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+time.Minute)
	defer cancel()
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return errNoPprof
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET /debug/pprof/profile: %s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
