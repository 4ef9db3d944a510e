package activity

import "time"

// SetHoldRecheck sets how often a held chain asks the node again, for a
// test; the returned func restores it. Tests of this package do not run in
// parallel.
func SetHoldRecheck(d time.Duration) (restore func()) {
	old := holdRecheck
	holdRecheck = d
	return func() { holdRecheck = old }
}
