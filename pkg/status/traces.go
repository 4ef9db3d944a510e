package status

import "fmt"

// Traces is a tracing chain's traces backfill: the pass under way
// (Running) walks [Floor, Top] newest first and looks next at Next;
// Done is the top of the last complete pass, plus one (every height
// below it was traced then; 0: no pass completed).
type Traces struct {
	Running bool   `json:"running"`
	Top     uint64 `json:"top"`
	Floor   uint64 `json:"floor"`
	Next    uint64 `json:"next,omitempty"`
	Done    uint64 `json:"done,omitempty"`
}

// Fraction is how much of the pass under way is done (1 when none runs).
func (t *Traces) Fraction() float64 {
	if !t.Running || t.Top+1 <= t.Floor {
		return 1
	}
	return fraction(t.Top+1-min(t.Next, t.Top+1), t.Top+1-t.Floor)
}

// describe says where the backfill is, for the table.
func (t *Traces) describe() string {
	switch {
	case t.Running:
		return fmt.Sprintf("pass %d–%d, at %d", t.Floor, t.Top, t.Next-1)
	case t.Done > 0:
		return fmt.Sprintf("every height below %d traced", t.Done)
	}
	return "no pass yet"
}
