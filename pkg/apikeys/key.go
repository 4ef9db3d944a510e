// Package apikeys is what a key of the query API is: how one is made,
// hashed, recognised and named, and the sequences of `indexer apikey`
// (create, update, revoke) over the stored rows (pkg/storage, table
// api_keys). The query API (pkg/api) checks keys with Hash and Check; it
// never sees a stored key, only hashes.
package apikeys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every key: it tells a tideline key from another
// service's (an Etherscan key a tool sends everywhere), and makes a
// leaked one easy to grep for in logs and repositories.
const Prefix = "tl_"

// secretBytes is a key's randomness: 256 bits.
const secretBytes = 32

// encoding writes the random part: URL-safe, so a key fits a query
// parameter and a header as it is.
var encoding = base64.RawURLEncoding.Strict()

// Len is a key's length in characters.
var Len = len(Prefix) + encoding.EncodedLen(secretBytes)

// idHexLen is the length of a key's id: 48 bits of its hash, enough that
// two keys of one deployment do not share one (Create checks anyway).
const idHexLen = 12

// ErrMalformed is a string that is not a key of this format: it cannot
// be one that was issued.
var ErrMalformed = errors.New("not a tideline API key")

// New makes a key from crypto/rand. The key is shown once; only its hash
// is stored.
func New() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("apikeys: reading random bytes: %w", err)
	}
	return Prefix + encoding.EncodeToString(b), nil
}

// Hash is what is stored of a key and what a request's key is looked up
// by: its SHA-256, in hex. A fast hash is right here, unlike for
// passwords: a key is 256 random bits, so no dictionary or brute force
// reaches it however fast each guess is, and a slow hash (bcrypt,
// argon2) would only cost every request milliseconds of CPU.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// IDOf is the public id of the key with this hash: its first 12 hex
// digits. It names the key in logs, metrics and commands, and whoever
// holds the key can compute it (`printf %s "$KEY" | sha256sum | cut -c1-12`),
// which is how a leaked key is found to revoke it; it says nothing that
// helps to guess the key.
func IDOf(hash string) string {
	if len(hash) < idHexLen {
		return hash
	}
	return hash[:idHexLen]
}

// Check tells whether s has the form of a key (prefix, length, alphabet);
// a request whose key fails it is refused without a look-up.
func Check(s string) error {
	if !strings.HasPrefix(s, Prefix) {
		return fmt.Errorf("%w: it does not start with %s", ErrMalformed, Prefix)
	}
	if len(s) != Len {
		return fmt.Errorf("%w: %d characters, a key has %d", ErrMalformed, len(s), Len)
	}
	if _, err := encoding.DecodeString(s[len(Prefix):]); err != nil {
		return fmt.Errorf("%w: characters outside A-Z, a-z, 0-9, - and _", ErrMalformed)
	}
	return nil
}

// HasPrefix tells whether s claims to be a tideline key.
func HasPrefix(s string) bool { return strings.HasPrefix(s, Prefix) }
