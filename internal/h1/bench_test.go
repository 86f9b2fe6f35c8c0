package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// benchServe sends b.N requests one after the other on one keep-alive
// connection to addr and reads each answer: the server's cost per
// request (with the client's, the same for both servers).
// benchServe sends requests on 64 keep-alive connections to addr, one
// at a time on each, and reads each answer: the server's cost per request
// (with the client's, the same for both servers).
func benchServe(b *testing.B, addr string) {
	req := []byte("GET /small HTTP/1.1\r\nHost: gw.test\r\nUser-Agent: bench\r\nAccept: */*\r\nX-Request-Id: 0123456789abcdef\r\n\r\n")
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for pb.Next() {
			if _, err := c.Write(req); err != nil {
				b.Error(err)
				return
			}
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
}

func benchHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "hello")
	})
}

// BenchmarkServeLoop and BenchmarkServeNetHTTP: the same handler and
// requests on each server (allocations include the client's).
func BenchmarkServeLoop(b *testing.B) {
	benchServe(b, startLoop(b, &Server{Handler: benchHandler(), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}))
}

func BenchmarkServeNetHTTP(b *testing.B) {
	benchServe(b, startNetHTTP(b, benchHandler()))
}
