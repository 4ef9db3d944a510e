package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Endpoint URLs may name environment variables as ${NAME}: the worker
// replaces each reference by the variable's value when it dials, from its
// own environment. A chain defined at runtime is stored in ClickHouse, and
// a URL like https://eth.example/v2/${MAINNET_KEY} keeps the key out of
// the table: only whoever runs a worker (or `indexer chain add`, which
// dials the endpoints to check them) holds it.

// envRefRE matches one reference. Only the braced form: a bare $ is a
// legal URL character and stays as it is.
var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// MissingVariableError is a ${NAME} reference whose variable is not set
// where the URL is dialled. It names the variable, never its value or the
// URL.
type MissingVariableError struct {
	Key  string // the endpoint's key, chains.<id>.endpoints.<name>
	Name string // the variable
}

func (e *MissingVariableError) Error() string {
	return fmt.Sprintf("config: %s: environment variable %s is not set in this process (the URL references ${%s})", e.Key, e.Name, e.Name)
}

// EnvRefs lists the variables raw references, in order, repeats included.
func EnvRefs(raw string) []string {
	var names []string
	for _, m := range envRefRE.FindAllStringSubmatch(raw, -1) {
		names = append(names, m[1])
	}
	return names
}

// ExpandURL replaces every ${NAME} of raw by lookup(NAME). key names the
// endpoint in the error (chains.<id>.endpoints.<name>). An unset variable
// is an error; a set but empty one is too, since an empty key never is
// what the operator meant.
func ExpandURL(key, raw string, lookup func(string) (string, bool)) (string, error) {
	var missing error
	out := envRefRE.ReplaceAllStringFunc(raw, func(ref string) string {
		name := envRefRE.FindStringSubmatch(ref)[1]
		v, ok := lookup(name)
		if (!ok || v == "") && missing == nil {
			missing = &MissingVariableError{Key: key, Name: name}
		}
		return v
	})
	if missing != nil {
		return "", missing
	}
	return out, nil
}

// ExpandEndpoints returns ch with every endpoint URL expanded (ExpandURL);
// prefix is the chain's key, chains.<id>.
func ExpandEndpoints(prefix string, ch Chain, lookup func(string) (string, bool)) (Chain, error) {
	out := make(map[string]string, len(ch.Endpoints))
	for name, raw := range ch.Endpoints {
		u, err := ExpandURL(prefix+".endpoints."+name, raw, lookup)
		if err != nil {
			return ch, err
		}
		out[name] = u
	}
	ch.Endpoints = out
	return ch, nil
}

// withPlaceholders stands a plain word in for each reference, so that a
// URL with references can be parsed and checked before it is expanded.
func withPlaceholders(raw string) string {
	return envRefRE.ReplaceAllString(raw, "envref")
}

// secretParamRE matches query parameter names that carry credentials.
var secretParamRE = regexp.MustCompile(`(?i)(key|token|secret|auth|pass|signature|credential|access)`)

// keyLikeRE matches a path segment that looks like an API key: a long run
// of letters, digits, '-' and '_' (Infura, Alchemy and QuickNode keys are
// 32 to 40 of these).
var keyLikeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{20,}$`)

// LiteralSecrets lists what in raw looks like a credential written out
// instead of referenced (${NAME}): a user or password, a query parameter
// named like a key or with a key-like value, a key-like path segment. The
// reasons name the part, never its value. A definition stored in ClickHouse
// must not hold these (`indexer chain add` refuses them unless told the
// URL holds no secret).
func LiteralSecrets(raw string) []string {
	u, err := url.Parse(withPlaceholders(raw))
	if err != nil {
		return nil // not a URL: validation says so
	}
	var why []string
	if u.User != nil {
		why = append(why, "a user or password before the host (user:password@)")
	}
	for name, vs := range u.Query() {
		for _, v := range vs {
			if v == "envref" || v == "" {
				continue
			}
			if secretParamRE.MatchString(name) || keyLike(v) {
				why = append(why, fmt.Sprintf("query parameter %q with a literal value", name))
				break
			}
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if keyLike(seg) {
			why = append(why, "a path segment that looks like an API key")
			break
		}
	}
	return why
}

// keyLike tells whether s looks like a key: long, and mixing letters with
// digits (words joined by dashes, such as "mainnet-archive", do not).
func keyLike(s string) bool {
	if !keyLikeRE.MatchString(s) || strings.Contains(s, "envref") {
		return false
	}
	var letters, digits bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letters = true
		}
	}
	return letters && digits
}
