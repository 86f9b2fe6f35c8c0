package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fuzzHandler is the differential test's handler without the panicking
// paths (their logs would hide the loop's own).
func fuzzHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/panic", "/abort":
		http.NotFound(w, r)
		return
	}
	testHandler(w, r)
}

// errorLog records the loop's ERROR records: a panic in the loop's own
// code is recovered, closes its connection and is logged.
type errorLog struct {
	mu      sync.Mutex
	records []string
}

func (e *errorLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (e *errorLog) Handle(_ context.Context, r slog.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records = append(e.records, r.Message)
	return nil
}
func (e *errorLog) WithAttrs([]slog.Attr) slog.Handler { return e }
func (e *errorLog) WithGroup(string) slog.Handler      { return e }

func (e *errorLog) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records
	e.records = nil
	return r
}

// errReset: the server closed with bytes of the client's unread, and
// the reset that sent may have destroyed answer bytes the client had not
// read yet; what the client read then depends on timing, not on the
// server, and is not compared.
var errReset = errors.New("connection reset")

var fuzzServers struct {
	once      sync.Once
	ref, ours string
	log       errorLog
}

// halfClosed sends data on a new connection to addr, closes its write
// side, and reads every answer until the server closes: with the client
// gone quiet, both servers end the connection on their own, so what a
// client reads can be compared whole, with no timing in it.
func halfClosed(t *testing.T, addr string, data []byte, wait time.Duration) ([]answer, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write(data); err != nil {
		return nil, err
	}
	_ = c.(*net.TCPConn).CloseWrite()
	br := bufio.NewReader(c)
	reqs := headRequests(string(data))
	var out []answer
	for i := 0; ; i++ {
		var req *http.Request
		if i < len(reqs) {
			req = reqs[i]
		}
		res, err := http.ReadResponse(br, req)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return out, fmt.Errorf("still open after %s with the client's side closed", wait)
			}
			if errors.Is(err, syscall.ECONNRESET) {
				return out, errReset
			}
			return out, nil
		}
		b, err := io.ReadAll(res.Body)
		res.Header.Del("Date")
		a := answer{Status: res.StatusCode, Header: res.Header, Body: string(b), Trailer: res.Trailer}
		if err != nil {
			if errors.Is(err, syscall.ECONNRESET) {
				return out, errReset
			}
			a.Err = "body: " + err.Error()
		}
		out = append(out, a)
	}
}

// FuzzServerMatchesNetHTTP sends any bytes to the loop and to net/http's
// server (the same handler), each from a client that then closes its
// side, and requires the same answers: statuses, fields, bodies,
// trailers, in the same number. And no panic in the loop.
func FuzzServerMatchesNetHTTP(f *testing.F) {
	for _, s := range exchanges {
		f.Add([]byte(s))
	}
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{"", "G", "GET", "GET /", "GET / HTTP/1.1\r\nHost: a\r\n\r\nG", "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /"} {
		f.Add([]byte(s)) // streams that end mid-head
	}
	fuzzServers.once.Do(func() {
		h := http.HandlerFunc(fuzzHandler)
		fuzzServers.ref = startNetHTTP(f, h)
		fuzzServers.ours = startLoop(f, &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10,
			Log: slog.New(&fuzzServers.log)})
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		want, refErr := halfClosed(t, fuzzServers.ref, data, 5*time.Second)
		got, err := halfClosed(t, fuzzServers.ours, data, 20*time.Second)
		if err != nil && err != errReset {
			t.Fatalf("the loop: %v", err)
		}
		if logs := fuzzServers.log.take(); len(logs) > 0 {
			t.Fatalf("the loop logged %q", logs)
		}
		if refErr != nil || err == errReset {
			// net/http kept the connection open with the client's side
			// closed (a body it waits for after Expect: 100-continue), or
			// a reset made what either client read a matter of timing:
			// the loop ended it and logged nothing, which is what can be
			// asked.
			return
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answers differ for %q\n got %d: %v\nwant %d: %v", data, len(got), got, len(want), want)
		}
	})
}
