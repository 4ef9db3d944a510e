package simchain

import (
	"context"
	"testing"

	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// The token events the chain serves are what TokenCounts says, read with
// tideline's client and pkg/tokens: every standard, and the malformed
// ones, at the rate the pool gives them.
func TestTokenEventsAsCounted(t *testing.T) {
	s := startSim(t, testConfig(newFakeClock()))
	c := tidelineClient(t, s.HTTPURL(), nil)
	ctx := context.Background()
	var total TokenCounts
	for h := s.Head() - 59; h <= s.Head(); h++ {
		data, err := rpc.FetchBlock(ctx, c, h)
		if err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		var st tokens.Stats
		tokens.Decode(nil, data.Logs, &st)
		malformed := 0
		for _, n := range st.Malformed {
			malformed += n
		}
		got := TokenCounts{ERC20: st.Transfers[tokens.ERC20], ERC721: st.Transfers[tokens.ERC721],
			ERC1155: st.Transfers[tokens.ERC1155], Malformed: malformed}
		if want := s.TokenCounts(h); got != want {
			t.Fatalf("height %d: decoded %+v, want %+v", h, got, want)
		}
		total.ERC20 += got.ERC20
		total.ERC721 += got.ERC721
		total.ERC1155 += got.ERC1155
		total.Malformed += got.Malformed
	}
	if total.ERC20 == 0 || total.ERC721 == 0 || total.ERC1155 == 0 || total.Malformed == 0 {
		t.Fatalf("60 heights hold every kind: %+v", total)
	}
}
