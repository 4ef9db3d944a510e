package status

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/charmbracelet/bubbles/progress"
	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/muesli/termenv"
)

// JSON writes the chains as one indented JSON document, for scripts.
func JSON(w io.Writer, chains []Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(chains)
}

// Render writes the chains as a table: one row per chain, and under a
// chain whose catch-up runs, its progress bar and one row per bucket; under
// a chain that traces, its traces backfill.
// profile picks the colours (termenv.Ascii for none).
func Render(w io.Writer, chains []Report, profile termenv.Profile) {
	bar := progress.New(progress.WithWidth(24), progress.WithColorProfile(profile), progress.WithSolidFill("#5A56E0"))
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"chain", "head", "watermark", "lag", "catch-up", "started / total", "in flight", "rate", "eta"})
	for _, c := range chains {
		var head any = c.Head
		lag := fmt.Sprintf("%d blocks", c.Lag)
		if c.LagSeconds > 0 {
			lag += " (" + duration(c.LagSeconds) + ")"
		}
		if !c.HeadKnown {
			head, lag = "unknown", "unknown"
		}
		wm := "none"
		if c.Indexed {
			wm = fmt.Sprint(c.Watermark)
		}
		s := c.Scheduler
		switch {
		case s == nil:
			t.AppendRow(table.Row{c.ChainID, head, wm, lag, "not running", "", "", "", ""})
		case !s.Answered:
			t.AppendRow(table.Row{c.ChainID, head, wm, lag, fmt.Sprintf("running, owns %d–%d", s.Owned.From, s.Owned.To), "", "", "", ""})
		default:
			eta := "–"
			switch {
			case s.Paused:
				eta = "paused"
			case s.ETASeconds > 0:
				eta = duration(s.ETASeconds)
			}
			t.AppendRow(table.Row{c.ChainID, head, wm, lag, bar.ViewAs(s.Fraction()),
				fmt.Sprintf("%d / %d", s.Scheduled, s.Total), s.InFlight, fmt.Sprintf("%.1f/s", s.Rate), eta})
			for _, b := range s.Buckets {
				t.AppendRow(table.Row{"  " + b.Name, "", "", "", bar.ViewAs(b.Fraction()), fmt.Sprintf("%d / %d", b.Done, b.Total), "", "", ""})
			}
		}
		if tr := c.Traces; tr != nil {
			t.AppendRow(table.Row{"  traces backfill", "", "", "", bar.ViewAs(tr.Fraction()), tr.describe(), "", "", ""})
		}
		if h := c.Held; h != nil {
			t.AppendRow(table.Row{"  watermark", "", "", "", h.describe(), "", "", "", ""})
		}
		for _, e := range c.Errors {
			t.AppendRow(table.Row{"  error", "", "", "", e, "", "", "", ""})
		}
	}
	t.Render()
}

// duration prints seconds rounded for a human: 1h05m, 3m20s, 4.2s.
func duration(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
}
