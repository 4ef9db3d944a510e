package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// readEvents copies the command's standard output to raw and reads its
// `go test -json` events: which top-level tests run now (for the
// sampler), how long each took. What a person needs on the terminal goes
// to term: lines that are not events, each package's own lines (its
// ok/FAIL), and the whole output of a test that failed.
func readEvents(r io.Reader, raw io.Writer, term io.Writer, p *profile) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	held := map[[2]string][]string{} // a running test's output, printed if it fails
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(raw, "%s\n", line)
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(term, "%s\n", line)
			continue
		}
		top := e.Test != "" && !strings.Contains(e.Test, "/")
		id := [2]string{e.Package, topOf(e.Test)}
		switch e.Action {
		case "start":
			p.started(e.Package)
		case "run", "cont":
			if top {
				p.setRunning(e.Package, e.Test, true)
			}
		case "pause":
			if top {
				p.setRunning(e.Package, e.Test, false)
			}
		case "output":
			if e.Test == "" {
				fmt.Fprint(term, e.Output)
			} else if len(held[id]) < 4000 {
				held[id] = append(held[id], e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				p.finished(e.Package, "", e.Elapsed)
				continue
			}
			if !top {
				continue
			}
			p.setRunning(e.Package, e.Test, false)
			p.finished(e.Package, e.Test, e.Elapsed)
			if e.Action == "fail" {
				fmt.Fprint(term, strings.Join(held[id], ""))
			}
			delete(held, id)
		}
	}
}

func topOf(test string) string {
	if i := strings.IndexByte(test, '/'); i >= 0 {
		return test[:i]
	}
	return test
}

func (p *profile) started(pkg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts[pkg]++
	p.lane[pkg] = fmt.Sprintf("run %d", p.starts[pkg]) // until its binary is seen
	if p.running[pkg] == nil {
		p.running[pkg] = map[string]bool{}
	}
}

func (p *profile) setRunning(pkg, test string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[pkg] == nil {
		p.running[pkg] = map[string]bool{}
	}
	if on {
		p.running[pkg][test] = true
	} else {
		delete(p.running[pkg], test)
	}
}

func (p *profile) finished(pkg, test string, elapsed float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key{p.lane[pkg], pkg, test}
	p.walls[k] += time.Duration(elapsed * float64(time.Second))
	if _, ok := p.cpu[k]; !ok {
		p.cpu[k] = map[string]time.Duration{}
		p.order = append(p.order, k)
	}
}
