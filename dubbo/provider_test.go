package dubbo

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// fakeProvider is a provider written on the protocol package for the tests
// that need a provider to misbehave on cue. Every accepted connection is
// served by handle in its own goroutine.
type fakeProvider struct {
	t      testing.TB
	ln     net.Listener
	handle func(*fakeConn)

	mu    sync.Mutex
	conns []*fakeConn
	wg    sync.WaitGroup
}

// startProvider listens on addr ("127.0.0.1:0" for any port).
func startProvider(t testing.TB, addr string, handle func(*fakeConn)) *fakeProvider {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProvider{t: t, ln: ln, handle: handle}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

func (p *fakeProvider) Addr() string { return p.ln.Addr().String() }

func (p *fakeProvider) accept() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return
		}
		fc := &fakeConn{
			nc: nc,
			r:  protocol.NewReader(nc, protocol.DefaultMaxPayload),
			d:  hessian.NewDecoder(nil),
			e:  hessian.NewEncoder(nil),
		}
		p.mu.Lock()
		p.conns = append(p.conns, fc)
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer nc.Close()
			p.handle(fc)
		}()
	}
}

// Conns returns the connections accepted so far.
func (p *fakeProvider) Conns() []*fakeConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*fakeConn(nil), p.conns...)
}

// Close stops listening, closes every connection and waits for the handlers.
func (p *fakeProvider) Close() {
	_ = p.ln.Close()
	for _, fc := range p.Conns() {
		_ = fc.nc.Close()
	}
	p.wg.Wait()
}

// fakeConn is one connection of a fakeProvider.
type fakeConn struct {
	nc net.Conn
	r  *protocol.Reader
	d  *hessian.Decoder

	wmu sync.Mutex
	e   *hessian.Encoder
}

// next reads the next request or event.
func (fc *fakeConn) next() (*protocol.DecodedRequest, error) {
	h, body, err := fc.r.Next()
	if err != nil {
		return nil, err
	}
	return protocol.DecodeRequest(h, body, fc.d)
}

// write writes raw bytes; safe to call beside the handler.
func (fc *fakeConn) write(b []byte) error {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	_, err := fc.nc.Write(b)
	return err
}

func (fc *fakeConn) reply(resp *protocol.Response) error {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	frame, err := protocol.AppendResponse(nil, fc.e, resp)
	if err != nil {
		return err
	}
	_, err = fc.nc.Write(frame)
	return err
}

// answerHeartbeat answers req when it is a two-way heartbeat and reports
// whether req was an event.
func (fc *fakeConn) answerHeartbeat(req *protocol.DecodedRequest) bool {
	if !req.Event {
		return false
	}
	if req.IsHeartbeat() && req.TwoWay {
		_ = fc.write(protocol.AppendHeartbeat(nil, req.ID, false))
	}
	return true
}

// firstArg is what echo answers: the first argument, or for a generic
// call the first item of its Object[].
func firstArg(req *protocol.DecodedRequest) any {
	if req.Method == protocol.MethodInvoke && len(req.Args) == 3 {
		if l, ok := req.Args[2].(*hessian.List); ok && len(l.Items) > 0 {
			return l.Items[0]
		}
		return nil
	}
	if len(req.Args) > 0 {
		return req.Args[0]
	}
	return nil
}

// echo answers every call with its first argument.
func echo(fc *fakeConn) {
	for {
		req, err := fc.next()
		if err != nil {
			return
		}
		if fc.answerHeartbeat(req) {
			continue
		}
		if err := fc.reply(&protocol.Response{ID: req.ID, Value: firstArg(req)}); err != nil {
			return
		}
	}
}

// holder is a provider handler that holds every call until release is
// called, then answers the held calls and every later one with echo's answer.
type holder struct {
	got      chan *protocol.DecodedRequest // each call as it arrives
	released chan struct{}
	once     sync.Once
}

func newHolder() *holder {
	return &holder{got: make(chan *protocol.DecodedRequest, 1000), released: make(chan struct{})}
}

func (h *holder) release() { h.once.Do(func() { close(h.released) }) }

func (h *holder) handle(fc *fakeConn) {
	var held []*protocol.DecodedRequest
	reqs := make(chan *protocol.DecodedRequest)
	go func() {
		defer close(reqs)
		for {
			req, err := fc.next()
			if err != nil {
				return
			}
			if !fc.answerHeartbeat(req) {
				reqs <- req
			}
		}
	}()
	released := h.released
	for {
		select {
		case req, ok := <-reqs:
			if !ok {
				return
			}
			h.got <- req
			if released == nil {
				_ = fc.reply(&protocol.Response{ID: req.ID, Value: firstArg(req)})
			} else {
				held = append(held, req)
			}
		case <-released:
			released = nil
			for _, req := range held {
				_ = fc.reply(&protocol.Response{ID: req.ID, Value: firstArg(req)})
			}
			held = nil
		}
	}
}

// waitN receives n calls from ch, failing the test after 5 s.
func waitN[T any](t testing.TB, ch <-chan T, n int) []T {
	t.Helper()
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	var got []T
	for len(got) < n {
		select {
		case v := <-ch:
			got = append(got, v)
		case <-timeout.C:
			t.Fatalf("got %d of %d after 5s", len(got), n)
		}
	}
	return got
}

// eventually polls cond every few milliseconds until it holds, failing the
// test after 5 s. Used only where the event waited for has no signal the
// test can receive (a background reconnect).
// checkGoroutines fails the test if goroutines started during it are still
// running when it ends (after every other cleanup). Call it first.
func checkGoroutines(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Fatalf("%d goroutines running, %d before the test:\n%s", runtime.NumGoroutine(), base, buf)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// newClient returns a Client closed (gracefully, within 5 s) when the test ends.
func newClient(t testing.TB, opts Options) *Client {
	t.Helper()
	c := New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func echoCall(arg string) *Invocation {
	return &Invocation{
		Interface:  "com.example.Echo",
		Method:     "echo",
		ParamTypes: []string{"java.lang.String"},
		Args:       []any{arg},
	}
}

func callCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pendingCalls returns the calls waiting on the connections to addr.
func pendingCalls(c *Client, addr string) int {
	p := (*c.pools.Load())[addr].plain
	if p == nil {
		return 0
	}
	n := 0
	for _, s := range p.slots {
		if cn := s.conn.Load(); cn != nil {
			cn.mu.Lock()
			n += len(cn.pending)
			cn.mu.Unlock()
		}
	}
	return n
}

func wantErr(t testing.TB, err error, target error, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", target)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("got %v, want an error wrapping %v", err, target)
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not contain %q", err, s)
		}
	}
}
