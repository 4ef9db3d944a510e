package benchkit

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Exit runs a benchmark with its options under a context that ends on
// Ctrl-C or SIGTERM, so that an interrupted run still stops everything it
// started, and exits the process with the code it returns.
func Exit[O any](run func(context.Context, O) int, o O) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, o)
	stop()
	os.Exit(code)
}
