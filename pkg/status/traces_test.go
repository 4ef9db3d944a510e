package status_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/status"
)

// A tracing chain's row shows where its traces backfill is.
func TestRenderTracesBackfill(t *testing.T) {
	running := &status.Traces{Running: true, Top: 999, Floor: 0, Next: 750}
	require.InDelta(t, 0.25, running.Fraction(), 1e-9)
	done := &status.Traces{Top: 999, Done: 1000}
	require.Equal(t, 1.0, done.Fraction())
	chains := []status.Report{
		{ChainID: "traced", Head: 1000, Watermark: 1000, Indexed: true, Traces: running},
		{ChainID: "caught", Head: 1000, Watermark: 1000, Indexed: true, Traces: done},
		{ChainID: "plain", Head: 1000, Watermark: 1000, Indexed: true},
	}
	var b bytes.Buffer
	status.Render(&b, chains, termenv.Ascii)
	out := b.String()
	require.Contains(t, out, "pass 0–999, at 749")
	require.Contains(t, out, "25%")
	require.Contains(t, out, "every height below 1000 traced")
	require.Equal(t, 2, strings.Count(out, "traces backfill"), "only the chains that trace")
}
