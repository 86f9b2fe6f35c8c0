package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// responseSeeds are answers at the edges of the plain shape and past it.
var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\nDate: Thu, 03 Dec 2026 12:00:00 GMT\r\n\r\n{\"a\":1}",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\nx-multi: a\r\nX-Multi: b\r\n\r\nabcHTTP/1.1 200 OK\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200  OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 +12 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy",
	"HTTP/1.1 200 OK\r\nContent-Length:  +3 \r\n\r\nxyz",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nBad Name: a\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-Ctl: a\x01b\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-Pad:   spaced  \t\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nPragma: no-cache\r\n\r\nx",
	"HTTP/1.1 200 OK\r\n: empty\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
	"HTTP/1.1 200 OK\r\nX-" + strings.Repeat("a", 5000) + ": v\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\n\r\nbody to the close",
}

// readAll reads a response's body and what is left of br after it.
func readAll(res *http.Response, br *bufio.Reader) (body, rest []byte, bodyErr error) {
	body, bodyErr = io.ReadAll(res.Body)
	rest, _ = io.ReadAll(br)
	return body, rest, bodyErr
}

// checkResponse: where ReadResponse takes an answer, http.ReadResponse
// reads the same from the same bytes; where it does not, it consumed
// nothing.
func checkResponse(t *testing.T, data []byte, method string) {
	t.Helper()
	req := &http.Request{Method: method}
	br := bufio.NewReaderSize(bytes.NewReader(data), 4096)
	got, ok := ReadResponse(br, req)
	if !ok {
		rest, _ := io.ReadAll(br)
		if !bytes.Equal(rest, data) {
			t.Fatalf("%q: not taken, but %d bytes consumed", data, len(data)-len(rest))
		}
		return
	}
	wbr := bufio.NewReaderSize(bytes.NewReader(data), 4096)
	want, err := http.ReadResponse(wbr, req)
	if err != nil {
		t.Fatalf("%q: taken, but net/http refuses it: %v", data, err)
	}
	gotBody, gotRest, gotErr := readAll(got, br)
	wantBody, wantRest, wantErr := readAll(want, wbr)
	type view struct {
		Status              string
		StatusCode          int
		Proto               string
		Major, Minor        int
		Header              http.Header
		ContentLength       int64
		TransferEncoding    []string
		Close, Uncompressed bool
		Trailer             http.Header
		Body                string
		BodyErr, Rest       string
		NoBody              bool
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	g := view{got.Status, got.StatusCode, got.Proto, got.ProtoMajor, got.ProtoMinor, got.Header, got.ContentLength,
		got.TransferEncoding, got.Close, got.Uncompressed, got.Trailer, string(gotBody), errText(gotErr), string(gotRest), got.Body == http.NoBody}
	w := view{want.Status, want.StatusCode, want.Proto, want.ProtoMajor, want.ProtoMinor, want.Header, want.ContentLength,
		want.TransferEncoding, want.Close, want.Uncompressed, want.Trailer, string(wantBody), errText(wantErr), string(wantRest), want.Body == http.NoBody}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%q (%s):\n h1       %+v\n net/http %+v", data, method, g, w)
	}
}

func TestReadResponseSeeds(t *testing.T) {
	taken := 0
	for _, s := range responseSeeds {
		for _, m := range []string{"GET", "HEAD"} {
			checkResponse(t, []byte(s), m)
		}
		if _, ok := ReadResponse(bufio.NewReader(strings.NewReader(s)), nil); ok {
			taken++
		}
	}
	if taken < 5 {
		t.Errorf("only %d seeds taken: the plain shape is not being read", taken)
	}
}

// FuzzReadResponse: on any bytes, ReadResponse reads an answer exactly
// as http.ReadResponse does, or leaves it to it untouched.
func FuzzReadResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		checkResponse(t, data, method)
	})
}

// BenchmarkReadResponse compares ReadResponse with http.ReadResponse
// on a typical upstream answer (head and body read).
func BenchmarkReadResponse(b *testing.B) {
	data := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 12:00:00 GMT\r\n" +
		"Content-Length: 68\r\nX-Request-Id: 0123456789abcdef\r\n\r\n" +
		`{"id":42,"name":"dubbogw","tags":["gateway","proxy"],"active":true}`)
	req := &http.Request{Method: "GET"}
	for _, bc := range []struct {
		name string
		read func(br *bufio.Reader) *http.Response
	}{
		{"h1", func(br *bufio.Reader) *http.Response {
			res, ok := ReadResponse(br, req)
			if !ok {
				b.Fatal("not taken")
			}
			return res
		}},
		{"net-http", func(br *bufio.Reader) *http.Response {
			res, err := http.ReadResponse(br, req)
			if err != nil {
				b.Fatal(err)
			}
			return res
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := bytes.NewReader(data)
			br := bufio.NewReaderSize(r, 4096)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(data)
				br.Reset(r)
				res := bc.read(br)
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
}

// wrote is what a server reads of a written request.
type wrote struct {
	Err        bool
	ParseErr   string // what a server refuses, it refuses in both
	Method     string
	RequestURI string
	Host       string
	Header     http.Header
	Length     int64
	Close      bool
	Body       string
}

func readWritten(t *testing.T, data []byte, werr error) wrote {
	t.Helper()
	if werr != nil {
		return wrote{Err: true}
	}
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		return wrote{ParseErr: err.Error()}
	}
	b, _ := io.ReadAll(r.Body)
	return wrote{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host, Header: r.Header, Length: r.ContentLength, Close: r.Close, Body: string(b)}
}

// checkWrite writes a request made by mk with WriteRequest and with
// req.Write (each from a fresh request) and compares what a server
// reads of each.
func checkWrite(t *testing.T, mk func() *http.Request) {
	t.Helper()
	var got bytes.Buffer
	bw := bufio.NewWriter(&got)
	ok, gerr := WriteRequest(bw, mk())
	_ = bw.Flush()
	if !ok {
		if got.Len() != 0 {
			t.Fatalf("not taken, but %q written", got.Bytes())
		}
		return
	}
	var want bytes.Buffer
	werr := mk().Write(&want)
	g, w := readWritten(t, got.Bytes(), gerr), readWritten(t, want.Bytes(), werr)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("WriteRequest wrote %q (err %v)\n read %+v\nreq.Write wrote %q (err %v)\n read %+v", got.Bytes(), gerr, g, want.Bytes(), werr, w)
	}
}

func newRequest(method, target, host string, header http.Header, body string, length int64, close bool) func() *http.Request {
	return func() *http.Request {
		r, err := http.NewRequest(method, target, nil)
		if err != nil {
			return &http.Request{Method: method, URL: nil}
		}
		r.Host = host
		r.Header = header.Clone()
		if body != "" || length > 0 {
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = length
		}
		r.Close = close
		return r
	}
}

func TestWriteRequestMatches(t *testing.T) {
	h := http.Header{"Accept": {"*/*"}, "X-Multi": {"a", "b"}, "X-Request-Id": {"0123"}}
	cases := []func() *http.Request{
		newRequest("GET", "http://up.test/items/42?x=1", "", h, "", 0, false),
		newRequest("GET", "http://up.test", "", nil, "", 0, false),
		newRequest("GET", "http://up.test/a%2Fb?", "", nil, "", 0, false),
		newRequest("POST", "http://up.test/p", "api.test", h, "hello", 5, false),
		newRequest("POST", "http://up.test/p", "", nil, "", 0, false),
		newRequest("PUT", "http://up.test/p", "", nil, "", 0, true),
		newRequest("DELETE", "http://up.test/p", "", http.Header{"Connection": {"close"}}, "", 0, true),
		newRequest("POST", "http://up.test/p", "", nil, "hello", 3, false),
		newRequest("POST", "http://up.test/p", "", nil, "hi", 5, false),
		newRequest("GET", "http://up.test/", "", http.Header{"User-Agent": {""}}, "", 0, false),
		newRequest("GET", "http://up.test/", "", http.Header{"User-Agent": {" ua/1 ", "second"}}, "", 0, false),
		newRequest("GET", "http://up.test/", "", http.Header{"User-Agent": {}}, "", 0, false),
		newRequest("GET", "http://up.test/", "", http.Header{"X-Evil": {"a\r\nX-Injected: 1"}, "Bad Name": {"v"}, "host": {"other"}}, "", 0, false),
		newRequest("GET", "http://up.test/", "", http.Header{"X-Pad": {"  \tv \t"}}, "", 0, false),
		newRequest("GET", "http://[fe80::1%25eth0]:80/", "", nil, "", 0, false),
		newRequest("GET", "http://bücher.test/", "", nil, "", 0, false),
		newRequest("GET", "http://up.test/", "bad host", nil, "", 0, false),
	}
	for _, mk := range cases {
		checkWrite(t, mk)
	}
}

// FuzzWriteRequest: for any method, target, field and body, what a
// server reads of WriteRequest's bytes is what it reads of req.Write's.
func FuzzWriteRequest(f *testing.F) {
	f.Add("GET", "/items/42?x=1", "up.test", "X-A", "v", "", int64(0), false)
	f.Add("POST", "/p", "api.test:8080", "User-Agent", "ua", "hello", int64(5), true)
	f.Add("PATCH", "/%2F?", "h", "Connection", "close", "x", int64(2), true)
	f.Fuzz(func(t *testing.T, method, target, host, key, value, body string, length int64, close bool) {
		if !validMethodString(method) || length < 0 || length > 1<<20 {
			return
		}
		checkWrite(t, newRequest(method, "http://up.test"+target, host, http.Header{key: {value}}, body, length, close))
	})
}

func validMethodString(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if !validFieldByte(m[i]) {
			return false
		}
	}
	return true
}
