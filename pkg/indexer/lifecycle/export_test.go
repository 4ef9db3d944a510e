package lifecycle

// SetAfterStore runs fn in Remove between storing the removal and its
// sweep, as a worker that sees the removal first would.
func SetAfterStore(c *Chains, fn func()) { c.afterStore = fn }
