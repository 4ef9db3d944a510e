package main

// The engine: libchdb.so (ClickHouse's engine as a library, from npm's
// @chdb/lib-linux-x64-gnu), opened with dlopen at run time so that nothing
// links against it at build time and the binary builds on a machine that
// does not have it. Its C API is a handful of functions over opaque
// pointers; chdb.h declares them, and the typedefs below are their shapes.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stdint.h>

typedef void *(*chdb_connect_fn)(int, char **);
typedef void (*chdb_close_conn_fn)(void *);
typedef void *(*chdb_query_n_fn)(void *, const char *, size_t, const char *, size_t);
typedef void (*chdb_destroy_fn)(void *);
typedef char *(*chdb_buffer_fn)(void *);
typedef size_t (*chdb_length_fn)(void *);
typedef const char *(*chdb_error_fn)(void *);

static chdb_connect_fn p_connect;
static chdb_close_conn_fn p_close;
static chdb_query_n_fn p_query;
static chdb_destroy_fn p_destroy;
static chdb_buffer_fn p_buffer;
static chdb_length_fn p_length;
static chdb_error_fn p_error;

// chdb_load opens the library and finds every function; it returns NULL or
// what went wrong.
static const char *chdb_load(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
	if (!(p_connect = (chdb_connect_fn)dlsym(h, "chdb_connect"))) return "chdb_connect not found";
	if (!(p_close = (chdb_close_conn_fn)dlsym(h, "chdb_close_conn"))) return "chdb_close_conn not found";
	if (!(p_query = (chdb_query_n_fn)dlsym(h, "chdb_query_n"))) return "chdb_query_n not found";
	if (!(p_destroy = (chdb_destroy_fn)dlsym(h, "chdb_destroy_query_result"))) return "chdb_destroy_query_result not found";
	if (!(p_buffer = (chdb_buffer_fn)dlsym(h, "chdb_result_buffer"))) return "chdb_result_buffer not found";
	if (!(p_length = (chdb_length_fn)dlsym(h, "chdb_result_length"))) return "chdb_result_length not found";
	if (!(p_error = (chdb_error_fn)dlsym(h, "chdb_result_error"))) return "chdb_result_error not found";
	return NULL;
}

// chdb_connect returns a pointer to the connection handle (chdb_connection *).
static void *chdb_open(int argc, char **argv) { return p_connect(argc, argv); }
static void chdb_close(void *conn) { p_close(conn); }
// The query functions take the handle itself (chdb_connection), which is
// what the pointer returned by chdb_connect points at.
static void *chdb_run(void *conn, const char *q, size_t ql, const char *f, size_t fl) {
	return p_query(*(void **)conn, q, ql, f, fl);
}
static void chdb_free(void *r) { p_destroy(r); }
static char *chdb_buf(void *r) { return p_buffer(r); }
static size_t chdb_len(void *r) { return p_length(r); }
static const char *chdb_err(void *r) { return p_error(r); }
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// engine is one chDB session over a data folder. chDB runs one query at a
// time per process; the caller serialises (server.mu).
type engine struct {
	conn unsafe.Pointer
}

// openEngine loads lib and opens a session whose databases live in dir.
func openEngine(lib, dir string) (*engine, error) {
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	if msg := C.chdb_load(clib); msg != nil {
		return nil, fmt.Errorf("loading %s: %s", lib, C.GoString(msg))
	}
	args := []string{"clickhouse", "--path=" + dir}
	argv := make([]*C.char, len(args))
	for i, a := range args {
		argv[i] = C.CString(a)
		defer C.free(unsafe.Pointer(argv[i]))
	}
	conn := C.chdb_open(C.int(len(args)), &argv[0])
	if conn == nil {
		return nil, fmt.Errorf("chdb_connect --path=%s failed", dir)
	}
	return &engine{conn: conn}, nil
}

// errEngine is an error the engine reported for a query: the text starts
// with ClickHouse's "Code: N. DB::Exception: …".
type errEngine struct{ msg string }

func (e *errEngine) Error() string { return e.msg }

// query runs one statement and returns its output in format (the
// statement's own FORMAT clause wins, as on a server).
func (e *engine) query(sql, format string) ([]byte, error) {
	if e.conn == nil {
		return nil, errors.New("engine closed")
	}
	cq := C.CString(sql)
	defer C.free(unsafe.Pointer(cq))
	cf := C.CString(format)
	defer C.free(unsafe.Pointer(cf))
	r := C.chdb_run(e.conn, cq, C.size_t(len(sql)), cf, C.size_t(len(format)))
	if r == nil {
		return nil, errors.New("chdb_query_n returned no result")
	}
	defer C.chdb_free(r)
	if msg := C.chdb_err(r); msg != nil {
		return nil, &errEngine{C.GoString(msg)}
	}
	n := C.chdb_len(r)
	if n == 0 {
		return nil, nil
	}
	return C.GoBytes(unsafe.Pointer(C.chdb_buf(r)), C.int(n)), nil
}

func (e *engine) close() {
	if e.conn != nil {
		C.chdb_close(e.conn)
		e.conn = nil
	}
}
