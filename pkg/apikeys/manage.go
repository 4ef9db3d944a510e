package apikeys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is where keys live: pkg/storage's *ClickHouse writes them (the
// admin commands), its *Reader reads them (the query API).
type Store interface {
	SaveAPIKey(ctx context.Context, rec storage.APIKeyRecord) (storage.APIKeyRecord, error)
	APIKeys(ctx context.Context) ([]storage.APIKeyRecord, error)
}

// Limits are a key's own token bucket: Rate requests per second (0: no
// limit), Burst at once.
type Limits struct {
	Rate  float64
	Burst uint32
}

// DefaultLimits are a new key's when the command gives none: the
// anonymous defaults of api.rate_limit and api.burst.
var DefaultLimits = Limits{Rate: 50, Burst: 100}

// maxNameLen bounds a key's name, which list prints on one line.
const maxNameLen = 100

// NotFoundError is an id no key has.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no API key has id %q (indexer apikey list shows them)", e.ID)
}

// RevokedError is a change asked of a revoked key: revocation is final.
type RevokedError struct{ ID string }

func (e *RevokedError) Error() string {
	return fmt.Sprintf("API key %s is revoked; create a new one", e.ID)
}

func (l Limits) check() error {
	if l.Rate < 0 {
		return fmt.Errorf("--rate %v: must not be negative (0 = no limit)", l.Rate)
	}
	if l.Burst < 1 {
		return errors.New("--burst: must be at least 1")
	}
	return nil
}

func checkName(name string) error {
	if strings.TrimSpace(name) == "" {
		return errors.New("name: empty; give the key a name that says whose it is")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("name: %d characters, at most %d", len(name), maxNameLen)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("name %q: only printable characters", name)
		}
	}
	return nil
}

// Created is a new key: its record and the key itself, which exists
// nowhere else and is to be shown once.
type Created struct {
	Record storage.APIKeyRecord
	Key    string
}

// Create makes and stores a new key.
func Create(ctx context.Context, st Store, name string, l Limits) (Created, error) {
	if err := checkName(name); err != nil {
		return Created{}, err
	}
	if err := l.check(); err != nil {
		return Created{}, err
	}
	all, err := st.APIKeys(ctx)
	if err != nil {
		return Created{}, err
	}
	// Two keys sharing an id (48 bits of their hashes) is unlikely enough
	// that drawing again is the whole answer.
	for range 3 {
		key, err := New()
		if err != nil {
			return Created{}, err
		}
		hash := Hash(key)
		if _, taken := find(all, IDOf(hash)); taken {
			continue
		}
		rec, err := st.SaveAPIKey(ctx, storage.APIKeyRecord{ID: IDOf(hash), Name: name, KeyHash: hash,
			Rate: l.Rate, Burst: l.Burst})
		if err != nil {
			return Created{}, err
		}
		return Created{Record: rec, Key: key}, nil
	}
	return Created{}, errors.New("apikeys: three new keys in a row had the id of a stored one")
}

// List is every key (revoked ones too), by id.
func List(ctx context.Context, st Store) ([]storage.APIKeyRecord, error) { return st.APIKeys(ctx) }

// LimitChange is what SetLimits changes; a nil field keeps the key's.
type LimitChange struct {
	Rate  *float64
	Burst *uint32
}

// SetLimits changes a key's rate and/or burst; the API applies them
// within api.keys_refresh.
func SetLimits(ctx context.Context, st Store, id string, c LimitChange) (storage.APIKeyRecord, error) {
	if c.Rate == nil && c.Burst == nil {
		return storage.APIKeyRecord{}, errors.New("give --rate, --burst or both")
	}
	rec, err := lookup(ctx, st, id)
	if err != nil {
		return rec, err
	}
	if rec.Revoked {
		return rec, &RevokedError{ID: id}
	}
	l := Limits{Rate: rec.Rate, Burst: rec.Burst}
	if c.Rate != nil {
		l.Rate = *c.Rate
	}
	if c.Burst != nil {
		l.Burst = *c.Burst
	}
	if err := l.check(); err != nil {
		return rec, err
	}
	rec.Rate, rec.Burst = l.Rate, l.Burst
	return st.SaveAPIKey(ctx, rec)
}

// Revoke revokes a key for good; the API refuses it within
// api.keys_refresh. A key already revoked is left as it is (already).
func Revoke(ctx context.Context, st Store, id string) (rec storage.APIKeyRecord, already bool, err error) {
	if rec, err = lookup(ctx, st, id); err != nil {
		return rec, false, err
	}
	if rec.Revoked {
		return rec, true, nil
	}
	rec.Revoked = true
	rec, err = st.SaveAPIKey(ctx, rec)
	return rec, false, err
}

func lookup(ctx context.Context, st Store, id string) (storage.APIKeyRecord, error) {
	all, err := st.APIKeys(ctx)
	if err != nil {
		return storage.APIKeyRecord{}, err
	}
	rec, ok := find(all, id)
	if !ok {
		return rec, &NotFoundError{ID: id}
	}
	return rec, nil
}

func find(all []storage.APIKeyRecord, id string) (storage.APIKeyRecord, bool) {
	for _, r := range all {
		if r.ID == id {
			return r, true
		}
	}
	return storage.APIKeyRecord{}, false
}
