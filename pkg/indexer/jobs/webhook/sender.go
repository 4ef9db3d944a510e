package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Sender POSTs events to receivers: one event per request, its JSON the
// body, signed. Only a 2xx answer is a delivery; redirects are not
// followed (a 3xx is a failure, as is any other answer).
type Sender struct {
	client *http.Client
}

// NewSender is a Sender whose requests each take at most timeout.
func NewSender(timeout time.Duration) *Sender {
	return &Sender{client: &http.Client{
		Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Delivery is one event for one subscription.
type Delivery struct {
	URL            string
	Secret         []byte // nil: unsigned
	SubscriptionID string
	Event          stream.Event
	Now            time.Time
}

// StatusError is a receiver's answer other than 2xx.
type StatusError struct{ Code int }

func (e *StatusError) Error() string {
	return fmt.Sprintf("the receiver answered %d %s", e.Code, http.StatusText(e.Code))
}

// Send POSTs the event. An error never holds the URL or any part of it
// (the text of a failed connection is redacted): it may go to logs and
// into workflow histories.
func (s *Sender) Send(ctx context.Context, d Delivery) error {
	body, err := json.Marshal(d.Event)
	if err != nil {
		return fmt.Errorf("webhook: encoding event %d: %w", d.Event.Seq, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook: the subscription's URL: %w", rpc.RedactURLError(d.URL, err))
	}
	ts := strconv.FormatInt(d.Now.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tideline-webhooks")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSeq, strconv.FormatUint(d.Event.Seq, 10))
	req.Header.Set(HeaderSubscription, d.SubscriptionID)
	req.Header.Set(HeaderChain, d.Event.ChainID)
	if d.Secret != nil {
		req.Header.Set(HeaderSignature, Sign(d.Secret, ts, body))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: POST of seq %d: %w", d.Event.Seq, rpc.RedactURLError(d.URL, err))
	}
	// Drained (a little) so the connection is reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook: POST of seq %d: %w", d.Event.Seq, &StatusError{Code: resp.StatusCode})
	}
	return nil
}
