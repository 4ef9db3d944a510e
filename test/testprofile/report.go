package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

var kinds = []string{"test binary", "clickhouse", "chdb", "temporal", "chain node", "indexer",
	"go toolchain", "node.js", "zookeeper", "prometheus", "other"}

type row struct {
	key
	wall time.Duration
	cpu  map[string]time.Duration
}

func (r row) total() time.Duration {
	var t time.Duration
	for _, d := range r.cpu {
		t += d
	}
	return t
}

func laneName(l string) string {
	if l == "" {
		return "18.16"
	}
	return l
}

func shortPkg(pkg string) string {
	if i := strings.Index(pkg, "/tideline/"); i >= 0 {
		return pkg[i+len("/tideline/"):]
	}
	if pkg == "" {
		return "(outside tests)"
	}
	return pkg
}

func secs(d time.Duration) string { return fmt.Sprintf("%.0f", d.Seconds()) }

// report writes the run's figures: totals, CPU by kind of process, by
// package and lane, and the tests that used the most CPU.
func (p *profile) report(w io.Writer, wall, total time.Duration, top int, args []string) {
	p.mu.Lock()
	defer p.mu.Unlock()

	byKind := map[string]time.Duration{}
	pkgs := map[key]*row{}
	var tests []row
	for _, k := range p.order {
		pk := key{k.lane, k.pkg, ""}
		pr := pkgs[pk]
		if pr == nil {
			pr = &row{key: pk, cpu: map[string]time.Duration{}}
			pkgs[pk] = pr
		}
		for kind, d := range p.cpu[k] {
			byKind[kind] += d
			pr.cpu[kind] += d
		}
		if k.test == "" {
			pr.wall += p.walls[k]
		} else {
			tests = append(tests, row{key: k, wall: p.walls[k], cpu: p.cpu[k]})
		}
	}

	fmt.Fprintf(w, "\n== testprofile: %s\n", strings.Join(args, " "))
	fmt.Fprintf(w, "wall %s s; CPU of the command and all it started (user+sys) %s s = %.1f CPU-minutes; sampled %s s (%.0f %%; the rest: processes that ended between samples)\n",
		secs(wall), secs(total), total.Minutes(), secs(p.sampled), 100*p.sampled.Seconds()/max(total.Seconds(), 1))

	fmt.Fprintf(w, "\nCPU by kind of process (s):")
	for _, k := range kinds {
		if byKind[k] > 0 {
			fmt.Fprintf(w, " %s %s;", k, secs(byKind[k]))
		}
	}
	fmt.Fprintln(w)

	rows := make([]row, 0, len(pkgs))
	for _, r := range pkgs {
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].total() > rows[j].total() })
	fmt.Fprintf(w, "\nby package and lane (wall: the package's elapsed time in go test; CPU: its test binary and what it started)\n")
	fmt.Fprintf(w, "%-9s %-34s %7s %7s  %s\n", "lane", "package", "wall s", "CPU s", "CPU by kind (s)")
	for _, r := range rows {
		fmt.Fprintf(w, "%-9s %-34s %7s %7s  %s\n", laneName(r.lane), shortPkg(r.pkg), secs(r.wall), secs(r.total()), kindList(r.cpu))
	}

	sort.Slice(tests, func(i, j int) bool { return tests[i].total() > tests[j].total() })
	if len(tests) > top {
		tests = tests[:top]
	}
	fmt.Fprintf(w, "\nthe %d tests that used the most CPU (parallel tests share what their package used while they ran)\n", len(tests))
	fmt.Fprintf(w, "%-9s %-22s %-48s %7s %7s  %s\n", "lane", "package", "test", "wall s", "CPU s", "CPU by kind (s)")
	for _, r := range tests {
		fmt.Fprintf(w, "%-9s %-22s %-48s %7s %7s  %s\n", laneName(r.lane), shortPkg(r.pkg), r.test, secs(r.wall), secs(r.total()), kindList(r.cpu))
	}
}

func kindList(m map[string]time.Duration) string {
	var parts []string
	for _, k := range kinds {
		if m[k] >= time.Second/2 {
			parts = append(parts, fmt.Sprintf("%s %s", k, secs(m[k])))
		}
	}
	return strings.Join(parts, ", ")
}
