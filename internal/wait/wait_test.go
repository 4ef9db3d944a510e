package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestForReturnsWhenTheTimeIsUp(t *testing.T) {
	if err := For(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("For: %v", err)
	}
}

// A cancelled context ends the wait at once with its error, however long
// the wait was meant to be.
func TestForEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("For with a cancelled context: %v, want context.Canceled", err)
	}
}
