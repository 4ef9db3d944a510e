package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/ClickHouse/ch-go/compress"
)

// server answers ClickHouse's HTTP interface, as far as clickhouse-go's
// HTTP protocol uses it, from one engine session.
//
// A server gives each request its own settings on top of the user's
// profile; an engine has one session whose settings persist. So a request's
// settings are SET before its query and set back to the profile's value
// after it (baseline): a setting one request sends (an insert's
// optimize_on_insert = 0, say) must never leak into the next one, or a
// statement that forgets it would pass here and fail on a server.
type server struct {
	mu       sync.Mutex
	eng      *engine
	baseline map[string]string
	version  string
	// insertFile holds one INSERT's data while it runs (run).
	insertFile string
}

// newServer applies the profile (compatibility, when not empty, as a
// server's user profile would) and reads every setting's value under it.
func newServer(eng *engine, dir, compatibility string) (*server, error) {
	if compatibility != "" {
		if _, err := eng.query("SET compatibility = "+quote(compatibility), "TabSeparated"); err != nil {
			return nil, fmt.Errorf("compatibility %q: %w", compatibility, err)
		}
	}
	out, err := eng.query("SELECT name, value FROM system.settings", "JSONEachRow")
	if err != nil {
		return nil, fmt.Errorf("reading the settings: %w", err)
	}
	s := &server{eng: eng, baseline: map[string]string{}, insertFile: filepath.Join(dir, "insert.data")}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var row struct{ Name, Value string }
		if err := dec.Decode(&row); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading the settings: %w", err)
		}
		s.baseline[row.Name] = row.Value
	}
	v, err := eng.query("SELECT version()", "TabSeparated")
	if err != nil {
		return nil, fmt.Errorf("reading the version: %w", err)
	}
	s.version = strings.TrimSpace(string(v))
	return s, nil
}

// notSettings are the URL parameters of the HTTP interface that are not
// settings.
var notSettings = map[string]bool{
	"query": true, "database": true, "default_format": true, "client_protocol_version": true,
	"query_id": true, "quota_key": true, "session_id": true, "session_timeout": true,
	"session_check": true, "user": true, "password": true, "buffer_size": true,
	"wait_end_of_query": true,
}

var settingNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// insertFormatRE is an INSERT whose data follows in the body: the
// statement, then its format.
var insertFormatRE = regexp.MustCompile(`(?is)^\s*(INSERT\s+INTO\s+.*?)\s+FORMAT\s+([A-Za-z0-9_]+)\s*$`)

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/ping":
		io.WriteString(w, "Ok.\n")
		return
	case "/":
	default:
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		s.fail(w, http.StatusBadRequest, 48, "external tables (multipart bodies) are not served here")
		return
	}
	params := r.URL.Query()
	var in io.Reader = r.Body
	if params.Get("decompress") == "1" {
		// The body is ClickHouse's compressed blocks (a client's lz4 or
		// zstd over HTTP), as a server reads them.
		in = compress.NewReader(r.Body)
	}
	body, err := io.ReadAll(in)
	if errors.Is(err, io.EOF) {
		// compress.Reader ends with a wrapped EOF at the next block's
		// header, after the last whole block.
		err = nil
	}
	if err != nil {
		s.fail(w, http.StatusBadRequest, 1000, "reading the request body: "+err.Error())
		return
	}
	var (
		query string
		data  []byte
	)
	switch q := params.Get("query"); {
	case q == "":
		query = string(body)
	case len(body) == 0:
		query = q
	default:
		// As a server does: the parameter, then the body. An INSERT's data
		// goes through a file (run): the engine ends Native data given
		// inside the query text at its first empty line ("\n\n": a UInt64
		// of 2570 is 0a 0a 00…), and reads a file whole.
		if m := insertFormatRE.FindStringSubmatch(q); m != nil {
			query = fmt.Sprintf("%s FROM INFILE %s FORMAT %s", m[1], quote(s.insertFile), m[2])
			data = body
		} else {
			query = q + "\n" + string(body)
		}
	}
	if strings.TrimSpace(query) == "" {
		s.fail(w, http.StatusBadRequest, 62, "empty query")
		return
	}
	format := params.Get("default_format")
	if format == "" {
		format = "TabSeparated"
	}
	var settings []string
	for k := range params {
		if strings.HasPrefix(k, "param_") {
			s.fail(w, http.StatusBadRequest, 48, "query parameters (param_*) are not served here")
			return
		}
		if notSettings[k] {
			continue
		}
		if k == "compress" || k == "decompress" || k == "enable_http_compression" || k == "network_compression_method" {
			continue
		}
		if !settingNameRE.MatchString(k) {
			s.fail(w, http.StatusBadRequest, 115, "setting name "+strconv.Quote(k)+" is not an identifier")
			return
		}
		settings = append(settings, k)
	}
	database := params.Get("database")
	if database == "" {
		database = "default"
	}

	out, err := s.run(database, settings, params, query, data, format)
	if err != nil {
		var ee *errEngine
		if errors.As(err, &ee) {
			s.fail(w, http.StatusInternalServerError, codeOf(ee.msg), strings.TrimSpace(ee.msg))
			return
		}
		s.fail(w, http.StatusInternalServerError, 1000, err.Error())
		return
	}
	if format == "Native" && len(out) > 0 {
		// The engine cannot be told the client's protocol version (native.go).
		rev, _ := strconv.ParseUint(params.Get("client_protocol_version"), 10, 64)
		if out, err = toRevision(out, rev); err != nil {
			s.fail(w, http.StatusInternalServerError, 1000, "native output for protocol version "+strconv.FormatUint(rev, 10)+": "+err.Error())
			return
		}
	}
	if params.Get("compress") == "1" && len(out) > 0 {
		if out, err = compressed(out, params.Get("network_compression_method")); err != nil {
			s.fail(w, http.StatusInternalServerError, 1000, "compressing the answer: "+err.Error())
			return
		}
	}
	h := w.Header()
	h.Set("Content-Length", strconv.Itoa(len(out)))
	h.Set("X-ClickHouse-Format", format)
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// run runs the query (with data: an INSERT's, written to s.insertFile
// first) with the request's database and settings, and then
// puts the session's settings back as they were, even when the query
// failed.
func (s *server) run(database string, settings []string, params map[string][]string, query string, data []byte, format string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if data != nil { // the query reads it FROM INFILE s.insertFile
		if err := os.WriteFile(s.insertFile, data, 0o600); err != nil {
			return nil, err
		}
		defer os.Remove(s.insertFile)
	}
	if _, err := s.eng.query("USE "+backquote(database), "TabSeparated"); err != nil {
		return nil, err
	}
	var set []string
	defer func() {
		for _, k := range set {
			// A setting the engine knows has a baseline; SET succeeded.
			if _, err := s.eng.query(fmt.Sprintf("SET %s = %s", k, quote(s.baseline[k])), "TabSeparated"); err != nil {
				// The session would go on with another request's setting:
				// better no engine than a wrong one.
				log.Fatalf("chdb-http: cannot set %s back to %q: %v", k, s.baseline[k], err)
			}
		}
	}()
	for _, k := range settings {
		if _, err := s.eng.query(fmt.Sprintf("SET %s = %s", k, quote(params[k][0])), "TabSeparated"); err != nil {
			return nil, err
		}
		set = append(set, k)
	}
	return s.eng.query(query, format)
}

var codeRE = regexp.MustCompile(`^Code: (\d+)\.`)

// codeOf reads the exception code at the start of the engine's message.
func codeOf(msg string) int {
	if m := codeRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1000
}

// fail answers as a server does: the code in a header, the exception as
// the body's text.
func (s *server) fail(w http.ResponseWriter, status, code int, msg string) {
	if !strings.HasPrefix(msg, "Code: ") {
		msg = fmt.Sprintf("Code: %d. DB::Exception: %s", code, msg)
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=UTF-8")
	h.Set("X-ClickHouse-Exception-Code", strconv.Itoa(code))
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s (version %s)\n", msg, s.version)
}

// compressed is out as ClickHouse's compressed blocks (compress=1), each
// at most a megabyte of the answer, with the method the client named (LZ4
// unless ZSTD).
func compressed(out []byte, method string) ([]byte, error) {
	m := compress.LZ4
	if strings.EqualFold(method, "zstd") {
		m = compress.ZSTD
	}
	cw := compress.NewWriter(compress.LevelZero, m)
	var buf []byte
	for len(out) > 0 {
		n := min(len(out), 1<<20)
		if err := cw.Compress(out[:n]); err != nil {
			return nil, err
		}
		buf = append(buf, cw.Data...)
		out = out[n:]
	}
	return buf, nil
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func backquote(s string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(s) + "`"
}
