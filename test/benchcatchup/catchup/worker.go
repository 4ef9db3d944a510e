package catchup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// waitWorkerReady waits for /metrics, which the worker serves once it has
// migrated the database, registered its workers and set up its schedules.
func (b *bench) waitWorkerReady(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		if b.worker.Exited() {
			return fmt.Errorf("worker exited during start-up:\n%s", b.worker.Tail(4000))
		}
		if _, err := scrape(ctx, b.metrics); err == nil {
			b.say("worker ready: serving /metrics on %s", b.metrics)
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("worker not serving /metrics after a minute (%v):\n%s", err, b.worker.Tail(4000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
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
