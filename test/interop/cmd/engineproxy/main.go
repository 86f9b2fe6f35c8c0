// Command engineproxy is a bare HTTP/1.1 reverse proxy on one of three
// server engines, with nothing of the gateway around it (no routing, no
// filters, no limits, no defences): the bench harness measures each
// beside nginx (-engines) to tell what an engine allows on this machine
// before the gateway's data plane moves to one (issue 18). It is a
// yardstick, not a server to deploy.
//
//	engineproxy -engine nethttp|fasthttp|loop -upstream HOST:PORT [-listen 127.0.0.1:0] [-conns N]
//
// It prints "ready ADDR" once listening, and stops on SIGTERM.
//
//   - nethttp: net/http's server and httputil.ReverseProxy on a Transport
//     keeping -conns idle connections: the standard library's path.
//   - fasthttp: github.com/valyala/fasthttp's Server and HostClient.
//   - loop: a minimal loop of our own on net.Conn: each client connection
//     pinned to one upstream connection, request heads parsed in place,
//     bodies by Content-Length only, responses written through a buffer
//     flushed only when no pipelined request is waiting.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	engine := flag.String("engine", "loop", "nethttp, fasthttp or loop")
	upstream := flag.String("upstream", "", "upstream HOST:PORT (HTTP/1.1)")
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	conns := flag.Int("conns", 512, "upstream connections kept per engine")
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "engineproxy: -upstream is required")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "engineproxy: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var serve func() error
	switch *engine {
	case "nethttp":
		target := &url.URL{Scheme: "http", Host: *upstream}
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.Transport = &http.Transport{MaxIdleConnsPerHost: *conns, IdleConnTimeout: 90 * time.Second}
		srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
		serve = func() error { return srv.Serve(ln) }
		defer srv.Close()
	case "fasthttp":
		hc := &fasthttp.HostClient{Addr: *upstream, MaxConns: *conns}
		srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
			if err := hc.Do(&c.Request, &c.Response); err != nil {
				c.Error(err.Error(), fasthttp.StatusBadGateway)
			}
		}}
		serve = func() error { return srv.Serve(ln) }
		defer srv.Shutdown()
	case "loop":
		serve = func() error { return serveLoop(ln, *upstream) }
		defer ln.Close()
	default:
		fmt.Fprintf(os.Stderr, "engineproxy: -engine %q: want nethttp, fasthttp or loop\n", *engine)
		os.Exit(2)
	}
	served := make(chan error, 1)
	go func() { served <- serve() }() // owned here: the deferred close ends it
	fmt.Printf("ready %s\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintf(os.Stderr, "engineproxy: %v\n", err)
		os.Exit(1)
	}
}

// serveLoop accepts client connections, each served by proxyConn.
func serveLoop(ln net.Listener, upstream string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() { // owned by the connection: ends when either side closes
			defer c.Close()
			if err := proxyConn(c, upstream); err != nil && !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "engineproxy: %v\n", err)
			}
		}()
	}
}

// proxyConn forwards each request on c to one upstream connection and
// its response back, in order.
func proxyConn(c net.Conn, upstream string) error {
	up, err := net.Dial("tcp", upstream)
	if err != nil {
		return err
	}
	defer up.Close()
	cr, cw := bufio.NewReaderSize(c, 4096), bufio.NewWriterSize(c, 4096)
	ur, uw := bufio.NewReaderSize(up, 4096), bufio.NewWriterSize(up, 4096)
	for {
		if _, err := copyMessage(uw, cr); err != nil {
			return err
		}
		if err := uw.Flush(); err != nil {
			return err
		}
		if _, err := copyMessage(cw, ur); err != nil {
			return err
		}
		if cr.Buffered() == 0 { // nothing pipelined: the answer goes now
			if err := cw.Flush(); err != nil {
				return err
			}
		}
	}
}

// copyMessage copies one message's head and its Content-Length body from
// r to w, dropping Connection and Keep-Alive (a request's Host is kept).
// A message with Transfer-Encoding is refused: this yardstick reads
// Content-Length bodies only.
func copyMessage(w *bufio.Writer, r *bufio.Reader) (int64, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	w.Write(line)
	var length int64
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 && (len(line) == 1 || line[0] == '\r') {
			w.Write(line)
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("malformed header line %q", line)
		}
		switch {
		case asciiEqualFold(name, "content-length"):
			if length, err = strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64); err != nil || length < 0 {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "transfer-encoding"):
			return 0, errors.New("transfer-encoding is not read by this yardstick")
		case asciiEqualFold(name, "connection"), asciiEqualFold(name, "keep-alive"):
			continue
		}
		w.Write(line)
	}
	if length > 0 {
		if _, err := io.CopyN(w, r, length); err != nil {
			return 0, err
		}
	}
	return length, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
