package types

// IndexMode is the indexing path that started a workflow: the IndexMode
// search attribute of every workflow tideline starts, and the mode label
// of indexer_heights_indexed_total.
type IndexMode string

// The indexing paths.
const (
	// IndexModeLive: the push source started the height at a new head.
	IndexModeLive IndexMode = "live"
	// IndexModeDirect: HeadScan started the height (the pull path).
	IndexModeDirect IndexMode = "direct"
	// IndexModeScheduler: the catch-up scheduler started it.
	IndexModeScheduler IndexMode = "scheduler"
	// IndexModeGap: GapScan found it missing and started it.
	IndexModeGap IndexMode = "gap"
	// IndexModeRange: part of a range of the backlog (an IndexRange, or a
	// height a range handed to its own IndexBlock).
	IndexModeRange IndexMode = "range"
)

// The modes of the workflows that keep derived data, not indexing paths:
// the IndexMode search attribute of their runs, never a label of
// indexer_heights_indexed_total (they index nothing).
const (
	// IndexModeAggregate: the aggregator (cumulative counts per height).
	IndexModeAggregate IndexMode = "aggregate"
	// IndexModePrune: retention, deleting old detailed rows.
	IndexModePrune IndexMode = "prune"
	// IndexModeTokenMetadata: asking new tokens for their metadata.
	IndexModeTokenMetadata IndexMode = "token-metadata"
)

// IndexModes lists every mode.
var IndexModes = []IndexMode{IndexModeLive, IndexModeDirect, IndexModeScheduler, IndexModeGap, IndexModeRange}

// Label is the mode as a metric label: "unknown" for an input recorded
// before the mode travelled with it.
func (m IndexMode) Label() string {
	if m == "" {
		return "unknown"
	}
	return string(m)
}
