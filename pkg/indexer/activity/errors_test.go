package activity_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// Every activity refuses a chain the worker does not know with the one
// unknown-chain error, non-retryable, as the workflows do.
func TestActivitiesRejectUnknownChain(t *testing.T) {
	a := &activity.Activities{Chains: map[string]activity.Chain{"known": {}}}
	ctx := context.Background()
	calls := map[string]func() error{
		"HeadHeight":     func() error { _, err := a.HeadHeight(ctx, "nope"); return err },
		"Watermark":      func() error { _, err := a.Watermark(ctx, "nope"); return err },
		"MissingHeights": func() error { _, err := a.MissingHeights(ctx, types.MissingInput{ChainID: "nope"}); return err },
		"MissingRanges":  func() error { _, err := a.MissingRanges(ctx, types.MissingInput{ChainID: "nope"}); return err },
		"CountIndexed":   func() error { _, err := a.CountIndexed(ctx, types.CountIndexedInput{ChainID: "nope"}); return err },
		"StartIndex":     func() error { _, err := a.StartIndex(ctx, types.StartIndexInput{ChainID: "nope"}); return err },
		"CheckScheduler": func() error { _, err := a.CheckScheduler(ctx, "nope"); return err },
		"StartScheduler": func() error { _, err := a.StartScheduler(ctx, types.SchedulerInput{ChainID: "nope"}); return err },
		"ReportScan":     func() error { return a.ReportScan(ctx, "nope", types.HeadScanResult{}) },
		"IsIndexed":      func() error { _, err := a.IsIndexed(ctx, types.IndexBlockInput{ChainID: "nope"}); return err },
		"IndexBlock":     func() error { _, err := a.IndexBlock(ctx, types.IndexBlockInput{ChainID: "nope"}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.Error(t, err)
			var u *activity.UnknownChainError
			require.ErrorAs(t, err, &u)
			require.Equal(t, "nope", u.ChainID)
			var app *sdktemporal.ApplicationError
			require.ErrorAs(t, err, &app)
			require.True(t, app.NonRetryable(), "retrying cannot configure a chain")
			require.Equal(t, activity.ErrTypeUnknownChain, app.Type())
			require.True(t, activity.IsUnknownChain(err))
		})
	}
	require.False(t, activity.IsUnknownChain(errors.New("chain \"nope\" is not configured on this worker")),
		"matched by type, never by text")
}

// Through Temporal only the application error's type remains; it is still
// recognised, and the activity is not retried.
func TestUnknownChainSurvivesTemporal(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(&activity.Activities{Chains: map[string]activity.Chain{}})
	_, err := env.ExecuteActivity("HeadHeight", "nope")
	require.Error(t, err)
	require.True(t, activity.IsUnknownChain(err), "got %v", err)
	var app *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.True(t, app.NonRetryable())
}
