package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/stream"
)

func TestSignIsHMACSHA256OfTimestampDotBody(t *testing.T) {
	secret, body, ts := []byte("s3cret"), []byte(`{"seq":1}`), "1700000000"
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("1700000000.{\"seq\":1}"))
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	require.Equal(t, want, Sign(secret, ts, body))

	now := time.Unix(1700000010, 0)
	require.NoError(t, Verify(secret, ts, body, want, now, time.Minute))
	require.ErrorIs(t, Verify([]byte("other"), ts, body, want, now, time.Minute), ErrBadSignature)
	require.ErrorIs(t, Verify(secret, ts, []byte(`{"seq":2}`), want, now, time.Minute), ErrBadSignature)
	require.ErrorIs(t, Verify(secret, "1700000001", body, want, now, time.Minute), ErrBadSignature, "the timestamp is signed")
	require.ErrorIs(t, Verify(secret, ts, body, strings.TrimPrefix(want, "sha256="), now, time.Minute), ErrBadSignature)
	require.ErrorIs(t, Verify(secret, ts, body, want, now.Add(time.Hour), time.Minute), ErrStale)
	require.NoError(t, Verify(secret, ts, body, want, now.Add(time.Hour), 0), "no tolerance: no age check")
}

// The sender against a real HTTP receiver on 127.0.0.1: the headers, the
// body (the stream's event object), the signature a receiver checks, a
// refusal as a StatusError, and a URL's token nowhere in an error.
func TestSenderPostsSignedEvents(t *testing.T) {
	var (
		mu     sync.Mutex
		got    []*http.Request
		bodies [][]byte
		status = http.StatusOK
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, b)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	const token = "tok-8f3a91c2"
	url := srv.URL + "/hook/" + token + "?key=" + token
	s := NewSender(5 * time.Second)
	ev := stream.Event{Seq: 42, Type: stream.EventBlockAdded, ChainID: "c1", Block: stream.EventBlock{Number: 9, Hash: "0xab"}}
	now := time.Unix(1700000000, 0)
	secret := []byte("s3cret")
	require.NoError(t, s.Send(context.Background(), Delivery{URL: url, Secret: secret, SubscriptionID: "0123456789ab", Event: ev, Now: now}))

	require.Len(t, got, 1)
	r, body := got[0], bodies[0]
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, "42", r.Header.Get(HeaderSeq))
	require.Equal(t, "0123456789ab", r.Header.Get(HeaderSubscription))
	require.Equal(t, "c1", r.Header.Get(HeaderChain))
	require.Equal(t, strconv.FormatInt(now.Unix(), 10), r.Header.Get(HeaderTimestamp))
	require.NoError(t, Verify(secret, r.Header.Get(HeaderTimestamp), body, r.Header.Get(HeaderSignature), now, time.Minute))
	var back stream.Event
	require.NoError(t, json.Unmarshal(body, &back))
	require.Equal(t, ev, back, "the body is the stream's event object")

	// Unsigned without a secret.
	require.NoError(t, s.Send(context.Background(), Delivery{URL: url, SubscriptionID: "0123456789ab", Event: ev, Now: now}))
	require.Empty(t, got[1].Header.Get(HeaderSignature))

	// A refusal, and a redirect (not followed), are failures.
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusFound, http.StatusBadRequest} {
		mu.Lock()
		status = code
		mu.Unlock()
		err := s.Send(context.Background(), Delivery{URL: url, SubscriptionID: "0123456789ab", Event: ev, Now: now})
		var se *StatusError
		require.True(t, errors.As(err, &se), "%d: %v", code, err)
		require.Equal(t, code, se.Code)
		require.NotContains(t, err.Error(), token)
	}

	// No receiver: the error names no part of the URL's path or query.
	srv.Close()
	err := s.Send(context.Background(), Delivery{URL: url, SubscriptionID: "0123456789ab", Event: ev, Now: now})
	require.Error(t, err)
	require.NotContains(t, err.Error(), token)
	require.NotContains(t, err.Error(), "/hook/")
}

func TestURLChecksAndDisplay(t *testing.T) {
	for _, bad := range []string{"ftp://h/x", "not a url", "http://", "/relative", "http://[::1"} {
		err := CheckURL(bad)
		require.ErrorIs(t, err, ErrURL, bad)
	}
	require.NoError(t, CheckURL("https://hooks.example.com/x?token=abc"))
	require.Equal(t, "https://hooks.example.com/…", ShowURL("https://user:pw@hooks.example.com/x?token=abc"))
	require.Equal(t, "http://127.0.0.1:8080", ShowURL("http://127.0.0.1:8080/"))
	require.NoError(t, CheckSecretEnv("HOOK_SECRET_1"))
	require.Error(t, CheckSecretEnv("HOOK-SECRET"))
	id, err := NewID()
	require.NoError(t, err)
	require.NoError(t, CheckID(id))
	require.Error(t, CheckID("../x"))
	sub := Subscription{ID: id, SecretEnv: "HOOK_SECRET_1"}
	_, err = sub.Secret(func(string) (string, bool) { return "", false })
	var missing *MissingSecretError
	require.True(t, errors.As(err, &missing))
	require.NotContains(t, err.Error(), "s3cret")
	v, err := sub.Secret(func(string) (string, bool) { return "s3cret", true })
	require.NoError(t, err)
	require.Equal(t, []byte("s3cret"), v)
}
