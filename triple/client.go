package triple

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/grpcwire"
	"github.com/dubbogw/dubbogw/internal/triplewire"
)

// Options configure a Client. Zero fields take the defaults given, which
// match the dubbo client's.
type Options struct {
	// DialTimeout bounds one connection attempt, and the TLS handshake
	// after it. Default 3s.
	DialTimeout time.Duration
	// Heartbeat is how long a connection may receive nothing before an
	// HTTP/2 PING is sent; without an answer within Heartbeat (at most
	// 15s) the connection is closed. Default 60s.
	Heartbeat time.Duration
	// MaxPayload bounds the request and response messages. A request over
	// it fails before it is sent (dubbo.ErrPayloadTooLarge); a response
	// over it fails the call and resets its stream. Default 8 MiB.
	MaxPayload int
	// MaxPending bounds the calls in flight to one provider address;
	// beyond it calls fail at once with dubbo.ErrOverloaded. Default 10000.
	MaxPending int
	// Timeout is the deadline of a call whose context has none. Default 1s.
	Timeout time.Duration
	// MaxHeaderBytes bounds a response's headers and trailers. Default 64 KiB.
	MaxHeaderBytes int
	// TLS is the client configuration of providers over TLS. Nil: the
	// system's CAs, no client certificate.
	TLS *tls.Config
	// TLSAll calls every provider over TLS; otherwise those whose Target
	// says so.
	TLSAll bool
	// Registerer receives the dubbogw_triple_* metrics. Nil: not registered.
	Registerer prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 60 * time.Second
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = protocol.DefaultMaxPayload
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 10000
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	return o
}

// idleConnTimeout closes connections that carried no call for this long.
const idleConnTimeout = 90 * time.Second

// maxSwapMemo bounds the remembered method-name spellings (see Invoke).
const maxSwapMemo = 4096

// Client calls Triple providers. It is safe for concurrent use; create
// one per process and Close it on shutdown.
type Client struct {
	opts    Options
	plain   *http.Transport // h2c, prior knowledge
	secure  *http.Transport // HTTP/2 over TLS
	metrics *metrics

	addrs sync.Map // addr → *addrState

	// swapped remembers procedures a provider serves under the other
	// case of the method's first letter (dubbo-go's non-IDL services are
	// exported under Go method names: GetUser for Java's getUser).
	swapped  sync.Map // addr+path → struct{}
	swapMemo atomic.Int64

	inflight  atomic.Int64
	closed    atomic.Bool
	drained   chan struct{}
	drainOnce sync.Once

	encoders sync.Pool // *hessian.Encoder
	decoders sync.Pool // *hessian.Decoder
	buffers  sync.Pool // *[]byte
}

// addrState is what the Client counts per provider address.
type addrState struct {
	pending atomic.Int64
}

// New returns a Client. It dials nothing until the first call.
func New(opts Options) *Client {
	o := opts.withDefaults()
	c := &Client{
		opts:    o,
		metrics: newMetrics(o.Registerer),
		drained: make(chan struct{}),
	}
	c.plain = c.newTransport(false)
	c.secure = c.newTransport(true)
	c.encoders.New = func() any { return hessian.NewEncoder(nil) }
	c.decoders.New = func() any { return hessian.NewDecoder(nil) }
	c.buffers.New = func() any { b := make([]byte, 0, 1024); return &b }
	return c
}

func (c *Client) newTransport(secure bool) *http.Transport {
	o := c.opts
	d := dialer{d: &net.Dialer{Timeout: o.DialTimeout}, m: c.metrics}
	var p http.Protocols
	t := &http.Transport{
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    o.DialTimeout,
		MaxResponseHeaderBytes: int64(o.MaxHeaderBytes),
		DisableCompression:     true,
		// A connection without streams this long is closed: the transport
		// cannot close one address's connections, so those of a provider
		// gone from the registry end this way.
		IdleConnTimeout: idleConnTimeout,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: o.Heartbeat,
			PingTimeout:     min(o.Heartbeat, 15*time.Second),
		},
	}
	if secure {
		p.SetHTTP2(true)
		if o.TLS != nil {
			t.TLSClientConfig = o.TLS.Clone()
		} else {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	t.Protocols = &p
	return t
}

// Invoke calls inv on the Triple provider t. inv is a typed call of a
// non-IDL (Java interface) method: each argument travels as its own
// hessian2 stream in a TripleRequestWrapper, with the Java parameter
// types; the result comes back as one hessian2 value, in the same model
// the dubbo client returns. inv.Generic is refused: $invoke over Triple
// is not supported.
//
// The call's deadline is ctx's (or Options.Timeout), sent as
// grpc-timeout; inv.Version and inv.Group go in tri-service-version and
// tri-service-group; inv.Attachments become lower-case headers, except
// those a client must never choose (HTTP/2 pseudo and connection
// headers, grpc-* and tri-* headers, content-type, te, user-agent).
//
// A provider that answers UNIMPLEMENTED for the method is asked once
// more with the case of the method's first letter swapped (dubbo-go
// exports non-IDL methods under their Go names: GetUser for getUser);
// the spelling that worked is remembered per address.
//
// Errors: *StatusError for a gRPC status other than OK, and otherwise an
// error wrapping dubbo.ErrConnect, dubbo.ErrConnectionLost,
// dubbo.ErrOverloaded, dubbo.ErrClosed, dubbo.ErrPayloadTooLarge or the
// context's error, naming the call and the address.
func (c *Client) Invoke(ctx context.Context, t dubbo.Target, inv *dubbo.Invocation) (*dubbo.Result, error) {
	if !c.enter() {
		return nil, callError(t.Addr, inv, dubbo.ErrClosed)
	}
	defer c.leave()
	c.metrics.use().inflight.Inc()
	start := time.Now()
	res, o, err := c.invoke(ctx, t, inv)
	c.metrics.observe(o, time.Since(start))
	c.metrics.inflight.Dec()
	return res, err
}

func (c *Client) invoke(ctx context.Context, t dubbo.Target, inv *dubbo.Invocation) (*dubbo.Result, outcome, error) {
	if inv.Generic {
		return nil, outcomeBadRequest, callError(t.Addr, inv, errors.New("generic ($invoke) calls are not supported over Triple"))
	}
	ctx, done, o, err := c.begin(ctx, t, inv)
	if err != nil {
		return nil, o, err
	}
	defer done()

	bp := c.buffers.Get().(*[]byte)
	defer c.putBuffer(bp)
	frame, err := c.encodeRequest((*bp)[:0], inv)
	*bp = frame
	if err != nil {
		if errors.Is(err, dubbo.ErrPayloadTooLarge) {
			return nil, outcomeBadRequest, callError(t.Addr, inv, err)
		}
		return nil, outcomeBadRequest, callError(t.Addr, inv, fmt.Errorf("encoding the arguments: %w", err))
	}
	secure := t.TLS || c.opts.TLSAll
	orig := "/" + inv.Interface + "/" + inv.Method
	swapped := "/" + inv.Interface + "/" + swapFirstCase(inv.Method)
	memoKey := t.Addr + orig
	path := orig
	if _, ok := c.swapped.Load(memoKey); ok {
		path = swapped
	}
	rb := c.buffers.Get().(*[]byte)
	defer c.putBuffer(rb)
	msg, o, err := c.roundTrip(ctx, t.Addr, secure, path, frame, inv, rb)
	if isUnimplemented(err) && swapped != orig {
		// Try the other spelling; remember the one that works (a provider
		// replaced at the same address may have changed it back).
		alt := swapped
		if path == swapped {
			alt = orig
		}
		msg2, o2, err2 := c.roundTrip(ctx, t.Addr, secure, alt, frame, inv, rb)
		if !isUnimplemented(err2) {
			if err2 == nil {
				c.rememberSpelling(memoKey, alt == swapped)
			}
			msg, o, err = msg2, o2, err2
		}
	}
	if err != nil {
		return nil, o, err
	}
	return c.decodeResult(t.Addr, inv, msg)
}

// InvokeProto calls an IDL (protobuf) method: message is the request
// message, already encoded; the answer is the response message's bytes
// (the caller's to keep). inv names the service (Interface: the protobuf
// service's full name), Method, Version, Group and Attachments; its
// arguments are not read. Bounds, headers and errors are Invoke's; no
// other spelling of the method is tried.
func (c *Client) InvokeProto(ctx context.Context, t dubbo.Target, inv *dubbo.Invocation, message []byte) ([]byte, error) {
	if !c.enter() {
		return nil, callError(t.Addr, inv, dubbo.ErrClosed)
	}
	defer c.leave()
	c.metrics.use().inflight.Inc()
	start := time.Now()
	res, o, err := c.invokeProto(ctx, t, inv, message)
	c.metrics.observe(o, time.Since(start))
	c.metrics.inflight.Dec()
	return res, err
}

func (c *Client) invokeProto(ctx context.Context, t dubbo.Target, inv *dubbo.Invocation, message []byte) ([]byte, outcome, error) {
	if len(message) > c.opts.MaxPayload {
		return nil, outcomeBadRequest, callError(t.Addr, inv, dubbo.ErrPayloadTooLarge)
	}
	ctx, done, o, err := c.begin(ctx, t, inv)
	if err != nil {
		return nil, o, err
	}
	defer done()
	bp := c.buffers.Get().(*[]byte)
	defer c.putBuffer(bp)
	frame := append((*bp)[:0], 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(frame[1:], uint32(len(message)))
	frame = append(frame, message...)
	*bp = frame
	rb := c.buffers.Get().(*[]byte)
	defer c.putBuffer(rb)
	msg, o, err := c.roundTrip(ctx, t.Addr, t.TLS || c.opts.TLSAll, "/"+inv.Interface+"/"+inv.Method, frame, inv, rb)
	if err != nil {
		return nil, o, err
	}
	return bytes.Clone(msg), outcomeOK, nil
}

// begin checks a call's names, gives ctx the default deadline when it
// has none and takes a pending slot of the address; done gives both back.
func (c *Client) begin(ctx context.Context, t dubbo.Target, inv *dubbo.Invocation) (context.Context, func(), outcome, error) {
	if err := checkName(inv.Interface, true); err != nil {
		return ctx, nil, outcomeBadRequest, callError(t.Addr, inv, fmt.Errorf("interface: %w", err))
	}
	if err := checkName(inv.Method, false); err != nil {
		return ctx, nil, outcomeBadRequest, callError(t.Addr, inv, fmt.Errorf("method: %w", err))
	}
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
	}
	if err := ctx.Err(); err != nil {
		cancel()
		return ctx, nil, contextOutcome(err), callError(t.Addr, inv, fmt.Errorf("before sending: %w", err))
	}
	st := c.addrState(t.Addr)
	if st.pending.Add(1) > int64(c.opts.MaxPending) {
		st.pending.Add(-1)
		cancel()
		return ctx, nil, outcomeOverloaded, callError(t.Addr, inv, dubbo.ErrOverloaded)
	}
	return ctx, func() { st.pending.Add(-1); cancel() }, outcomeOK, nil
}

// rememberSpelling records whether the method at memoKey (address and
// path) is served under its swapped spelling; at most maxSwapMemo are
// remembered.
func (c *Client) rememberSpelling(memoKey string, swapped bool) {
	if !swapped {
		if _, ok := c.swapped.LoadAndDelete(memoKey); ok {
			c.swapMemo.Add(-1)
		}
		return
	}
	if c.swapMemo.Load() < maxSwapMemo {
		if _, loaded := c.swapped.LoadOrStore(memoKey, struct{}{}); !loaded {
			c.swapMemo.Add(1)
		}
	}
}

func isUnimplemented(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == Unimplemented
}

// roundTrip sends one request frame to path and reads the answer's one
// message into *bp, which it returns (a slice of *bp).
func (c *Client) roundTrip(ctx context.Context, addr string, secure bool, path string, frame []byte, inv *dubbo.Invocation, bp *[]byte) ([]byte, outcome, error) {
	scheme, tr := "http", c.plain
	if secure {
		scheme, tr = "https", c.secure
	}
	deadline, _ := ctx.Deadline()
	h := make(http.Header, 8+len(inv.Attachments))
	for k, v := range inv.Attachments {
		if k = attachmentHeader(k); k != "" && validHeaderValue(v) {
			h[k] = []string{v}
		}
	}
	h["Content-Type"] = []string{"application/grpc+proto"}
	h["Te"] = []string{"trailers"}
	h["User-Agent"] = []string{"dubbogw-triple"}
	h["Grpc-Timeout"] = []string{grpcwire.FormatTimeout(time.Until(deadline))}
	if inv.Version != "" {
		h["Tri-Service-Version"] = []string{inv.Version}
	}
	if inv.Group != "" {
		h["Tri-Service-Group"] = []string{inv.Group}
	}
	body := bytes.NewReader(frame)
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           &url.URL{Scheme: scheme, Host: addr, Path: path},
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        h,
		Body:          io.NopCloser(body),
		GetBody:       func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(frame)), nil },
		ContentLength: int64(len(frame)),
		Host:          addr,
	}
	req = req.WithContext(ctx)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		err = c.transportError(ctx, err)
		return nil, outcomeOf(err), callError(addr, inv, err)
	}
	defer resp.Body.Close()
	return c.readResponse(ctx, addr, inv, resp, bp)
}

// readResponse reads a unary gRPC response: one message of at most
// MaxPayload bytes (into *bp), then the status in the trailers (or, for a
// trailers-only answer, in the headers).
func (c *Client) readResponse(ctx context.Context, addr string, inv *dubbo.Invocation, resp *http.Response, bp *[]byte) ([]byte, outcome, error) {
	if resp.StatusCode != http.StatusOK {
		if st := resp.Header.Get("Grpc-Status"); st != "" {
			return nil, outcomeStatusError, statusError(addr, st, resp.Header.Get("Grpc-Message"))
		}
		code := codeOfHTTPStatus(resp.StatusCode)
		return nil, outcomeStatusError, &StatusError{Addr: addr, Code: code, Message: "HTTP status " + strconv.Itoa(resp.StatusCode)}
	}
	if st := resp.Header.Get("Grpc-Status"); st != "" {
		// Trailers-only: no message follows.
		if st != "0" {
			return nil, outcomeStatusError, statusError(addr, st, resp.Header.Get("Grpc-Message"))
		}
		return nil, outcomeDecodeError, callError(addr, inv, errors.New("the provider answered OK without a result"))
	}
	if ct := resp.Header.Get("Content-Type"); len(ct) < 16 || ct[:16] != "application/grpc" {
		return nil, outcomeDecodeError, callError(addr, inv, fmt.Errorf("the provider answered with content type %q, not gRPC", ct))
	}
	var hdr [triplewire.FrameHeaderLen]byte
	var msg []byte
	hasMsg := false
	switch _, err := io.ReadFull(resp.Body, hdr[:]); {
	case err == io.EOF:
	case err != nil:
		err = c.bodyError(ctx, err)
		return nil, outcomeOf(err), callError(addr, inv, err)
	default:
		if hdr[0] != 0 {
			return nil, outcomeDecodeError, callError(addr, inv, errors.New("the provider sent a compressed message (none was accepted)"))
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		if n > c.opts.MaxPayload {
			return nil, outcomeDecodeError, callError(addr, inv, fmt.Errorf("the response message of %d bytes exceeds max payload %d", n, c.opts.MaxPayload))
		}
		if cap(*bp) < n {
			*bp = make([]byte, n)
		}
		msg = (*bp)[:n]
		if _, err := io.ReadFull(resp.Body, msg); err != nil {
			err = c.bodyError(ctx, fmt.Errorf("reading the response message: %w", noEOF(err)))
			return nil, outcomeOf(err), callError(addr, inv, err)
		}
		hasMsg = true
		var one [1]byte
		if n, err := io.ReadFull(resp.Body, one[:]); n > 0 {
			return nil, outcomeDecodeError, callError(addr, inv, errors.New("the provider sent more than one message for a unary call"))
		} else if err != io.EOF {
			err = c.bodyError(ctx, err)
			return nil, outcomeOf(err), callError(addr, inv, err)
		}
	}
	st := resp.Trailer.Get("Grpc-Status")
	switch {
	case st == "":
		return nil, outcomeConnectionLost, callError(addr, inv, fmt.Errorf("the response ended without grpc-status: %w", dubbo.ErrConnectionLost))
	case st != "0":
		return nil, outcomeStatusError, statusError(addr, st, resp.Trailer.Get("Grpc-Message"))
	case !hasMsg:
		return nil, outcomeDecodeError, callError(addr, inv, errors.New("the provider answered OK without a result"))
	}
	return msg, outcomeOK, nil
}

// decodeResult reads a non-IDL answer: the response wrapper and the
// hessian2 result in it.
func (c *Client) decodeResult(addr string, inv *dubbo.Invocation, msg []byte) (*dubbo.Result, outcome, error) {
	w, err := triplewire.DecodeResponse(msg)
	if err != nil {
		return nil, outcomeDecodeError, callError(addr, inv, fmt.Errorf("decoding the response wrapper: %w", err))
	}
	switch w.SerializeType {
	case "", "hessian2", "hessian4":
	default:
		return nil, outcomeDecodeError, callError(addr, inv, fmt.Errorf("the provider answered in serialization %q, not hessian2", w.SerializeType))
	}
	var v any
	if w.HasData && len(w.Data) > 0 {
		d := c.decoders.Get().(*hessian.Decoder)
		d.Reset(w.Data)
		v, err = d.Decode()
		rest := d.Remaining()
		d.Reset(nil)
		c.decoders.Put(d)
		if err == nil && rest != 0 {
			err = fmt.Errorf("%d bytes after the result", rest)
		}
		if err != nil {
			return nil, outcomeDecodeError, callError(addr, inv, fmt.Errorf("decoding the result: %w", err))
		}
	}
	return &dubbo.Result{Value: v}, outcomeOK, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// statusError builds the StatusError of a grpc-status and grpc-message.
func statusError(addr, status, message string) *StatusError {
	n, err := strconv.ParseUint(status, 10, 32)
	if err != nil {
		return &StatusError{Addr: addr, Code: Unknown, Message: fmt.Sprintf("malformed grpc-status %q", status)}
	}
	return &StatusError{Addr: addr, Code: Code(n), Message: grpcwire.DecodeMessage(message)}
}

// encodeRequest appends the request frame of inv to dst.
func (c *Client) encodeRequest(dst []byte, inv *dubbo.Invocation) ([]byte, error) {
	n := len(inv.ParamTypes)
	if inv.WriteArgs == nil && len(inv.Args) != n {
		return dst, fmt.Errorf("%d arguments for %d parameter types", len(inv.Args), n)
	}
	e := c.encoders.Get().(*hessian.Encoder)
	defer func() { e.Reset(nil); c.encoders.Put(e) }()
	// Each argument is its own hessian2 stream (class definitions and
	// references do not cross arguments): encoded one after the other
	// into scratch, then framed.
	sp := c.buffers.Get().(*[]byte)
	defer c.putBuffer(sp)
	scratch := (*sp)[:0]
	var endsArr [8]int
	ends := endsArr[:0]
	if inv.WriteArgs == nil {
		for i, a := range inv.Args {
			e.Reset(scratch)
			if err := e.Encode(a); err != nil {
				return dst, fmt.Errorf("argument %d: %w", i, err)
			}
			scratch = e.Bytes()
			ends = append(ends, len(scratch))
		}
	} else {
		// WriteArgs writes every argument into one stream, where a later
		// argument may refer to an earlier one's class definition: decode
		// the stream and encode each value on its own.
		tp := c.buffers.Get().(*[]byte)
		e.Reset((*tp)[:0])
		err := inv.WriteArgs(e)
		stream := e.Bytes()
		defer func() { *tp = stream; c.putBuffer(tp) }()
		if err != nil {
			return dst, err
		}
		if len(stream) > c.opts.MaxPayload {
			return dst, dubbo.ErrPayloadTooLarge
		}
		d := c.decoders.Get().(*hessian.Decoder)
		d.Reset(stream)
		defer func() { d.Reset(nil); c.decoders.Put(d) }()
		out := c.encoders.Get().(*hessian.Encoder)
		defer func() { out.Reset(nil); c.encoders.Put(out) }()
		for i := range n {
			v, err := d.Decode()
			if err != nil {
				return dst, fmt.Errorf("argument %d: re-reading it: %w", i, err)
			}
			out.Reset(scratch)
			if err := out.Encode(v); err != nil {
				return dst, fmt.Errorf("argument %d: %w", i, err)
			}
			scratch = out.Bytes()
			ends = append(ends, len(scratch))
		}
		if d.Remaining() != 0 {
			return dst, fmt.Errorf("more arguments written than the %d parameter types", n)
		}
	}
	*sp = scratch
	var argsArr [8][]byte
	args := argsArr[:0]
	from := 0
	for _, end := range ends {
		args = append(args, scratch[from:end:end])
		from = end
	}
	dst = triplewire.AppendRequestFrame(dst, args, inv.ParamTypes)
	if len(dst)-triplewire.FrameHeaderLen > c.opts.MaxPayload {
		return dst, dubbo.ErrPayloadTooLarge
	}
	return dst, nil
}

func (c *Client) putBuffer(bp *[]byte) {
	if cap(*bp) > 64<<10 {
		return // a rare large message: let it go
	}
	*bp = (*bp)[:0]
	c.buffers.Put(bp)
}

func (c *Client) addrState(addr string) *addrState {
	if st, ok := c.addrs.Load(addr); ok {
		return st.(*addrState)
	}
	st, _ := c.addrs.LoadOrStore(addr, new(addrState))
	return st.(*addrState)
}

// Addrs lists the provider addresses the Client has called and not
// forgotten.
func (c *Client) Addrs() []string {
	var addrs []string
	c.addrs.Range(func(k, _ any) bool {
		addrs = append(addrs, k.(string))
		return true
	})
	slices.Sort(addrs)
	return addrs
}

// Forget drops what the Client keeps for addr (its pending count and
// remembered method spellings); its connections close once idle for 90s.
// A registry that saw the provider go away calls it.
func (c *Client) Forget(addr string) {
	c.addrs.Delete(addr)
	c.swapped.Range(func(k, _ any) bool {
		if s := k.(string); len(s) > len(addr) && s[:len(addr)] == addr && s[len(addr)] == '/' {
			c.swapped.Delete(k)
			c.swapMemo.Add(-1)
		}
		return true
	})
}

// Close stops the Client: new calls fail with dubbo.ErrClosed at once,
// Close waits for the calls in flight until ctx ends, then closes the idle
// connections (calls still in flight end at their own deadlines). The
// error is ctx's when calls were still in flight.
func (c *Client) Close(ctx context.Context) error {
	c.closed.Store(true)
	if c.inflight.Load() == 0 {
		c.markDrained()
	}
	var err error
	select {
	case <-c.drained:
	default:
		select {
		case <-c.drained:
		case <-ctx.Done():
			err = fmt.Errorf("triple client: closing with %d calls in flight: %w", c.inflight.Load(), ctx.Err())
		}
	}
	c.plain.CloseIdleConnections()
	c.secure.CloseIdleConnections()
	return err
}

func (c *Client) enter() bool {
	c.inflight.Add(1)
	if c.closed.Load() {
		c.leave()
		return false
	}
	return true
}

func (c *Client) leave() {
	if c.inflight.Add(-1) == 0 && c.closed.Load() {
		c.markDrained()
	}
}

func (c *Client) markDrained() { c.drainOnce.Do(func() { close(c.drained) }) }

// transportError classifies a failed RoundTrip: no connection could be
// made (ErrConnect: nothing was sent), the context ended, or the
// connection broke with the request sent (ErrConnectionLost).
func (c *Client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("waiting for the response: %w", ctx.Err())
	}
	var (
		oe  *net.OpError
		cve *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		rhe tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &cve), errors.As(err, &ua), errors.As(err, &rhe):
		return fmt.Errorf("TLS: %v: %w", err, dubbo.ErrConnect)
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("%v: %w", err, dubbo.ErrConnect)
	}
	return fmt.Errorf("%v: %w", err, dubbo.ErrConnectionLost)
}

func (c *Client) bodyError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("reading the response: %w", ctx.Err())
	}
	return fmt.Errorf("reading the response: %v: %w", err, dubbo.ErrConnectionLost)
}

func callError(addr string, inv *dubbo.Invocation, err error) error {
	return fmt.Errorf("triple call %s.%s on %s: %w", inv.Interface, inv.Method, addr, err)
}

// checkName checks an interface (dots allowed) or method name: a Java
// identifier, so a client-chosen name cannot change the request path.
func checkName(s string, dots bool) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > 256 {
		return errors.New("longer than 256 bytes")
	}
	for _, r := range s {
		switch {
		case r == '.' && dots, r == '_', r == '$', r < utf8.RuneSelf && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
		default:
			return fmt.Errorf("%q is not a Java name", s)
		}
	}
	return nil
}

// swapFirstCase swaps the case of s's first letter, as dubbo-go does to
// map Java method names to Go ones.
func swapFirstCase(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case unicode.IsUpper(r):
		return string(unicode.ToLower(r)) + s[n:]
	case unicode.IsLower(r):
		return string(unicode.ToUpper(r)) + s[n:]
	}
	return s
}

// attachmentHeader is the header an attachment key travels in, or "" for
// a key a client must not set this way: not a valid header name, an
// HTTP/2 connection header, or one of the headers the client itself
// writes (content-type, te, user-agent, grpc-*, tri-*).
func attachmentHeader(k string) string {
	if k == "" || len(k) > 256 {
		return ""
	}
	for i := 0; i < len(k); i++ {
		b := k[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
			return ""
		}
	}
	canon := http.CanonicalHeaderKey(k)
	switch canon {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te",
		"Host", "Content-Type", "Content-Length", "Content-Encoding", "User-Agent", "Trailer",
		"Path", "Interface", "Version", "Group", "Timeout", "Generic":
		return ""
	}
	if len(canon) >= 5 && (canon[:5] == "Grpc-") || len(canon) >= 4 && canon[:4] == "Tri-" || len(canon) >= 6 && canon[:6] == "Proxy-" {
		return ""
	}
	return canon
}

func validHeaderValue(v string) bool {
	if len(v) > 8<<10 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}
