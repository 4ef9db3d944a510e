package types

// IndexModeStream is the IndexMode search attribute of the change
// stream's appender runs (they index nothing: they turn indexed heights
// into stream events).
const IndexModeStream IndexMode = "stream"

// StreamInput is the input of one StreamAppend run (its Schedule's
// argument).
type StreamInput struct {
	ChainID string `json:"chain_id"`
}

// StreamResult says what one appender activity did: the events it
// appended and where the stream stands (its last seq, the next height it
// adds).
type StreamResult struct {
	Appended uint64 `json:"appended"`
	Seq      uint64 `json:"seq"`
	Next     uint64 `json:"next"`
}
