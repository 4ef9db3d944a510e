package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The headers of every delivery. A receiver checks the signature, then
// drops an event whose seq it has had (delivery is at least once).
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, keyed with
	// the subscription's secret, of "<timestamp>.<body>" (absent for a
	// subscription without a secret).
	HeaderSignature = "X-Tideline-Signature"
	// HeaderTimestamp is the unix time of the attempt, in seconds; it is
	// signed, so a receiver may refuse old replays.
	HeaderTimestamp = "X-Tideline-Timestamp"
	// HeaderSeq is the event's seq in the chain's stream.
	HeaderSeq = "X-Tideline-Seq"
	// HeaderSubscription is the subscription's ID, HeaderChain its chain.
	HeaderSubscription = "X-Tideline-Subscription"
	HeaderChain        = "X-Tideline-Chain"
)

const signaturePrefix = "sha256="

// Sign is the value of HeaderSignature for a body sent at timestamp (the
// HeaderTimestamp text).
func Sign(secret []byte, timestamp string, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook: the signature does not match the body")
	ErrStale        = errors.New("webhook: the timestamp is outside the tolerance")
)

// Verify checks a delivery as a receiver does: the signature over the
// timestamp and the body, in constant time, and (tolerance > 0) that the
// timestamp is within tolerance of now.
func Verify(secret []byte, timestamp string, body []byte, signature string, now time.Time, tolerance time.Duration) error {
	got, err := hex.DecodeString(strings.TrimPrefix(signature, signaturePrefix))
	if err != nil || !strings.HasPrefix(signature, signaturePrefix) {
		return fmt.Errorf("%w: %s is not sha256=<hex>", ErrBadSignature, HeaderSignature)
	}
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return ErrBadSignature
	}
	if tolerance > 0 {
		ts, err := strconv.ParseInt(timestamp, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %s is not unix seconds", ErrStale, HeaderTimestamp)
		}
		if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: %s is %v away", ErrStale, HeaderTimestamp, d.Round(time.Second))
		}
	}
	return nil
}
