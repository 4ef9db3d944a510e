package storage

import (
	"context"
	"fmt"
	"time"
)

// The query API's keys (migration create_api_keys): one logical row per
// key, every change a new row with a higher version, read with argMax by
// version like the chain registry. What a key is and how one is made is
// pkg/apikeys'; here a key is its id and the hash of its secret. The
// admin commands write through *ClickHouse; the API reads through
// *Reader (a read-only user may).

// tableAPIKeys holds the keys' rows.
const tableAPIKeys = "api_keys"

var apiKeyColumns = []string{"id", "name", "key_hash", "rate", "burst", "created_at", "revoked", "revoked_at", "updated_at", "version"}

// APIKeyRecord is the newest row of one key.
type APIKeyRecord struct {
	ID      string // public: logs, metrics, commands
	Name    string // the operator's label (a partner, a service)
	KeyHash string // hex SHA-256 of the key; the key itself is stored nowhere
	// Rate is the key's requests per second (0: no limit), Burst how many
	// may come at once.
	Rate      float64
	Burst     uint32
	CreatedAt time.Time
	Revoked   bool
	RevokedAt time.Time // zero unless revoked
	UpdatedAt time.Time
	Version   uint64
}

// SaveAPIKey writes a new row for rec.ID and returns it as stored. Its
// version is above every stored row of the key (and the process's
// clock), so it is the newest even when the host that wrote the last one
// ran ahead in time: a revocation always wins over the row it revokes.
func (c *Records) SaveAPIKey(ctx context.Context, rec APIKeyRecord) (APIKeyRecord, error) {
	if rec.ID == "" || rec.KeyHash == "" {
		return rec, fmt.Errorf("storage: SaveAPIKey: empty id (%q) or key hash", rec.ID)
	}
	var top uint64
	if err := c.queryRow(ctx, apiKeyVersionQuery{rec.ID}, &top); err != nil {
		return rec, fmt.Errorf("storage: reading %s for key %s: %w", tableAPIKeys, rec.ID, err)
	}
	rec.Version = max(c.clock.next(), top+1)
	rec.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = rec.UpdatedAt
	}
	var revoked uint8
	// DateTime has no "none": 1970-01-01 stands for it, read back as zero.
	revokedAt := time.Unix(0, 0).UTC()
	if rec.Revoked {
		revoked = 1
		if rec.RevokedAt.IsZero() {
			rec.RevokedAt = rec.UpdatedAt
		}
		revokedAt = rec.RevokedAt
	} else {
		rec.RevokedAt = time.Time{}
	}
	row := []any{rec.ID, rec.Name, rec.KeyHash, rec.Rate, rec.Burst, rec.CreatedAt.UTC(), revoked, revokedAt.UTC(),
		rec.UpdatedAt, rec.Version}
	if err := c.insert(ctx, insertStmt{tableAPIKeys, apiKeyColumns}, [][]any{row}); err != nil {
		return rec, fmt.Errorf("storage: writing %s for key %s: %w", tableAPIKeys, rec.ID, err)
	}
	return rec, nil
}

// APIKeys returns the newest row of every key ever created (revoked ones
// too), by id.
func (c *RecordReader) APIKeys(ctx context.Context) ([]APIKeyRecord, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := apiKeysQuery{}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: reading %s: %w", tableAPIKeys, err)
	}
	defer rows.Close()
	var out []APIKeyRecord
	for rows.Next() {
		var (
			r       APIKeyRecord
			revoked uint8
		)
		if err := rows.Scan(&r.ID, &r.Name, &r.KeyHash, &r.Rate, &r.Burst, &r.CreatedAt, &revoked, &r.RevokedAt,
			&r.UpdatedAt, &r.Version); err != nil {
			return nil, fmt.Errorf("storage: reading %s: %w", tableAPIKeys, err)
		}
		r.Revoked = revoked == 1
		if !r.Revoked {
			r.RevokedAt = time.Time{}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: reading %s: %w", tableAPIKeys, err)
	}
	return out, nil
}

// apiKeyVersionQuery is the highest stored version of one key (0 for
// none).
type apiKeyVersionQuery struct{ id string }

func (q apiKeyVersionQuery) toSQL() (string, []any) {
	return "SELECT max(version) FROM " + tableAPIKeys + " WHERE id = ?", []any{q.id}
}

// apiKeysQuery reads the newest row per key: argMax by version, right
// before and after a merge alike.
type apiKeysQuery struct{}

func (apiKeysQuery) toSQL() (string, []any) {
	return `SELECT id, argMax(name, version), argMax(key_hash, version), argMax(rate, version), argMax(burst, version),
		argMax(created_at, version), argMax(revoked, version), argMax(revoked_at, version), argMax(updated_at, version),
		max(version)
		FROM ` + tableAPIKeys + ` GROUP BY id ORDER BY id`, nil
}
