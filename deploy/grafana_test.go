package deploy_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Grafana dashboard (deploy/grafana/tideline.json) is kept valid here:
// Grafana does not install on these machines, so its shape is checked and
// every query reads metrics the worker exports.
const dashboardPath = "grafana/tideline.json"

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

func TestDashboardIsValid(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.UID)
	require.NotEmpty(t, d.Title)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	require.Equal(t, map[string]string{"datasource": "datasource", "chain_id": "query"}, vars)

	exported := exportedMetrics(t)
	isExported := func(name string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
				return true
			}
		}
		return false
	}
	for _, v := range d.Templating.List {
		for _, m := range metricNames(strings.TrimPrefix(v.Definition, "label_values")) {
			if m != "chain_id" {
				require.True(t, isExported(m), "variable %s reads %s", v.Name, m)
			}
		}
	}

	ids := map[int]bool{}
	type cell struct{ x, y int }
	used := map[cell]string{}
	queries := 0
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "panel id %d repeats", p.ID)
		ids[p.ID] = true
		g := p.GridPos
		require.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q: gridPos %+v", p.Title, g)
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				other, taken := used[cell{x, y}]
				require.False(t, taken, "panels %q and %q overlap", p.Title, other)
				used[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		refs := map[string]bool{}
		for _, q := range p.Targets {
			require.False(t, refs[q.RefID], "panel %q: refId %s repeats", p.Title, q.RefID)
			refs[q.RefID] = true
			require.Contains(t, q.Expr, `chain_id=~"$chain_id"`, "panel %q: query ignores the chain variable: %s", p.Title, q.Expr)
			names := metricNames(q.Expr)
			require.NotEmpty(t, names, "panel %q: %s", p.Title, q.Expr)
			for _, m := range names {
				require.True(t, isExported(m), "panel %q reads %s, which the worker does not export", p.Title, m)
			}
			queries++
		}
	}
	require.Greater(t, queries, 10)
}
