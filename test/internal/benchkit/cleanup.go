package benchkit

// Cleanup is what a run started, to stop when it ends. A benchmark adds a
// stop function as soon as something is up, so an error or an interrupt
// half-way stops exactly what was started.
type Cleanup struct {
	fns []func()
}

// Add registers f to run at Run.
func (c *Cleanup) Add(f func()) { c.fns = append(c.fns, f) }

// Run calls every registered function, newest first (the worker before the
// chain and the database it uses), and forgets them.
func (c *Cleanup) Run() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}
