package config

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The webhooks section: defaults fill a section built in code, and each
// bad value is refused naming its key.
func TestWebhooksDefaultsAndChecks(t *testing.T) {
	require.Equal(t, DefaultWebhooks(), Webhooks{}.WithDefaults())
	require.Empty(t, DefaultWebhooks().validate())
	for key, tweak := range map[string]func(*Webhooks){
		"webhooks.dead_letter_after":      func(w *Webhooks) { w.DeadLetterAfter = time.Minute },
		"webhooks.request_timeout":        func(w *Webhooks) { w.RequestTimeout = time.Hour },
		"webhooks.poll_interval":          func(w *Webhooks) { w.PollInterval = time.Millisecond },
		"webhooks.page_size":              func(w *Webhooks) { w.PageSize = 5000 },
		"webhooks.retry.maximum_attempts": func(w *Webhooks) { w.Retry.MaximumAttempts = 3 },
		"webhooks.retry.maximum_interval": func(w *Webhooks) { w.Retry.MaximumInterval = 48 * time.Hour },
	} {
		w := DefaultWebhooks()
		tweak(&w)
		errs := w.validate()
		require.Len(t, errs, 1, key)
		var ke *KeyError
		require.True(t, errors.As(errs[0], &ke))
		require.Equal(t, key, ke.Key)
	}
	v := New()
	v.Set("webhooks.dead_letter_after", "2h")
	cfg, err := Decode(v)
	require.NoError(t, err)
	require.Equal(t, 2*time.Hour, cfg.Webhooks.DeadLetterAfter)
	require.Equal(t, DefaultWebhooks().Retry, cfg.Webhooks.Retry)
}
