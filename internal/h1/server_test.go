package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// handlers are what the differential test's handler does, by the
// request's path: the ways a handler can answer.
var handlers = map[string]http.HandlerFunc{
	"/empty": func(w http.ResponseWriter, r *http.Request) {},
	"/small": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") },
	"/json": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"a":1}`)
	},
	"/html": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html><body>x</body></html>") },
	"/large": func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 10; i++ {
			io.WriteString(w, strings.Repeat(string(rune('a'+i)), 1000))
		}
	},
	"/length": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "12345")
	},
	"/short": func(w http.ResponseWriter, r *http.Request) { // less than it declared: the connection closes
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "12345")
	},
	"/nocontent": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
	"/notmodified": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Etag", `"x"`)
		w.WriteHeader(http.StatusNotModified)
	},
	"/status": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "tea")
	},
	"/flush": func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "one")
		w.(http.Flusher).Flush()
		io.WriteString(w, "two")
	},
	"/trailer": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "7")
	},
	"/early": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, "after hints")
	},
	"/close": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	},
	"/split": func(w http.ResponseWriter, r *http.Request) { // a handler's CR/LF must not split the answer
		w.Header().Set("X-Evil", "a\r\nX-Injected: 1")
		w.Header()["Bad Name"] = []string{"v"}
		io.WriteString(w, "ok")
	},
	"/echo": func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest) // the two readers word their errors apart
			return
		}
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "%s %s %s host=%s len=%d te=%v close=%v body=%q\n", r.Method, r.RequestURI, r.Proto, r.Host, r.ContentLength, r.TransferEncoding, r.Close, b)
		for _, k := range keys {
			fmt.Fprintf(w, "%s=%q\n", k, r.Header[k])
		}
		tk := make([]string, 0, len(r.Trailer))
		for k, v := range r.Trailer {
			tk = append(tk, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(tk)
		fmt.Fprintf(w, "trailer %v\n", tk)
	},
	"/ignore": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "body not read") },
	"/panic":  func(w http.ResponseWriter, r *http.Request) { panic("boom") },
	"/abort": func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	},
}

func testHandler(w http.ResponseWriter, r *http.Request) {
	if h, ok := handlers[r.URL.Path]; ok {
		h(w, r)
		return
	}
	http.NotFound(w, r)
}

// exchanges are the request streams the differential test sends, each
// on a fresh connection; several hold more than one request (keep-alive,
// pipelining) or answers that end the connection.
var exchanges = []string{
	"GET /empty HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\n\r\nGET /json HTTP/1.1\r\nHost: a\r\n\r\nGET /html HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /large HTTP/1.1\r\nHost: a\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /large HTTP/1.0\r\n\r\n",
	"GET /small HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /small HTTP/1.0\r\n\r\n",
	"GET /length HTTP/1.1\r\nHost: a\r\n\r\nGET /short HTTP/1.1\r\nHost: a\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /nocontent HTTP/1.1\r\nHost: a\r\n\r\nGET /notmodified HTTP/1.1\r\nHost: a\r\n\r\nGET /status HTTP/1.1\r\nHost: a\r\n\r\n",
	"HEAD /small HTTP/1.1\r\nHost: a\r\n\r\nHEAD /length HTTP/1.1\r\nHost: a\r\n\r\nHEAD /large HTTP/1.1\r\nHost: a\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /flush HTTP/1.1\r\nHost: a\r\n\r\nGET /trailer HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /early HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /close HTTP/1.1\r\nHost: a\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /split HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /echo?q=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-A: 1\r\nx-a: 2\r\nPragma: no-cache\r\n\r\nhelloGET /echo HTTP/1.1\r\nHost: b\r\n\r\n",
	"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nX-T: v\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"POST /ignore HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /ignore HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /ignore HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\nxyz",
	"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
	"GET /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nExpect: teapot\r\n\r\nx",
	"GET http://other.test/echo?x=%20 HTTP/1.1\r\nHost: a\r\n\r\n",
	"\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\n\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\n\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\nX-Bad Name: v\r\n\r\n",
	"HEAD /empty HTTP/1.1\r\nHost: a\r\n\r\nHEAD /nocontent HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /echo HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nhi",
	"GET /panic HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /abort HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /small HTTP/1.1\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"GET /small HTTP/3.0\r\nHost: a\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 8<<10) + "\r\n\r\n",
	"GET /small HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 3<<10) + "\r\n\r\nGET /echo HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("c", 5000) + "\r\n\r\n",
	"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	// Keep-alive and Expect are decided as net/http's server decides
	// them: its hasToken on the first value (a token between spaces or
	// commas), not the list parse that sets Request.Close.
	"GET /echo HTTP/1.0\r\nHost: x\r\nConnection: 0 keep-Alive\r\n\r\nGET /small HTTP/1.0\r\nHost: x\r\n\r\n",
	"GET /echo HTTP/1.0\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\nGET /small HTTP/1.0\r\nHost: x\r\n\r\n",
	"GET /echo HTTP/1.0\r\nHost: x\r\nConnection: a\r\nConnection: keep-alive\r\n\r\nGET /small HTTP/1.0\r\nHost: x\r\n\r\n",
	"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: x close\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: xclose\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: a\r\nConnection: close\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
	"POST /echo HTTP/1.0\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab",
	"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: x 100-continue\r\nContent-Length: 2\r\n\r\nab",
}

// answer is one response as a client reads it, without what may differ
// between two correct servers (Date).
type answer struct {
	Status  int
	Header  http.Header
	Body    string
	Trailer http.Header
	Err     string
}

// readAnswers reads the responses on c until it closes or stays idle,
// and whether it closed (false: it stayed open past the last). The
// first expect answers may take up to 10 s each (a loaded machine);
// after them, idle says how long a connection may stay silent before
// it counts as kept open.
func readAnswers(t *testing.T, c net.Conn, reqs []*http.Request, expect int, idle time.Duration) ([]answer, bool) {
	t.Helper()
	br := bufio.NewReader(c)
	var out []answer
	for i := 0; ; i++ {
		var req *http.Request
		if i < len(reqs) {
			req = reqs[i]
		}
		wait := idle
		if i < expect {
			wait = 10 * time.Second
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		res, err := http.ReadResponse(br, req)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return out, false
			}
			return out, true
		}
		b, err := io.ReadAll(res.Body)
		res.Header.Del("Date")
		a := answer{Status: res.StatusCode, Header: res.Header, Body: string(b), Trailer: res.Trailer}
		if err != nil {
			a.Err = "body: " + err.Error()
		}
		out = append(out, a)
	}
}

// headRequests are the requests of raw whose answers have no body
// (HEAD), for http.ReadResponse.
func headRequests(raw string) []*http.Request {
	var reqs []*http.Request
	br := bufio.NewReader(strings.NewReader(raw))
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return reqs
		}
		_, _ = io.Copy(io.Discard, r.Body)
		reqs = append(reqs, r)
	}
}

// exchangeOn sends raw on a connection dial opens and reads the answers
// (see readAnswers).
func exchangeOn(t *testing.T, dial func() (net.Conn, error), raw string, expect int, idle time.Duration) ([]answer, bool) {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Error(err) // on an exchange's goroutine: no Fatal
		return nil, true
	}
	defer c.Close()
	go func() { _, _ = io.WriteString(c, raw) }()
	return readAnswers(t, c, headRequests(raw), expect, idle)
}

func startLoop(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ln.Addr().String()
}

func startNetHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10,
		ErrorLog: nil}
	s.SetKeepAlivesEnabled(true)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ln.Addr().String()
}

// TestServerMatchesNetHTTP sends each exchange to the loop and to
// net/http's server with the same handler, and compares what a client
// reads: statuses, fields, bodies, trailers, and whether the connection
// stayed open.
func TestServerMatchesNetHTTP(t *testing.T) {
	h := http.HandlerFunc(testHandler)
	ref := startNetHTTP(t, h)
	ours := startLoop(t, &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10})
	dialer := func(addr string) func() (net.Conn, error) {
		return func() (net.Conn, error) { return net.Dial("tcp", addr) }
	}
	compareExchanges(t, exchanges, dialer(ref), dialer(ours))
}

// result is what a client read in one exchange.
type result struct {
	answers []answer
	closed  bool
}

// compareExchanges sends each of raws on a connection from ref and on
// one from ours, side by side, and fails a subtest for each whose
// answers or close differ. It returns what ref's server answered.
func compareExchanges(t *testing.T, raws []string, ref, ours func() (net.Conn, error)) []result {
	want := make([]result, len(raws))
	got := make([]result, len(raws))
	// Each exchange waits out a silence; they run side by side.
	var wg sync.WaitGroup
	for i, raw := range raws {
		wg.Go(func() {
			// net/http answers on loopback in milliseconds: 2 s of silence
			// is a connection it keeps open.
			want[i].answers, want[i].closed = exchangeOn(t, ref, raw, 0, 2*time.Second)
			got[i].answers, got[i].closed = exchangeOn(t, ours, raw, len(want[i].answers), time.Second)
		})
	}
	wg.Wait()
	for i, raw := range raws {
		name := raw
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(strings.ReplaceAll(name, "\r\n", "|"), func(t *testing.T) {
			if fmt.Sprint(got[i].answers) != fmt.Sprint(want[i].answers) {
				t.Errorf("answers differ\n got %d: %v\nwant %d: %v", len(got[i].answers), got[i].answers, len(want[i].answers), want[i].answers)
			}
			if got[i].closed != want[i].closed {
				t.Errorf("connection closed = %v, net/http's %v", got[i].closed, want[i].closed)
			}
		})
	}
	return want
}
