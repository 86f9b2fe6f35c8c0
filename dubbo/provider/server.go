package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
)

// DefaultMaxInFlight is how many requests a Server runs at once before it
// refuses more, Java Dubbo's default thread pool size.
const DefaultMaxInFlight = 200

// Method is one overload of a service method. Func receives the arguments
// in the hessian value model (for generic calls, maps with a "class" key
// already realized into *hessian.Object) and returns the result the same
// way. An error becomes an exception response: a *hessian.Exception (see
// Exception) keeps its class, any other error is a
// java.lang.RuntimeException. Func must return once ctx is done.
type Method struct {
	ParamTypes []string // Java type names: "java.lang.String", "int", "com.example.demo.User", "long[]"
	Func       func(ctx context.Context, args []any) (any, error)
}

// Service is a Java interface served by Go functions.
type Service struct {
	Interface, Version, Group string
	Methods                   map[string][]Method // overloads: several Methods per name, told apart by ParamTypes
}

// Stats counts what a Server did, for tests.
type Stats struct {
	Requests    uint64 // calls answered or run (one-way), refused ones excluded
	Heartbeats  uint64 // heartbeat requests answered
	Rejected    uint64 // calls refused with StatusThreadpoolExhausted
	Accepted    uint64 // connections accepted
	Connections int    // connections open now
	InFlight    int    // calls running now
}

// Server is an in-process Dubbo provider. Register services, then Listen;
// Close stops it and every goroutine it started.
type Server struct {
	logger      *slog.Logger
	maxInFlight int
	maxPayload  int

	mu        sync.Mutex
	services  map[serviceKey]*service
	listeners []net.Listener
	// tripleServers serve Triple (ServeTriple) on some of listeners.
	tripleServers []*http.Server
	conns         map[*conn]struct{}
	closing       bool
	active        int           // calls running
	idle          chan struct{} // closed when active drops to 0 while Close waits

	sem     chan struct{} // a slot per running call, made by the first Listen
	baseCtx context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // every goroutine the server started

	eventID                                 atomic.Uint64
	requests, heartbeats, rejected, accepts atomic.Uint64
}

// NewServer returns a Server that logs to logger (nothing when nil).
func NewServer(logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		logger:      logger,
		maxInFlight: DefaultMaxInFlight,
		maxPayload:  protocol.DefaultMaxPayload,
		services:    make(map[serviceKey]*service),
		conns:       make(map[*conn]struct{}),
		baseCtx:     ctx,
		cancel:      cancel,
	}
}

// SetMaxInFlight sets how many calls may run at once (DefaultMaxInFlight
// unless set); it must be called before Listen.
func (s *Server) SetMaxInFlight(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 0 && s.sem == nil {
		s.maxInFlight = n
	}
}

// SetMaxPayload sets the largest frame body accepted and sent
// (protocol.DefaultMaxPayload unless set); it must be called before Listen.
func (s *Server) SetMaxPayload(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 0 && s.sem == nil {
		s.maxPayload = n
	}
}

// Register adds a service, replacing one with the same interface, version
// and group. It panics on a parameter type that is not a Java type name,
// like http.Handle on a bad pattern.
func (s *Server) Register(svc Service) {
	compiled, err := compileService(svc)
	if err != nil {
		panic("provider: registering " + svc.Interface + ": " + err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.services[compiled.key] = compiled
}

// Listen starts serving on addr ("127.0.0.1:0" picks a port) and returns
// the address bound. ctx bounds only the listen itself; the server serves
// until Close. Listen may be called again for more addresses.
func (s *Server) Listen(ctx context.Context, addr string) (net.Addr, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("provider: listening on %s: %w", addr, err)
	}
	return s.Serve(ln)
}

// Serve serves on ln (a TLS listener, say) until Close, which closes it,
// and returns its address. ln is closed at once when the server is
// closing.
func (s *Server) Serve(ln net.Listener) (net.Addr, error) {
	if err := s.addListener(ln, nil); err != nil {
		return nil, err
	}
	go s.accept(ln)
	s.logger.Info("in-process Dubbo provider listening", "addr", ln.Addr().String())
	return ln.Addr(), nil
}

// addListener records ln (and hs, the Triple server that serves it, if
// any) for Close, and counts the goroutine that will serve it; after
// Close it closes ln and fails instead. The first one sizes the calls'
// slots, which SetMaxInFlight no longer changes.
func (s *Server) addListener(ln net.Listener, hs *http.Server) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		ln.Close()
		return errors.New("provider: listen after Close")
	}
	if s.sem == nil {
		s.sem = make(chan struct{}, s.maxInFlight)
	}
	s.listeners = append(s.listeners, ln)
	if hs != nil {
		s.tripleServers = append(s.tripleServers, hs)
	}
	s.wg.Add(1)
	return nil
}

func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if !closing {
				s.logger.Error("provider: accept failed, no longer listening", "addr", ln.Addr().String(), "err", err)
			}
			return
		}
		s.accepts.Add(1)
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		go c.readLoop()
		go c.writeLoop()
	}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// startCall takes a slot for a call, or reports that all are busy.
func (s *Server) startCall() bool {
	select {
	case s.sem <- struct{}{}:
	default:
		return false
	}
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	return true
}

func (s *Server) endCall() {
	<-s.sem
	s.mu.Lock()
	s.active--
	if s.active == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
	s.mu.Unlock()
}

// Close stops accepting connections, sends the readonly event on every
// connection, waits until no call is running or ctx is done, then cancels
// the calls still running, flushes and closes the connections (at once if
// ctx is done), and returns once every goroutine the server started has
// ended (a Method's Func that ignores its ctx holds it up). The error is
// ctx's when calls were still running when it ended.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closing = true
	for _, ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	var idle chan struct{}
	if s.active > 0 {
		idle = make(chan struct{})
		s.idle = idle
	}
	s.mu.Unlock()

	for _, c := range conns {
		select { // a connection whose writer is stuck misses the event
		case c.out <- protocol.AppendReadonlyEvent(nil, s.eventID.Add(1)):
		case <-c.done:
		case <-ctx.Done():
		}
	}
	var err error
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			s.mu.Lock()
			running := s.active
			s.mu.Unlock()
			err = fmt.Errorf("provider: closing with %d calls still running: %w", running, ctx.Err())
		}
	}
	s.cancel()
	s.mu.Lock()
	triples := slices.Clone(s.tripleServers)
	s.mu.Unlock()
	for _, hs := range triples {
		// Its calls are over (or cancelled): GOAWAY, then the
		// connections close once their last answers are written.
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
	}
	s.mu.Lock()
	conns = conns[:0]
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.finish()
	}
	stopped := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		// Writers still flushing to consumers that do not read: cut them off.
		for _, c := range conns {
			c.abort()
		}
		<-stopped
	}
	return err
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	open, active := len(s.conns), s.active
	s.mu.Unlock()
	return Stats{
		Requests:    s.requests.Load(),
		Heartbeats:  s.heartbeats.Load(),
		Rejected:    s.rejected.Load(),
		Accepted:    s.accepts.Load(),
		Connections: open,
		InFlight:    active,
	}
}

// exhaustedMessage is Java's message for a call refused because its thread
// pool is full (AllChannelHandler / AbortPolicyWithReport).
func (s *Server) exhaustedMessage(local net.Addr) string {
	host, port := hostPort(local)
	n := strconv.Itoa(s.maxInFlight)
	return "Server side(" + host + "," + port + ") thread pool is exhausted, detail msg:Thread pool is EXHAUSTED! Pool Size: " +
		n + " (active: " + n + ", core: " + n + ", max: " + n + ")"
}

func hostPort(a net.Addr) (string, string) {
	if a == nil {
		return "", ""
	}
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String(), ""
	}
	return host, port
}
