package h1

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testcert"
)

// testCertificate is a certificate for localhost from a new CA.
func testCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	return testcert.NewCA(t, "h1 test CA").Server(t, time.Now().Add(time.Hour), "localhost").Pair(t)
}

// tlsHandler answers what the TLS state of the request is, then as testHandler.
func tlsHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/tls" {
		if r.TLS == nil {
			io.WriteString(w, "no TLS")
			return
		}
		fmt.Fprintf(w, "%s TLS %x %s resumed=%v", r.Proto, r.TLS.Version, r.TLS.ServerName, r.TLS.DidResume)
		return
	}
	testHandler(w, r)
}

// TestServerMatchesNetHTTPOverTLS runs the differential exchanges, and
// one that reads the request's TLS state, over TLS against net/http's
// ServeTLS: the loop's answers on a TLS connection are net/http's.
func TestServerMatchesNetHTTPOverTLS(t *testing.T) {
	cfg := &tls.Config{Certificates: []tls.Certificate{testCertificate(t)}, NextProtos: []string{"http/1.1"}}
	h := http.HandlerFunc(tlsHandler)

	refLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ref := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10, TLSConfig: cfg.Clone()}
	go func() { _ = ref.ServeTLS(refLn, "", "") }()
	t.Cleanup(func() { _ = ref.Close() })
	ours := startLoop(t, &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10, TLSConfig: cfg.Clone()})

	dialer := func(addr string) func() (net.Conn, error) {
		return func() (net.Conn, error) {
			return tls.Dial("tcp", addr, &tls.Config{ServerName: "localhost", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		}
	}
	all := append([]string{"GET /tls HTTP/1.1\r\nHost: x\r\n\r\n"}, exchanges...)
	want := compareExchanges(t, all, dialer(refLn.Addr().String()), dialer(ours))
	if len(want[0].answers) != 1 || !strings.Contains(fmt.Sprint(want[0].answers), "HTTP/1.1 TLS 304 localhost") {
		t.Fatalf("net/http's answer to /tls: %v", want[0].answers)
	}
}

// A TLS connection that negotiates h2 goes to H2; one that speaks plain
// HTTP gets net/http's 400; a failed or stalled handshake is reported
// and its connection closed at the handshake deadline.
func TestServerTLSHandshakes(t *testing.T) {
	cfg := &tls.Config{Certificates: []tls.Certificate{testCertificate(t)}, NextProtos: []string{"h2", "http/1.1"}}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	h := http.HandlerFunc(tlsHandler)
	h2 := &http.Server{Handler: h, TLSConfig: cfg, Protocols: protocols}
	// start serves with handshake deadline timeout; failed returns the
	// handshake failures reported so far.
	start := func(timeout time.Duration) (addr string, failed func() []error) {
		var mu sync.Mutex
		var failures []error
		s := &Server{Handler: h, ReadHeaderTimeout: timeout, TLSConfig: cfg.Clone(), H2: h2,
			TLSHandshakeFailed: func(remote string, err error) {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}}
		return startLoop(t, s), func() []error {
			mu.Lock()
			defer mu.Unlock()
			return append([]error(nil), failures...)
		}
	}
	addr, failed := start(5 * time.Second)

	for _, c := range []struct {
		h2   bool
		want string
	}{{false, "HTTP/1.1 TLS 304"}, {true, "HTTP/2.0 TLS 304"}} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: c.h2}
		if !c.h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/tls")
		if err != nil {
			t.Fatalf("h2=%v: %v", c.h2, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		tr.CloseIdleConnections()
		if !strings.HasPrefix(string(body), c.want) {
			t.Errorf("h2=%v: %q, want %q...", c.h2, body, c.want)
		}
	}
	if f := failed(); len(f) != 0 {
		t.Fatalf("handshakes failed: %v", f)
	}

	// Plain HTTP to the TLS port: net/http's answer, then the close.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	got, _ := io.ReadAll(c)
	c.Close()
	if want := "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"; string(got) != want {
		t.Errorf("plain HTTP got %q, want %q", got, want)
	}

	if f := failed(); len(f) != 1 || !strings.Contains(f[0].Error(), "HTTP request to an HTTPS server") {
		t.Errorf("failures reported: %v, want the plain request's", f)
	}

	// A client that connects and never says hello is closed at the
	// handshake deadline (the header timeout, short here: it is what is
	// tested, and nothing else is served).
	addr, failed = start(300 * time.Millisecond)
	c, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	began := time.Now()
	_, err = c.Read(make([]byte, 1))
	c.Close()
	if !errors.Is(err, io.EOF) || time.Since(began) > 5*time.Second {
		t.Errorf("a silent client: %v after %v, want EOF at the handshake deadline", err, time.Since(began))
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(failed()) < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var ne net.Error
	if f := failed(); len(f) != 1 || !(errors.As(f[0], &ne) && ne.Timeout()) {
		t.Errorf("failures reported: %v, want the silent client's timeout", f)
	}
}
