package benchkit

import (
	"fmt"
	"time"
)

// Printer writes a run's progress lines to stdout, each starting with the
// UTC time of day. With Elapsed, a second column gives the seconds since
// Start ("setup" before it), so phases of a run can be read as durations.
type Printer struct {
	Elapsed bool
	start   time.Time
}

// Start sets the origin of the elapsed column. It is called before any
// goroutine prints.
func (p *Printer) Start(t time.Time) { p.start = t }

// Say prints one line.
func (p *Printer) Say(format string, args ...any) {
	now := time.Now()
	msg := fmt.Sprintf(format, args...)
	if !p.Elapsed {
		fmt.Printf("%s  %s\n", now.UTC().Format("15:04:05"), msg)
		return
	}
	since := "setup"
	if !p.start.IsZero() {
		since = fmt.Sprintf("%7.1fs", now.Sub(p.start).Seconds())
	}
	fmt.Printf("%s %s  %s\n", now.UTC().Format("15:04:05"), since, msg)
}
