package webhook

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// The states of a subscription, stored (pkg/storage, subscriptions), and
// of its delivery (Progress.State), which follows the stored one and has
// one of its own, DeadLetter (workflow.go).
const (
	Active  = "active"
	Paused  = "paused"
	Removed = "removed"
)

// Subscription is one subscription as the delivery reads it.
type Subscription struct {
	ChainID, ID, State string
	// URL may hold a token: never logged, never in a workflow input.
	URL     string
	Filter  Filter
	Include stream.Include
	// SecretEnv names the workers' environment variable holding the
	// signing secret ("": unsigned).
	SecretEnv  string
	StartAfter uint64
}

// FromRecord reads a stored row.
func FromRecord(r storage.SubscriptionRecord) (Subscription, error) {
	f, err := ParseFilter(r.Filter)
	if err != nil {
		return Subscription{}, fmt.Errorf("subscription %s: stored filter: %w", r.ID, err)
	}
	inc, err := stream.ParseInclude(r.Include)
	if err != nil {
		return Subscription{}, fmt.Errorf("subscription %s: stored include: %w", r.ID, err)
	}
	return Subscription{ChainID: r.ChainID, ID: r.ID, State: r.State, URL: r.URL, Filter: f, Include: inc,
		SecretEnv: r.SecretEnv, StartAfter: r.StartAfter}, nil
}

// Record is the row that stores s.
func (s Subscription) Record() storage.SubscriptionRecord {
	return storage.SubscriptionRecord{ChainID: s.ChainID, ID: s.ID, State: s.State, URL: s.URL,
		Filter: s.Filter.String(), Include: IncludeString(s.Include), SecretEnv: s.SecretEnv, StartAfter: s.StartAfter}
}

// IncludeString is the text stream.ParseInclude reads back.
func IncludeString(in stream.Include) string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{in.Transactions, "transactions"}, {in.Logs, "logs"}, {in.TokenTransfers, "token_transfers"}, {in.Traces, "traces"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, ",")
}

// NewID is a new subscription ID: 12 random hex digits.
func NewID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: a new subscription ID: %w", err)
	}
	return hex.EncodeToString(b), nil
}

var idRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

// CheckID refuses what NewID never makes.
func CheckID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("subscription ID %q is not 12 hex digits (indexer subscription list shows them)", clip(id))
	}
	return nil
}

// ErrURL is wrapped by every error of a URL that cannot receive events.
var ErrURL = errors.New("webhook: bad URL")

// CheckURL accepts an absolute http or https URL. Its errors never echo
// the URL (it may hold a token).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%w: it does not parse", ErrURL)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: the scheme must be http or https", ErrURL)
	case u.Host == "":
		return fmt.Errorf("%w: it has no host", ErrURL)
	}
	return nil
}

// ShowURL is what may be shown of a URL: its scheme and host, the rest
// (path, query, user) elided, since a token may be anywhere in it.
func ShowURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<unreadable URL>"
	}
	s := u.Scheme + "://" + u.Host
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		s += "/…"
	}
	return s
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckSecretEnv accepts an environment variable's name ("" is none).
func CheckSecretEnv(name string) error {
	if name != "" && !envNameRE.MatchString(name) {
		return fmt.Errorf("--secret-env %q is not an environment variable name (letters, digits, _)", clip(name))
	}
	return nil
}

// MissingSecretError is a subscription whose secret variable is not set
// in the delivering worker's environment.
type MissingSecretError struct{ Name, SubscriptionID string }

func (e *MissingSecretError) Error() string {
	return fmt.Sprintf("subscription %s: its secret variable %s is not set (or empty) in this worker's environment", e.SubscriptionID, e.Name)
}

// Secret reads the signing secret from the environment (lookup is
// os.LookupEnv in a worker): nil when the subscription has none.
func (s Subscription) Secret(lookup func(string) (string, bool)) ([]byte, error) {
	if s.SecretEnv == "" {
		return nil, nil
	}
	v, ok := lookup(s.SecretEnv)
	if !ok || v == "" {
		return nil, &MissingSecretError{Name: s.SecretEnv, SubscriptionID: s.ID}
	}
	return []byte(v), nil
}
