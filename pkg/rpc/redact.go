package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// clean replaces err by an error whose text, and the text of everything it
// wraps, has no trace of the URL.
func (e *Ethereum) clean(err error) error { return e.redact.cleanErr(err) }

// safeCause returns err for unwrapping if its text is free of the URL.
func (e *Ethereum) safeCause(err error) error { return e.redact.safeCause(err) }

// RedactURLError is err with every trace of rawURL (the URL, its host,
// path, query values, user) taken out of its text and of the text of
// everything it still wraps, for other clients of URLs that may hold a
// credential (webhook receivers). What callers match on (context, EOF,
// errno) still unwraps.
func RedactURLError(rawURL string, err error) error {
	if err == nil {
		return nil
	}
	return newRedactor(rawURL).cleanErr(err)
}

func (r *redactor) cleanErr(err error) error {
	return &cleanError{msg: r.clean(err.Error()), causes: []error{r.safeCause(err)}}
}

// safeCause returns err for unwrapping if its text is free of the URL.
// net/http's *url.Error (text "Post \"<url>\": ...") is peeled off; if the
// text still leaks (a DNS error naming the host, a body echoing the path),
// only what callers match on is kept: context, EOF and errno causes.
func (r *redactor) safeCause(err error) error {
	if r.clean(err.Error()) == err.Error() {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) && r.clean(ue.Err.Error()) == ue.Err.Error() {
		return ue.Err
	}
	var causes []error
	for _, s := range []error{context.DeadlineExceeded, context.Canceled, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed} {
		if errors.Is(err, s) {
			causes = append(causes, s)
		}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		causes = append(causes, errno)
	}
	return &cleanError{msg: r.clean(err.Error()), causes: causes}
}

// redactor removes an endpoint URL and its parts from text.
type redactor struct {
	secrets []string
}

const redacted = "<redacted>"

func newRedactor(raw string) *redactor {
	r := &redactor{}
	add := func(s string) {
		// Short pieces ("/", "v3", a port) are not secrets, and replacing
		// them would garble messages.
		if len(s) >= 4 {
			r.secrets = append(r.secrets, s)
		}
	}
	add(raw)
	if u, err := url.Parse(raw); err == nil {
		add(u.Redacted())
		add(u.Host)
		add(u.Hostname())
		add(u.Path)
		add(u.EscapedPath())
		add(u.RawQuery)
		add(u.Fragment)
		if u.User != nil {
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
		for _, seg := range strings.Split(u.Path, "/") {
			add(seg)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		// net/http quotes the URL in its errors, escaping as Go does.
		add(strconv.Quote(raw))
	}
	// Longest first, so that a piece never leaves half of a longer one.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

func (r *redactor) clean(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return s
}
