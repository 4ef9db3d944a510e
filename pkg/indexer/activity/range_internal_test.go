package activity

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// The hand-off rule (handoffCap): what is handed off and what fails the
// attempt, by number and kind of failures, attempt and whether other
// heights of the range are indexed.
func TestRangeHandOffRule(t *testing.T) {
	malformed := &rpc.MalformedError{Method: "eth_getBlockByNumber", Reason: "bad"}
	transient := &rpc.TransientError{Method: "eth_getBlockByNumber", Err: errors.New("timeout")}
	for _, tc := range []struct {
		name      string
		n         int
		err       error
		attempt   int32
		others    bool
		handedOff bool
	}{
		{"a few malformed, first attempt", handoffCap, malformed, 1, true, true},
		{"many malformed, first attempt", handoffCap + 1, malformed, 1, true, false},
		{"many malformed, third attempt", 500, malformed, handoffAttempt, true, true},
		{"many malformed, nothing else indexed", 500, malformed, 10, false, false},
		{"a few transport errors, first attempt", 2, transient, 1, true, false},
		{"a few transport errors, third attempt", handoffCap, transient, handoffAttempt, true, true},
		{"many transport errors, late attempt", handoffCap + 1, transient, 20, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &rangeRun{
				a:       &Activities{Metrics: metrics.New(prometheus.NewRegistry()), Log: zap.NewNop()},
				chainID: "c", rg: chaindata.HeightRange{From: 0, To: 999}, log: zap.NewNop(),
				failed: map[uint64]heightFailure{},
			}
			for h := range tc.n {
				r.failed[uint64(h)] = heightFailure{err: tc.err, reason: fetchReason(tc.err), specific: heightSpecific(tc.err)}
			}
			res, err := r.handOff(types.IndexRangeResult{}, tc.attempt, tc.others)
			if !tc.handedOff {
				require.Error(t, err)
				require.Empty(t, res.Failed)
				return
			}
			require.NoError(t, err)
			require.Len(t, res.Failed, tc.n)
			require.Equal(t, uint64(tc.n-1), res.Failed[0].Height, "newest first")
		})
	}
}
