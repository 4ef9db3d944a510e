package activity

import (
	"fmt"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The indexing path's side of call traces: a traced chain's heights are
// written with their traces, and the frames counted. Heights indexed
// without them are the traces backfill's (pkg/indexer/jobs/tracebackfill).

// requireTraces refuses a block fetched without its traces while the
// chain traces: such a height is not complete, and is not written.
func (a *Activities) requireTraces(d *chaindata.BlockData) error {
	if a.Chain.Traces && !d.Traced {
		return fmt.Errorf("chain %s height %d: fetched without its traces, but the chain traces (the client does not trace)", a.Chain.ID, d.Block.Number)
	}
	return nil
}

// countTraces counts the frames of written blocks.
func (a *Activities) countTraces(blocks ...*chaindata.BlockData) {
	n := 0
	for _, d := range blocks {
		n += len(d.Traces)
	}
	if n > 0 {
		a.Metrics.TracesWritten.WithLabelValues(a.Chain.ID).Add(float64(n))
	}
}
