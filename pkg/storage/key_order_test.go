package storage

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// keyedRows are look-up-like rows: a repeated string leading the key,
// then a position, and a payload column that must travel with its row.
type keyedRows struct {
	key     []string
	pos     []uint64
	payload []uint32
}

func (r *keyedRows) columns() []any { return []any{r.key, r.pos, r.payload} }

func (r *keyedRows) clone() *keyedRows {
	return &keyedRows{key: slices.Clone(r.key), pos: slices.Clone(r.pos), payload: slices.Clone(r.payload)}
}

func (r *keyedRows) byPosition(i, j int) int { return cmp.Compare(r.pos[i], r.pos[j]) }

// compareAll is the full key, as inKeyOrder's callers compared it before
// inStringKeyOrder.
func (r *keyedRows) compareAll(i, j int) int {
	if c := strings.Compare(r.key[i], r.key[j]); c != 0 {
		return c
	}
	return r.byPosition(i, j)
}

// randomKeyedRows draws n rows over `distinct` strings, skewed (a few
// strings in most rows, as contracts in a chain's calls) with unique
// (string, position) keys; distinct 0 gives every row its own string.
// added: "ascending" adds positions in order (rows built from blocks in
// height order), "shuffled" in random order.
func randomKeyedRows(rng *rand.Rand, n, distinct int, added string) *keyedRows {
	var zipf *rand.Zipf
	if distinct > 0 {
		zipf = rand.NewZipf(rng, 1.2, 1, uint64(distinct-1))
	}
	r := &keyedRows{}
	for i := range n {
		s := uint64(i)
		if zipf != nil {
			s = zipf.Uint64()
		}
		// The multiplier scatters the strings' order from their numbers'.
		r.key = append(r.key, fmt.Sprintf("0x%040x", s*0x9e3779b97f4a7c15))
		r.pos = append(r.pos, uint64(i))
		r.payload = append(r.payload, uint32(i))
	}
	if added == "shuffled" {
		rng.Shuffle(n, func(i, j int) {
			r.key[i], r.key[j] = r.key[j], r.key[i]
			r.pos[i], r.pos[j] = r.pos[j], r.pos[i]
			r.payload[i], r.payload[j] = r.payload[j], r.payload[i]
		})
	}
	return r
}

// inStringKeyOrder orders rows exactly as sorting every row by the whole
// key does: rows added in position order, in random order, already in key
// order, one string, all strings distinct, and none.
func TestStringKeyOrderEqualsFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 31))
	cases := map[string]*keyedRows{
		"ascending": randomKeyedRows(rng, 5000, 300, "ascending"),
		"shuffled":  randomKeyedRows(rng, 5000, 300, "shuffled"),
		"one":       randomKeyedRows(rng, 100, 1, "shuffled"),
		"distinct":  randomKeyedRows(rng, 500, 0, "shuffled"),
		"empty":     {},
	}
	sorted := randomKeyedRows(rng, 1000, 50, "shuffled")
	inKeyOrder(len(sorted.key), sorted.compareAll, sorted.columns())
	cases["sorted"] = sorted
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			want, got := rows.clone(), rows.clone()
			inKeyOrder(len(want.key), want.compareAll, want.columns())
			inStringKeyOrder(got.key, got.byPosition, got.columns())
			require.Equal(t, want, got)
			for i := 1; i < len(got.key); i++ {
				require.Negative(t, got.compareAll(i-1, i), "rows %d and %d", i-1, i)
			}
			for i, p := range got.payload {
				require.Equal(t, uint64(p), got.pos[i], "row %d carries its own payload", i)
			}
		})
	}
}

// BenchmarkKeyOrder orders one batch of look-up rows the size of a traced
// heavy-mix write (100 heights of about 1,900 address_traces rows), over
// 20,000 addresses skewed as above, added in position order:
//
//   - compare: every row sorted by string comparisons (inKeyOrder);
//   - by-string: the distinct strings sorted once (inStringKeyOrder).
func BenchmarkKeyOrder(b *testing.B) {
	rows := randomKeyedRows(rand.New(rand.NewPCG(7, 31)), 190_000, 20_000, "ascending")
	b.Run("compare", func(b *testing.B) {
		for b.Loop() {
			r := rows.clone()
			inKeyOrder(len(r.key), r.compareAll, r.columns())
		}
		b.ReportMetric(float64(len(rows.key))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("by-string", func(b *testing.B) {
		for b.Loop() {
			r := rows.clone()
			inStringKeyOrder(r.key, r.byPosition, r.columns())
		}
		b.ReportMetric(float64(len(rows.key))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
