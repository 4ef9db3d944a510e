package types

// IndexModeStream is the IndexMode search attribute of the change
// stream's appender runs (they index nothing: they turn indexed heights
// into stream events).
const IndexModeStream IndexMode = "stream"
