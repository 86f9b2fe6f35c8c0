package h1

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves HTTP/1.1 on net.Conns with its own loop: one goroutine
// per connection reads request heads out of a reused buffer (Parse), and
// answers are written through a buffer that is flushed once per
// response, or once for a run of pipelined requests. Handlers get the
// standard http.ResponseWriter and *http.Request: everything written for
// net/http runs on it unchanged.
//
// It keeps what net/http's server guarantees and the gateway relies on:
// the same requests accepted and refused (Parse), a header limit (431),
// a header deadline, an idle deadline, a write deadline set as each
// request is read, the request's context cancelled when the client
// leaves, Expect: 100-continue, a panic closing only its connection,
// Hijack, Flush, per-request read and write deadlines
// (http.ResponseController), connection states for the drain
// (ConnState), and Shutdown's graceful close. Connections that open with
// HTTP/2's preface go whole to H2C, a net/http server.
//
// With TLSConfig, every connection is TLS: its handshake runs on the
// connection's goroutine under net/http's handshake deadline, a client
// that speaks plain HTTP to it gets net/http's 400, and a connection that
// negotiates h2 (ALPN) goes whole to H2, a net/http server.
type Server struct {
	Handler           http.Handler
	ReadHeaderTimeout time.Duration // 0: none
	WriteTimeout      time.Duration // set as each request's head is read; 0: none
	IdleTimeout       time.Duration // between requests; 0: ReadHeaderTimeout
	// MaxHeaderBytes bounds a request head; as net/http's server, 4096
	// bytes more are read before it answers 431. 0: 1 MiB.
	MaxHeaderBytes int
	ConnState      func(net.Conn, http.ConnState)
	// H2C serves connections that open with HTTP/2's preface (h2c with
	// prior knowledge), handed over with the bytes read so far. nil: the
	// preface is handed to Handler, as net/http without HTTP/2 does.
	H2C *http.Server
	// TLSConfig makes every connection TLS (nil: plain). Its NextProtos
	// are what ALPN offers.
	TLSConfig *tls.Config
	// H2 serves the TLS connections that negotiate h2, handed over after
	// the handshake. It must have the same TLSConfig (net/http offers
	// HTTP/2 on a listener only if its TLSConfig lists h2).
	H2 *http.Server
	// TLSHandshakeFailed is told of each failed handshake (nil: logged at
	// debug level: clients choose how many fail).
	TLSHandshakeFailed func(remote string, err error)
	Log                *slog.Logger

	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	conns      map[*conn]struct{}
	inShutdown atomic.Bool
	handoffs   map[*http.Server]*handoffListener // H2C's, H2's: made on first use
	bg         sync.WaitGroup                    // their Serve
	dates      atomic.Pointer[dateCache]
}

// defaultMaxHeaderBytes is net/http's DefaultMaxHeaderBytes.
const defaultMaxHeaderBytes = 1 << 20

// readBufferSize is each connection's read buffer: a head that fits is
// parsed where it was read.
const readBufferSize = 4096

// writeBufferSize is each connection's write buffer.
const writeBufferSize = 4096

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = http.ErrServerClosed

// Serve accepts connections on ln and serves each on its own goroutine,
// until ln fails or the server is shut down (ErrServerClosed).
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(&ln, true) {
		return ErrServerClosed
	}
	defer s.track(&ln, false)
	var delay time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return ErrServerClosed
			}
			if temporary(err) {
				// Out of descriptors (EMFILE), a connection reset before
				// it was accepted and the like: wait and go on, as
				// net/http does; never stop serving for them.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logger().Warn("accept failed; retrying", "error", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		if s.TLSConfig != nil {
			// Wrapped before it is tracked, so that ConnState sees one
			// connection from StateNew on; the handshake runs in serve.
			rwc = tls.Server(rwc, s.TLSConfig)
		}
		c := s.newConn(rwc)
		if c == nil {
			continue // shutting down: closed
		}
		go c.serve() // owned by the connection: ends when it closes, or by Close
	}
}

// temporary reports whether an Accept error passes (net/http's test:
// the error's Temporary method, which syscall.Errno has for EMFILE,
// ENFILE, ECONNABORTED and the like).
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// track adds or removes a listener; false once shutting down.
func (s *Server) track(ln *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.listeners, ln)
		return true
	}
	if s.inShutdown.Load() {
		return false
	}
	if s.listeners == nil {
		s.listeners = make(map[*net.Listener]struct{})
	}
	s.listeners[ln] = struct{}{}
	return true
}

// newConn registers a new connection, nil (and closes it) when shutting down.
func (s *Server) newConn(rwc net.Conn) *conn {
	c := &conn{s: s, rwc: rwc}
	s.mu.Lock()
	if s.inShutdown.Load() {
		s.mu.Unlock()
		_ = rwc.Close()
		return nil
	}
	if s.conns == nil {
		s.conns = make(map[*conn]struct{})
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	c.setState(http.StateNew)
	return c
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// handoff hands an HTTP/2 connection to srv (H2C or H2), starting its
// Serve on the first.
func (s *Server) handoff(srv *http.Server, c net.Conn) bool {
	s.mu.Lock()
	if s.inShutdown.Load() {
		s.mu.Unlock()
		return false
	}
	h := s.handoffs[srv]
	if h == nil {
		if s.handoffs == nil {
			s.handoffs = make(map[*http.Server]*handoffListener, 2)
		}
		h = newHandoffListener(c.LocalAddr())
		s.handoffs[srv] = h
		s.bg.Add(1)
		go func() { // owned by the server: Shutdown and Close end it
			defer s.bg.Done()
			_ = srv.Serve(h)
		}()
	}
	s.mu.Unlock()
	return h.give(c)
}

// Shutdown stops accepting, closes idle connections as they turn idle
// and waits for the others to finish their exchange, until ctx ends
// (its error). Every response from now on closes its connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.inShutdown.Store(true)
	s.mu.Lock()
	s.closeListeners()
	handoffs := maps.Clone(s.handoffs)
	s.mu.Unlock()
	// The HTTP/2 servers drain beside the loop's connections.
	var h2 sync.WaitGroup
	h2errs := make([]error, 0, len(handoffs))
	var h2mu sync.Mutex
	for srv := range handoffs {
		h2.Go(func() {
			err := srv.Shutdown(ctx)
			h2mu.Lock()
			h2errs = append(h2errs, err)
			h2mu.Unlock()
		})
	}
	poll := time.Millisecond
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for !s.closeIdle() {
		select {
		case <-ctx.Done():
			h2.Wait()
			return ctx.Err()
		case <-timer.C:
			poll = min(2*poll, 500*time.Millisecond)
			timer.Reset(poll)
		}
	}
	h2.Wait()
	for _, h := range handoffs {
		h.close()
	}
	s.bg.Wait()
	return errors.Join(h2errs...)
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.inShutdown.Store(true)
	s.mu.Lock()
	s.closeListeners()
	for c := range s.conns {
		_ = c.rwc.Close()
	}
	handoffs := maps.Clone(s.handoffs)
	s.mu.Unlock()
	var errs []error
	for srv, h := range handoffs {
		errs = append(errs, srv.Close())
		h.close()
	}
	s.bg.Wait()
	return errors.Join(errs...)
}

func (s *Server) closeListeners() {
	for ln := range s.listeners {
		_ = (*ln).Close()
	}
}

// closeIdle closes the idle connections, and new ones that have sent
// nothing for 5 s (as net/http's Shutdown); true when none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	quiet := true
	for c := range s.conns {
		st, since := c.getState()
		if st == http.StateNew && time.Since(since) > 5*time.Second {
			st = http.StateIdle
		}
		if st != http.StateIdle || !c.closeIfIdle() {
			quiet = false
		}
	}
	return quiet
}

// conn is one client connection and its loop's state.
type conn struct {
	s      *Server
	rwc    net.Conn
	remote string
	cr     connReader
	br     *bufio.Reader
	bw     *bufio.Writer
	head   Head
	big    []byte                     // a head larger than br's buffer, gathered line by line
	held   [bufferBeforeChunking]byte // an answer's body held before its head (response.held)
	// afterPost: the last request was a POST (see readHead).
	afterPost bool
	served    int                  // requests served on the connection
	tls       *tls.ConnectionState // after the handshake; every request's TLS

	stateMu sync.Mutex // state and closing, for Shutdown's closeIdle
	state   http.ConnState
	since   time.Time
	closed  bool

	ctx context.Context // the connection's: values for handlers
}

func (c *conn) setState(st http.ConnState) {
	c.stateMu.Lock()
	c.state, c.since = st, time.Now()
	c.stateMu.Unlock()
	if hook := c.s.ConnState; hook != nil {
		hook(c.rwc, st)
	}
}

func (c *conn) getState() (http.ConnState, time.Time) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.state, c.since
}

// closeIfIdle closes the connection if it is still idle: a connection
// that turned active since its state was read keeps its request.
func (c *conn) closeIfIdle() bool {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if c.state != http.StateIdle && c.state != http.StateNew {
		return false
	}
	if !c.closed {
		c.closed = true
		_ = c.rwc.Close()
	}
	return true
}

// activate turns the connection active unless Shutdown closed it while
// idle: then false, and the bytes that arrived are not served.
func (c *conn) activate() bool {
	c.stateMu.Lock()
	if c.closed {
		c.stateMu.Unlock()
		return false
	}
	c.state, c.since = http.StateActive, time.Now()
	c.stateMu.Unlock()
	if hook := c.s.ConnState; hook != nil {
		hook(c.rwc, http.StateActive)
	}
	return true
}

// serve runs the connection's loop: read a head, serve it, repeat.
func (c *conn) serve() {
	s := c.s
	c.remote = c.rwc.RemoteAddr().String()
	c.cr.c = c
	c.cr.cond.L = &c.cr.mu
	c.br = bufio.NewReaderSize(&c.cr, readBufferSize)
	c.bw = bufio.NewWriterSize(c.rwc, writeBufferSize)
	ctx := context.WithValue(context.Background(), http.ServerContextKey, s.H2C)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.rwc.LocalAddr())
	c.ctx = ctx // no cancel of its own: each request's is cancelled when its client leaves
	hijacked := false
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			s.logger().Error("panic serving a connection", "remote", c.remote, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
		c.cr.disarm()
		if hijacked {
			return
		}
		c.stateMu.Lock()
		c.closed = true
		c.stateMu.Unlock()
		_ = c.rwc.Close()
		c.setState(http.StateClosed)
		s.forget(c)
	}()

	if tc, ok := c.rwc.(*tls.Conn); ok {
		if !c.handshake(tc) {
			return
		}
		if c.tls.NegotiatedProtocol == "h2" && s.H2 != nil {
			hijacked = c.handOff(s.H2, tc)
			return
		}
	}

	first := true
	for {
		if !first {
			if !c.awaitRequest() {
				return
			}
		} else if s.ReadHeaderTimeout > 0 {
			_ = c.rwc.SetReadDeadline(time.Now().Add(s.ReadHeaderTimeout))
		}
		first = false
		n, status, err := c.readHead()
		if err != nil {
			if status != 0 {
				c.refuse(status, err)
			}
			return
		}
		if c.head.H2Preface && s.H2C != nil && c.tls == nil {
			hijacked = c.handOff(s.H2C, &prefixConn{Conn: c.rwc, br: c.br, prefix: c.big})
			return
		}
		r := &response{}
		keep := c.serveOne(r, n)
		c.afterPost = r.reqValue.Method == http.MethodPost
		c.served++
		if r.hijacked {
			hijacked = true
			return
		}
		if !keep || s.inShutdown.Load() {
			_ = c.bw.Flush()
			if r.bodyLeft {
				// Unread body bytes would turn the close into a reset
				// that can discard the answer: close the write side and
				// give the client time to read it, as net/http does.
				c.closeWrite()
			}
			return
		}
		if c.br.Buffered() == 0 || !c.headBuffered() {
			// Nothing pipelined waits: the answer goes now. (Answers to
			// pipelined requests already read go out together.)
			if c.bw.Flush() != nil {
				return
			}
		}
		c.shrink()
		c.setState(http.StateIdle)
	}
}

// keepBytes bounds what an idle connection keeps of the buffers a large
// head grew (its copy, the line-by-line gathering, the field list): a
// client that sends one 64 KiB head per connection must not make every
// connection hold that much while idle.
const keepBytes = 8 << 10

// shrink lets go of buffers a large head grew.
func (c *conn) shrink() {
	if cap(c.big) > keepBytes {
		c.big = nil
	}
	if cap(c.head.buf) > keepBytes {
		c.head.buf = nil
	}
	if cap(c.head.Fields) > keepBytes/64 {
		c.head.Fields = nil
	}
}

// awaitRequest waits for the next request's first byte within the idle
// timeout, then arms the header deadline; false: the connection ends.
func (c *conn) awaitRequest() bool {
	s := c.s
	if c.br.Buffered() < 4 {
		idle := s.IdleTimeout
		if idle == 0 {
			idle = s.ReadHeaderTimeout
		}
		if idle > 0 {
			_ = c.rwc.SetReadDeadline(time.Now().Add(idle))
		} else {
			_ = c.rwc.SetReadDeadline(time.Time{})
		}
		// net/http waits for 4 bytes here: fewer, and the connection
		// ends without an answer. Answers held back for a pipelined
		// request go out before any wait.
		if c.bw.Flush() != nil {
			return false
		}
		if _, err := c.br.Peek(4); err != nil {
			return false
		}
	}
	if c.headBuffered() {
		// The whole head is read already: reading it needs no deadline,
		// and the idle one stays until serveOne sets the body's (or
		// none: a request without a body reads nothing more). One timer
		// update per request, not three.
		return true
	}
	if s.ReadHeaderTimeout > 0 {
		_ = c.rwc.SetReadDeadline(time.Now().Add(s.ReadHeaderTimeout))
	} else {
		_ = c.rwc.SetReadDeadline(time.Time{})
	}
	return true
}

// headBuffered reports whether a whole request head waits in the buffer.
func (c *conn) headBuffered() bool {
	b, _ := c.br.Peek(c.br.Buffered())
	return headEnd(skipLeadingCRLF(b)) >= 0
}

// skipLeadingCRLF drops the CR/LF net/http skips before a request line
// (what a client may send after a POST's body).
func skipLeadingCRLF(b []byte) []byte {
	for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// errHeadTooLarge is a head beyond MaxHeaderBytes (431).
var errHeadTooLarge = errors.New("h1: request head too large")

// readHead reads and parses the next head into c.head and returns the
// bytes it took in br (0 when gathered in c.big, already consumed).
// status is what to answer a refused head with (0: close quietly).
func (c *conn) readHead() (n, status int, err error) {
	limit := c.s.MaxHeaderBytes
	if limit <= 0 {
		limit = defaultMaxHeaderBytes
	}
	limit += 4096 // net/http's slack
	active, lineChecked := false, false
	skipped := 0
	for {
		_, perr := c.br.Peek(1)
		data, _ := c.br.Peek(c.br.Buffered())
		if len(data) > 0 && !active {
			if !c.activate() {
				return 0, 0, net.ErrClosed
			}
			active = true
		}
		// The CR/LF an old client may send after a POST's body: net/http
		// skips up to 4 such bytes after a POST.
		for c.afterPost && skipped < 4 && len(data) > 0 && (data[0] == '\r' || data[0] == '\n') {
			_, _ = c.br.Discard(1)
			data = data[1:]
			skipped++
		}
		if len(data) > 0 {
			n, err := c.head.Parse(data)
			if err == nil {
				return n, 0, nil
			}
			if err != ErrIncomplete {
				return 0, err.(*Error).Status, err
			}
			// net/http refuses a bad request line before it reads a
			// field: so does the loop, once the line is whole.
			if !lineChecked && bytes.IndexByte(data, '\n') >= 0 {
				lineChecked = true
				if err := CheckRequestLine(data); err != nil {
					return 0, err.(*Error).Status, err
				}
			}
			if len(data)+skipped > limit {
				return 0, http.StatusRequestHeaderFieldsTooLarge, errHeadTooLarge
			}
			if c.br.Buffered() == c.br.Size() {
				return c.readBigHead(limit - skipped)
			}
		}
		if perr != nil {
			return 0, c.endedMidHead(perr, len(data)), perr
		}
		// Wait for more: Peek one byte past what is buffered, answers
		// held back for this request sent first.
		if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
			return 0, 0, net.ErrClosed
		}
		if _, perr = c.br.Peek(c.br.Buffered() + 1); perr != nil && !errors.Is(perr, bufio.ErrBufferFull) {
			return 0, c.endedMidHead(perr, c.br.Buffered()), perr
		}
	}
}

// endedMidHead is the answer to a stream that failed with err after
// buffered bytes of a head (counted after the CR/LF skipped after a
// POST), as net/http's server gives it: the header deadline or a read
// error end the connection without one (0), and so does the client
// closing its side before any byte; after part of a head it is 400.
// (On a kept-alive connection fewer than 4 bytes end it silently before
// this: awaitRequest's Peek(4), as net/http's.)
func (c *conn) endedMidHead(err error, buffered int) int {
	if !errors.Is(err, io.EOF) || buffered == 0 {
		return 0
	}
	return http.StatusBadRequest
}

// readBigHead gathers a head larger than the read buffer line by line
// into c.big, up to limit bytes.
func (c *conn) readBigHead(limit int) (n, status int, err error) {
	c.big = c.big[:0]
	start := 0 // where the line being gathered starts
	for {
		line, err := c.br.ReadSlice('\n')
		c.big = append(c.big, line...)
		if len(c.big) > limit {
			return 0, http.StatusRequestHeaderFieldsTooLarge, errHeadTooLarge
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue // the same line goes on
		case err != nil:
			return 0, c.endedMidHead(err, len(c.big)), err
		}
		// A whole line: each is looked at once, so a head of many lines
		// costs its length, not its length times its lines.
		whole := c.big[start:]
		first := start == 0
		start = len(c.big)
		if first {
			if err := CheckRequestLine(c.big); err != nil {
				return 0, err.(*Error).Status, err
			}
			continue
		}
		if len(whole) > 2 || len(whole) == 2 && whole[0] != '\r' {
			continue // not the empty line that ends the head
		}
		_, perr := c.head.Parse(c.big)
		if perr != nil {
			return 0, perr.(*Error).Status, perr
		}
		return 0, 0, nil
	}
}

// refuse answers a head that was refused as net/http's server does,
// byte for byte, and the connection then closes.
func (c *conn) refuse(status int, err error) {
	const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	var answer string
	var e *Error
	errors.As(err, &e)
	switch {
	case status == http.StatusRequestHeaderFieldsTooLarge:
		const publicErr = "431 Request Header Fields Too Large"
		answer = "HTTP/1.1 " + publicErr + errorHeaders + publicErr
	case status == http.StatusNotImplemented:
		answer = "HTTP/1.1 501 Not Implemented" + errorHeaders + "Unsupported transfer encoding"
	case e != nil && publicReason(e.Reason):
		publicErr := statusLine(status) + ": " + e.Reason
		answer = "HTTP/1.1 " + publicErr + errorHeaders + publicErr
	default:
		const publicErr = "400 Bad Request"
		answer = "HTTP/1.1 " + publicErr + errorHeaders + publicErr
	}
	_ = c.rwc.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	_, _ = c.bw.WriteString(answer)
	_ = c.bw.Flush()
	if status == http.StatusRequestHeaderFieldsTooLarge {
		c.closeWrite() // the client may still be sending: let it read the answer
	}
}

// refuseWriteTimeout bounds writing a refusal.
const refuseWriteTimeout = 5 * time.Second

// publicReason: net/http tells the client why (its statusError), for
// these reasons only.
func publicReason(reason string) bool {
	switch reason {
	case "missing required Host header", "malformed Host header", "invalid header name", "invalid header value", "unsupported protocol version":
		return true
	}
	return false
}

// closeWrite half-closes a TCP connection and lets the client read the
// last answer before the close (net/http's closeWriteAndWait).
func (c *conn) closeWrite() {
	if tc, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	time.Sleep(rstAvoidanceDelay)
}

// rstAvoidanceDelay is net/http's: time for the client to read what
// was sent before the close, so its unread bytes do not turn the close
// into a reset that discards the answer.
const rstAvoidanceDelay = 500 * time.Millisecond

// handOff gives the connection, as nc (with the bytes read so far, if
// any), to srv.
func (c *conn) handOff(srv *http.Server, nc net.Conn) bool {
	_ = c.rwc.SetReadDeadline(time.Time{})
	c.s.forget(c)
	c.setState(http.StateHijacked)
	if !c.s.handoff(srv, nc) {
		_ = c.rwc.Close()
	}
	return true
}

// handshake runs the TLS handshake under net/http's deadline (the
// shortest of the header and write timeouts). A failure is reported to
// TLSHandshakeFailed; a client that spoke plain HTTP gets net/http's 400.
func (c *conn) handshake(tc *tls.Conn) bool {
	s := c.s
	var timeout time.Duration
	for _, d := range [...]time.Duration{s.ReadHeaderTimeout, s.WriteTimeout} {
		if d > 0 && (timeout == 0 || d < timeout) {
			timeout = d
		}
	}
	if timeout > 0 {
		_ = tc.SetDeadline(time.Now().Add(timeout))
	}
	err := tc.HandshakeContext(context.Background())
	if err != nil {
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			err = errors.New("client sent an HTTP request to an HTTPS server")
		}
		if s.TLSHandshakeFailed != nil {
			s.TLSHandshakeFailed(c.remote, err)
		} else {
			s.logger().Debug("TLS handshake failed", "remote", c.remote, "error", err)
		}
		return false
	}
	_ = tc.SetDeadline(time.Time{}) // the loop sets its own from here
	st := tc.ConnectionState()
	c.tls = &st
	return true
}

// looksLikeHTTP reports whether a TLS record header is the start of a
// plain HTTP request (net/http's test).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// prefixConn replays what was read before a handoff, then reads on.
type prefixConn struct {
	net.Conn
	prefix []byte
	br     *bufio.Reader
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	if p.br != nil {
		if p.br.Buffered() > 0 {
			return p.br.Read(b)
		}
		p.br = nil
	}
	return p.Conn.Read(b)
}

// handoffListener is the H2C server's listener: the loop gives it the
// connections that speak HTTP/2.
type handoffListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	local net.Addr
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{conns: make(chan net.Conn), done: make(chan struct{}), local: addr}
}

func (h *handoffListener) give(c net.Conn) bool {
	select {
	case h.conns <- c:
		return true
	case <-h.done:
		return false
	}
}

func (h *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

// Close is called by the H2C server's Shutdown: handoffs stop then.
func (h *handoffListener) Close() error {
	h.close()
	return nil
}

func (h *handoffListener) close() { h.once.Do(func() { close(h.done) }) }

func (h *handoffListener) Addr() net.Addr { return h.local }

// connReader sits under the connection's bufio.Reader. While a handler
// runs with the request's body read, it watches the connection for the
// client leaving, which cancels the request's context (so a request
// whose client left stops holding its slot), as net/http's connReader
// does, with one difference: the watch (a read of one byte in the
// background; a byte that arrives, a pipelined request, is kept) starts
// only once the handler has run for watchAfter. Most requests end
// sooner and never pay the goroutine and the system call it costs;
// one whose client left is cancelled at most watchAfter late.
type connReader struct {
	c       *conn
	mu      sync.Mutex
	cond    sync.Cond
	inRead  bool
	aborted bool
	hasByte bool
	byteBuf [1]byte
	ctx     *requestCtx // the current request's context, cancelled when the client leaves
	armed   bool        // the watch may start (between arm and disarm)
	timer   *time.Timer // starts the watch; made on first use
}

// watchAfter is how long a handler runs before its connection is
// watched for the client leaving.
const watchAfter = 5 * time.Millisecond

// arm starts the watch after watchAfter, unless disarmed first.
func (cr *connReader) arm() {
	cr.mu.Lock()
	cr.armed = true
	cr.mu.Unlock()
	if cr.timer == nil {
		cr.timer = time.AfterFunc(watchAfter, cr.watch)
		return
	}
	cr.timer.Reset(watchAfter)
}

// disarm ends the watch, or keeps it from starting, and waits until no
// read is pending.
func (cr *connReader) disarm() {
	cr.mu.Lock()
	cr.armed = false
	cr.mu.Unlock()
	if cr.timer != nil {
		cr.timer.Stop()
	}
	cr.abortPendingRead()
}

func (cr *connReader) Read(p []byte) (int, error) {
	cr.mu.Lock()
	if cr.inRead {
		cr.mu.Unlock()
		return 0, errors.New("h1: concurrent read on a connection")
	}
	if len(p) == 0 {
		cr.mu.Unlock()
		return 0, nil
	}
	if cr.hasByte {
		p[0] = cr.byteBuf[0]
		cr.hasByte = false
		cr.mu.Unlock()
		return 1, nil
	}
	cr.inRead = true
	cr.mu.Unlock()
	n, err := cr.c.rwc.Read(p)
	cr.mu.Lock()
	cr.inRead = false
	if err != nil && cr.ctx != nil {
		cr.ctx.cancel() // the client left, or its read failed: the request ends
	}
	cr.mu.Unlock()
	cr.cond.Broadcast()
	return n, err
}

// watch reads in the background (on the timer's goroutine) to see the
// client leave, if still armed.
func (cr *connReader) watch() {
	cr.mu.Lock()
	if !cr.armed || cr.inRead || cr.hasByte {
		cr.mu.Unlock()
		return
	}
	cr.inRead = true
	_ = cr.c.rwc.SetReadDeadline(time.Time{})
	cr.mu.Unlock()
	cr.backgroundRead()
}

func (cr *connReader) backgroundRead() {
	n, err := cr.c.rwc.Read(cr.byteBuf[:])
	cr.mu.Lock()
	if n == 1 {
		cr.hasByte = true
	}
	var ne net.Error
	if errors.As(err, &ne) && cr.aborted && ne.Timeout() {
		// Ended by abortPendingRead: not an error.
	} else if err != nil && cr.ctx != nil {
		cr.ctx.cancel()
	}
	cr.aborted, cr.inRead = false, false
	cr.mu.Unlock()
	cr.cond.Broadcast()
}

// aLongTimeAgo is a deadline that has passed: it wakes a pending read.
var aLongTimeAgo = time.Unix(1, 0)

// abortPendingRead ends a background read and waits for it (disarm).
func (cr *connReader) abortPendingRead() {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if !cr.inRead {
		return
	}
	cr.aborted = true
	_ = cr.c.rwc.SetReadDeadline(aLongTimeAgo)
	for cr.inRead {
		cr.cond.Wait()
	}
	_ = cr.c.rwc.SetReadDeadline(time.Time{})
}

func (cr *connReader) setCtx(ctx *requestCtx) {
	cr.mu.Lock()
	cr.ctx = ctx
	cr.mu.Unlock()
}

// discardLimit is how much of a body the handler left unread is read
// and dropped to keep the connection (net/http's maxPostHandlerReadBytes);
// beyond, the connection closes.
const discardLimit = 256 << 10
