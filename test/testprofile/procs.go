package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat's CPU
// times; it is 100 on every Linux this runs on.
const clockTick = 10 * time.Millisecond

// stat is what the profile reads of one /proc/<pid>/stat.
type stat struct {
	pid, ppid int32
	comm      string
	cpu       time.Duration // utime + stime
	reaped    time.Duration // cutime + cstime: children that ended and were waited for
	start     uint64        // starttime: tells a reused pid from the first
}

func readStat(pid int32) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// comm is in parentheses and may hold spaces or parentheses itself.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return stat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	cut, _ := strconv.ParseUint(f[13], 10, 64)
	cst, _ := strconv.ParseUint(f[14], 10, 64)
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return stat{pid: pid, ppid: int32(ppid), comm: string(b[open+1 : end]),
		cpu: time.Duration(ut+st) * clockTick, reaped: time.Duration(cut+cst) * clockTick, start: start}, true
}

func listPids() []int32 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	pids := make([]int32, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, int32(n))
		}
	}
	return pids
}

// kindOf names the role of a process from its command name and argv[0].
func kindOf(comm, argv0 string) string {
	base := filepath.Base(argv0)
	switch {
	case strings.HasSuffix(base, ".test") || strings.HasSuffix(comm, ".test"):
		return "test binary"
	case strings.HasPrefix(comm, "clickhouse") || strings.Contains(base, "clickhouse"):
		return "clickhouse"
	case strings.HasPrefix(comm, "chdb") || strings.HasPrefix(base, "chdb"):
		return "chdb"
	case comm == "temporal" || base == "temporal":
		return "temporal"
	case comm == "anvil" || base == "anvil" || comm == "geth" || base == "geth":
		return "chain node"
	case comm == "indexer" || base == "indexer":
		return "indexer"
	case comm == "java":
		return "zookeeper"
	case comm == "go" || comm == "compile" || comm == "link" || comm == "asm" || comm == "vet" ||
		comm == "cgo" || comm == "gcc" || comm == "cc1" || comm == "as" || comm == "ld" || comm == "collect2":
		return "go toolchain"
	case comm == "node" || comm == "npm" || strings.HasPrefix(comm, "npm "):
		return "node.js"
	case strings.HasPrefix(comm, "prom"):
		return "prometheus"
	}
	return "other"
}

// owner is where a process's CPU is counted: the test binary it descends
// from (its package folder and lane), or none.
type owner struct {
	dir  string // the package's folder, relative to the command's folder; "" outside tests
	lane string // TIDELINE_TEST_CLICKHOUSE of the test binary ("" = the installed server)
}

type proc struct {
	stat
	kind  string
	owner owner
	test  bool // the process is itself a test binary
}

// profile is the state of one run: the processes seen, the tests running
// (from the event stream), and the CPU counted so far.
type profile struct {
	root string // the command's folder: package folders are relative to it

	mu      sync.Mutex
	procs   map[int64]*proc                  // by pid<<32 | start, so a reused pid is a new process
	running map[string]map[string]bool       // import path → top-level tests running
	lane    map[string]string                // import path → the lane its running binary is in
	starts  map[string]int                   // import path → how many times it started
	cpu     map[key]map[string]time.Duration // (lane, package, test) → kind → CPU
	walls   map[key]time.Duration            // the same keys' elapsed time from the events
	order   []key                            // keys in the order first seen
	sampled time.Duration
}

// key is one row of the report: a test of a package in a lane; test ""
// is the package's own time (TestMain, or nothing running), pkg "" what
// ran outside any test binary.
type key struct{ lane, pkg, test string }

func newProfile() *profile {
	root, _ := os.Getwd()
	return &profile{root: root, procs: map[int64]*proc{}, running: map[string]map[string]bool{},
		lane: map[string]string{}, starts: map[string]int{},
		cpu: map[key]map[string]time.Duration{}, walls: map[key]time.Duration{}}
}

func procKey(s stat) int64 { return int64(s.pid)<<32 | int64(s.start&0xffffffff) }

// sample reads every process descending from root and adds the CPU each
// used since the last sample to the test its package was running then.
// A process is charged its own CPU and, when children end, the part of
// theirs that no sample saw (its cutime grows by a child's whole CPU;
// what earlier samples counted of that child is taken off), so compilers
// and other short processes are counted too.
func (p *profile) sample(root int32) {
	all := map[int32]stat{}
	for _, pid := range listPids() {
		if s, ok := readStat(pid); ok {
			all[pid] = s
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// What samples counted of the processes that ended since the last
	// one, given to the process that waited for them: a process that ended
	// with children that ended in the same second (the go command right
	// after its test binary) passes their counted CPU up with its own,
	// since its parent's cutime gets both.
	ended := map[int32]*proc{}
	for k, pr := range p.procs {
		if s, ok := all[pr.pid]; ok && procKey(s) == k {
			continue
		}
		ended[pr.pid] = pr
		delete(p.procs, k)
	}
	seenOf := map[int32]time.Duration{} // the waiting parent's pid → what samples counted of its children that ended
	for _, pr := range ended {
		top := pr
		for i := 0; i < 64; i++ {
			up, ok := ended[top.ppid]
			if !ok {
				break
			}
			top = up
		}
		seenOf[top.ppid] += pr.cpu + pr.reaped
	}
	for pid, s := range all {
		k := procKey(s)
		pr, seen := p.procs[k]
		if !seen {
			if !descends(all, pid, root) {
				continue
			}
			pr = p.newProc(all, s)
			p.procs[k] = pr
			pr.cpu, pr.reaped = 0, 0 // all of its CPU so far is new to the profile
		}
		d := s.cpu - pr.cpu
		if r := s.reaped - pr.reaped - seenOf[pid]; r > 0 {
			d += r
		}
		pr.stat = s
		if d <= 0 {
			continue
		}
		p.sampled += d
		p.charge(pr, d)
	}
}

func descends(all map[int32]stat, pid, root int32) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		pid = all[pid].ppid
	}
	return false
}

func argv0(pid int32) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/cmdline")
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// newProc classifies a process the first time it is seen and finds the
// test binary it descends from.
func (p *profile) newProc(all map[int32]stat, s stat) *proc {
	pr := &proc{stat: s, kind: kindOf(s.comm, argv0(s.pid))}
	for pid, i := s.pid, 0; i < 64 && pid > 1; i, pid = i+1, all[pid].ppid {
		anc, ok := all[pid]
		if !ok {
			break
		}
		if known, ok := p.procs[procKey(anc)]; ok && known.test {
			pr.owner = known.owner
			break
		}
		if kindOf(anc.comm, argv0(pid)) == "test binary" {
			pr.owner = p.testOwner(pid)
			pr.test = pid == s.pid
			p.lane[p.importPath(pr.owner.dir)] = pr.owner.lane
			break
		}
	}
	return pr
}

func (p *profile) testOwner(pid int32) owner {
	cwd, _ := os.Readlink("/proc/" + strconv.Itoa(int(pid)) + "/cwd")
	rel, err := filepath.Rel(p.root, cwd)
	if err != nil {
		rel = cwd
	}
	lane := ""
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/environ")
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("TIDELINE_TEST_CLICKHOUSE=")); ok {
			lane = string(v)
		}
	}
	return owner{dir: rel, lane: lane}
}

// charge adds d of a process's CPU to the tests its package is running,
// shared equally among them when several run in parallel.
func (p *profile) charge(pr *proc, d time.Duration) {
	if pr.owner.dir == "" {
		p.add(key{}, pr.kind, d)
		return
	}
	pkg := p.importPath(pr.owner.dir)
	tests := p.running[pkg]
	if len(tests) == 0 {
		p.add(key{pr.owner.lane, pkg, ""}, pr.kind, d)
		return
	}
	share := d / time.Duration(len(tests))
	for t := range tests {
		p.add(key{pr.owner.lane, pkg, t}, pr.kind, share)
	}
}

// importPath finds the running package whose import path ends with dir;
// before its first event the folder itself names it.
func (p *profile) importPath(dir string) string {
	for pkg := range p.running {
		if strings.HasSuffix(pkg, "/"+dir) || pkg == dir {
			return pkg
		}
	}
	return dir
}

func (p *profile) add(k key, kind string, d time.Duration) {
	m := p.cpu[k]
	if m == nil {
		m = map[string]time.Duration{}
		p.cpu[k] = m
		p.order = append(p.order, k)
	}
	m[kind] += d
}
