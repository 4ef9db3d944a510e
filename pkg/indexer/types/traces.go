package types

// IndexModeTraces is the IndexMode search attribute of the traces
// backfill's runs (it indexes no height: it adds the traces of heights
// indexed without them).
const IndexModeTraces IndexMode = "traces"
