package h1

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// outcome is what a parser made of a head, in the terms the two parsers
// share: refused (a status), incomplete, or the request as a handler of
// net/http's server would see it.
type outcome struct {
	Status     int // 0: accepted
	Incomplete bool
	Method     string
	Target     string
	Major      int
	Minor      int
	Header     http.Header // Host removed, as net/http's server does
	Host       string
	Length     int64
	Chunked    bool
	Close      bool
	Preface    bool
}

// netHTTP is what net/http's server makes of data: it is sent to a real
// http.Server on loopback, whose handler answers with what it was handed
// (the request, gob-encoded), or whose refusal's status is read.
func netHTTP(t *testing.T, data []byte) outcome {
	t.Helper()
	addr := referenceServer(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return outcome{Incomplete: true} // closed without an answer: the head never ended
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Reference") != "1" {
		return outcome{Status: res.StatusCode}
	}
	var o outcome
	if err := gob.NewDecoder(res.Body).Decode(&o); err != nil {
		t.Fatalf("the reference's answer: %v", err)
	}
	return o
}

var reference struct {
	once sync.Once
	addr string
}

// referenceServer starts, once, the net/http server netHTTP asks.
func referenceServer(t *testing.T) string {
	reference.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			o := outcome{Method: r.Method, Target: r.RequestURI, Major: r.ProtoMajor, Minor: r.ProtoMinor,
				Header: r.Header, Host: r.Host, Length: r.ContentLength, Chunked: len(r.TransferEncoding) > 0, Close: r.Close,
				// isH2Upgrade, told by what it does to the request (no
				// length, closing) since the Host field that rules it out
				// is gone from r.Header by now.
				Preface: r.Method == "PRI" && r.Proto == "HTTP/2.0" && r.ContentLength == -1 && r.Close && len(r.Header) == 0}
			w.Header().Set("X-Reference", "1")
			w.Header().Set("Connection", "close")
			_ = gob.NewEncoder(w).Encode(o) // gob: header bytes as sent, not made valid UTF-8
		}), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }() // for the test binary's life
		reference.addr = ln.Addr().String()
	})
	return reference.addr
}

// ours is what Parse makes of data, in the same terms: the fields as
// net/http's header map holds them once its reader has dropped
// Transfer-Encoding, deduplicated Content-Length (or dropped it under
// chunked), moved Trailer out of it (chunked) and added Cache-Control
// for Pragma: no-cache.
func ours(data []byte) outcome {
	var h Head
	_, err := h.Parse(data)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return outcome{Status: e.Status}
		}
		return outcome{Incomplete: true}
	}
	header := http.Header{}
	for _, f := range h.Fields {
		name := string(f.Name)
		switch name {
		case "Host", "Transfer-Encoding":
			continue
		case "Trailer":
			if h.Chunked {
				continue // net/http moves it to Request.Trailer
			}
		case "Content-Length":
			if h.Chunked || len(header[name]) > 0 {
				continue
			}
			header[name] = []string{string(trimSpace(f.Value))}
			continue
		}
		header[name] = append(header[name], string(f.Value))
	}
	if h.CacheControlAdded {
		header["Cache-Control"] = []string{"no-cache"}
	}
	return outcome{Method: string(h.Method), Target: string(h.Target), Major: h.Major, Minor: h.Minor,
		Header: header, Host: string(h.Host), Length: h.ContentLength, Chunked: h.Chunked, Close: h.Close, Preface: h.H2Preface}
}

// headSeeds are heads at the edges net/http draws, the edge issue's
// smuggling table among them (test/security rows H1–H7).
var headSeeds = []string{
	"GET /x HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"GET /x?q=1&r=%20 HTTP/1.1\r\nHost: gw.test\r\nAccept: */*\r\nX-Multi: a\r\nx-multi: b\r\n\r\n",
	"GET http://other.test/x HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"GET /x HTTP/1.0\r\n\r\n",
	"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nConnection: foo, Close\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 3\r\nContent-Length:  3 \r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 3, 3\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: +3\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: \r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: identity\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: CHUNKED\r\nTrailer: Content-Length\r\n\r\n",
	"POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\r\n X-User-Id: admin\r\nConnection: close\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\r\n\t b \r\n  \r\nX-B: c\r\n\r\n",
	"GET /x HTTP/1.1\r\n Host: gw.test\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\rX-User-Id: admin\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\r\r\n\r\n",
	"GET /x\r HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"GET /x HTTP/1.1\nHost: gw.test\nX-A: a\nX-B: b\nConnection: close\n\n",
	"GET /x HTTP/1.1\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a.test, b.test\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a.test/evil\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a test\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost : gw.test\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nBad Name: v\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\n: v\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nNoColon\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-Ctl: a\x01b\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-Obs: caf\xe9\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nPragma: no-cache\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nPragma: no-cache\r\nCache-Control: max-age=0\r\n\r\n",
	"GET /x HTTP/2.0\r\nHost: gw.test\r\n\r\n",
	"GET /x HTTP/1.2\r\nHost: gw.test\r\n\r\n",
	"GET /x HTTP/01.1\r\nHost: gw.test\r\n\r\n",
	"GET /x http/1.1\r\nHost: gw.test\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"PRI * HTTP/2.0\r\nHost: x\r\n\r\n",
	"CONNECT gw.test:443 HTTP/1.1\r\n\r\n",
	"CONNECT /rpc HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"G@T /x HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"GET  /x HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"GET /x HTTP/1.1 \r\nHost: gw.test\r\n\r\n",
	"GET x HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"GET * HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\n",
	"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\r\n ",
	"\r\nGET /x HTTP/1.1\r\nHost: gw.test\r\n\r\n",
}

func checkHead(t *testing.T, data []byte) {
	t.Helper()
	want, got := netHTTP(t, data), ours(data)
	if got.Incomplete && (want.Incomplete || want.Status != 0) {
		// The stream ended before the head: net/http may have refused
		// its request line already; the loop answers that once the head
		// is whole, or its read limit or deadline is reached.
		return
	}
	if len(want.Header) == 0 {
		want.Header = nil
	}
	if len(got.Header) == 0 {
		got.Header = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\n h1       %+v\n net/http %+v", data, got, want)
	}
}

func TestParseHeadSeeds(t *testing.T) {
	for _, s := range headSeeds {
		checkHead(t, []byte(s))
	}
}

// FuzzParseHead: on any bytes, Parse accepts what net/http's server
// accepts, reads it as it does, and refuses the rest with its status.
func FuzzParseHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkHead(t, data)
	})
}

func TestParseHeadReuse(t *testing.T) {
	var h Head
	big := "GET /x HTTP/1.1\r\nHost: gw.test\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 100)+"\r\n", 20) + "\r\n"
	for i := range 3 {
		for _, s := range []string{big, "POST /y HTTP/1.1\r\nHost: b\r\nContent-Length: 7\r\n\r\nbody..."} {
			n, err := h.Parse([]byte(s))
			if err != nil || n != strings.Index(s, "\r\n\r\n")+4 {
				t.Fatalf("round %d: %d, %v", i, n, err)
			}
		}
		if string(h.Method) != "POST" || len(h.Fields) != 2 || h.ContentLength != 7 || string(h.Host) != "b" {
			t.Fatalf("round %d: the second head read as %s %d fields, length %d, host %q", i, h.Method, len(h.Fields), h.ContentLength, h.Host)
		}
	}
	data := []byte(big)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := h.Parse(data); err != nil {
			t.Fatal(err)
		}
	})
	// The parsed URL's (url.ParseRequestURI); the fields reuse h's buffers.
	if allocs > 3 {
		t.Errorf("%.0f allocations to parse a head again into a reused Head, want at most 3", allocs)
	}
}

// BenchmarkParseHead compares Parse, into a reused Head, with
// http.ReadRequest on the same head (what net/http's server parses).
func BenchmarkParseHead(b *testing.B) {
	data := []byte("GET /api/users/42?fields=name HTTP/1.1\r\nHost: gw.example.com\r\nUser-Agent: bench/1.0\r\n" +
		"Accept: application/json\r\nAccept-Encoding: gzip\r\nAuthorization: Bearer abcdef0123456789\r\n" +
		"X-Request-Id: 0123456789abcdef\r\nConnection: keep-alive\r\n\r\n")
	b.Run("h1", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		var h Head
		for b.Loop() {
			if _, err := h.Parse(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("net-http", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		r := bytes.NewReader(data)
		br := bufio.NewReader(r)
		for b.Loop() {
			r.Reset(data)
			br.Reset(r)
			if _, err := http.ReadRequest(br); err != nil {
				b.Fatal(err)
			}
		}
	})
}
