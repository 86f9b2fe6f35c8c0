package dubbo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// writeBufferSize is the bufio.Writer size of a connection: frames queued
// together are written with one syscall up to this much.
const writeBufferSize = 32 << 10

// conn is one TCP connection to a provider, carrying many calls at once,
// told apart by request id. serve runs its read loop in the calling
// goroutine and owns its writer goroutine; the connection ends, once, in
// fail, which hands every pending call the error.
type conn struct {
	client  *Client
	pool    *pool
	nc      net.Conn
	metrics *addrMetrics

	nextID atomic.Uint64
	queue  chan *buffer // encoded frames for the writer, at most MaxPending

	mu      sync.Mutex
	pending map[uint64]*call // nil once failed
	err     error            // why the connection ended; set once
	done    chan struct{}    // closed when err is set

	readonly atomic.Bool
	epoch    time.Time    // lastRead counts from here, on the monotonic clock
	lastRead atomic.Int64 // time.Duration since epoch of the last frame read
}

func newConn(p *pool, nc net.Conn) *conn {
	c := p.client
	return &conn{
		client:  c,
		pool:    p,
		nc:      nc,
		metrics: p.metrics,
		queue:   make(chan *buffer, c.opts.MaxPending),
		pending: make(map[uint64]*call, min(c.opts.MaxPending, 1024)),
		done:    make(chan struct{}),
		epoch:   time.Now(),
	}
}

// serve runs the connection until it fails and returns why.
func (cn *conn) serve() error {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		cn.writeLoop()
	}()
	err := cn.readLoop()
	if errors.Is(err, io.EOF) {
		err = errors.New("the provider closed the connection")
	}
	cn.fail(fmt.Errorf("%w: %w", ErrConnectionLost, err))
	<-writerDone
	return cn.cause()
}

func (cn *conn) cause() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

// usable reports whether the connection still takes calls.
func (cn *conn) usable() bool {
	select {
	case <-cn.done:
		return false
	default:
		return true
	}
}

// fail ends the connection with err (the first error wins): it closes the
// socket, which stops the reader, and fails every pending call at once.
func (cn *conn) fail(err error) {
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return
	}
	cn.err = err
	calls := cn.pending
	cn.pending = nil
	close(cn.done)
	cn.mu.Unlock()
	_ = cn.nc.Close()
	for _, cl := range calls {
		cl.err = err
		cl.done <- struct{}{}
	}
	cn.metrics.pending.Sub(float64(len(calls)))
}

// send registers cl as waiting for the response to request id and queues
// its frame for the writer, which then owns the frame.
func (cn *conn) send(id uint64, cl *call, frame *buffer) error {
	cn.mu.Lock()
	if err := cn.err; err != nil {
		cn.mu.Unlock()
		if errors.Is(err, ErrClosed) {
			return err
		}
		// Lost between pick and send: the request was not sent.
		return fmt.Errorf("%w (connection just lost: %v)", ErrConnect, err)
	}
	if len(cn.pending) >= cn.client.opts.MaxPending {
		cn.mu.Unlock()
		return fmt.Errorf("%w: %d calls waiting on the connection", ErrOverloaded, cn.client.opts.MaxPending)
	}
	cn.pending[id] = cl
	cn.mu.Unlock()
	cn.metrics.pending.Inc()
	select {
	case cn.queue <- frame:
		return nil
	default: // frames of calls that already gave up still fill the queue
		if !cn.remove(id, cl) {
			<-cl.done // the connection failed meanwhile and handed cl its error
		}
		return fmt.Errorf("%w: write queue full", ErrOverloaded)
	}
}

// remove takes cl off the pending map; false means someone else took it
// first and is handing it its result.
func (cn *conn) remove(id uint64, cl *call) bool {
	cn.mu.Lock()
	ok := cn.pending[id] == cl
	if ok {
		delete(cn.pending, id)
	}
	cn.mu.Unlock()
	if ok {
		cn.metrics.pending.Dec()
	}
	return ok
}

// take removes and returns the call waiting for id, nil when there is none
// (it ended before its response came).
func (cn *conn) take(id uint64) *call {
	cn.mu.Lock()
	cl, ok := cn.pending[id]
	if ok {
		delete(cn.pending, id)
	}
	cn.mu.Unlock()
	if ok {
		cn.metrics.pending.Dec()
	}
	return cl
}

// writeLoop writes queued frames, batching whatever is queued into one
// flush, and sends heartbeats when the connection is idle. It fails the
// connection on a write error, on missed heartbeats and when the Client
// stops.
func (cn *conn) writeLoop() {
	bw := bufio.NewWriterSize(cn.nc, writeBufferSize)
	hb := cn.client.opts.Heartbeat
	tick := time.NewTicker(max(hb/3, time.Millisecond))
	defer tick.Stop()
	var writeDeadline time.Time
	var lastWrite time.Duration // since epoch
	heartbeat := make([]byte, 0, protocol.HeaderLen+1)
	// armDeadline keeps a write deadline 2 to 3 heartbeats ahead, so a
	// provider that stops reading cannot block the writer for ever, while
	// the deadline is moved only once per heartbeat interval.
	armDeadline := func(now time.Time) {
		if writeDeadline.Sub(now) < 2*hb {
			writeDeadline = now.Add(3 * hb)
			_ = cn.nc.SetWriteDeadline(writeDeadline)
		}
	}
	for {
		select {
		case frame := <-cn.queue:
			now := time.Now()
			armDeadline(now)
			n, err := cn.writeBatch(bw, frame)
			if err != nil {
				cn.fail(fmt.Errorf("%w: writing: %w", ErrConnectionLost, err))
				return
			}
			cn.metrics.batch.Observe(float64(n))
			lastWrite = now.Sub(cn.epoch)
		case now := <-tick.C:
			armDeadline(now)
			since := now.Sub(cn.epoch)
			idle := since - time.Duration(cn.lastRead.Load())
			if idle >= 3*hb {
				cn.metrics.idleCloses.Inc()
				cn.fail(fmt.Errorf("%w: nothing received for %v (3 heartbeat intervals)", ErrConnectionLost, idle.Round(time.Millisecond)))
				return
			}
			if idle >= hb || since-lastWrite >= hb {
				heartbeat = protocol.AppendHeartbeat(heartbeat[:0], cn.nextID.Add(1), true)
				_, _ = bw.Write(heartbeat)
				if err := bw.Flush(); err != nil {
					cn.fail(fmt.Errorf("%w: writing a heartbeat: %w", ErrConnectionLost, err))
					return
				}
				cn.metrics.heartbeats.Inc()
				lastWrite = since
			}
		case <-cn.done:
			return
		case <-cn.pool.life.Done():
			cn.fail(ErrClosed)
			return
		}
	}
}

// writeBatch writes frame and every frame queued behind it, then flushes.
func (cn *conn) writeBatch(bw *bufio.Writer, frame *buffer) (int, error) {
	n := 0
	for {
		_, err := bw.Write(frame.b)
		cn.client.putBuffer(frame)
		n++
		if err != nil {
			return n, err
		}
		select {
		case frame = <-cn.queue:
			continue
		default:
		}
		return n, bw.Flush()
	}
}

// readLoop reads frames until the connection breaks: responses go to their
// calls, events are handled here.
func (cn *conn) readLoop() error {
	r := protocol.NewReader(cn.nc, cn.client.opts.MaxPayload)
	var events *hessian.Decoder // provider events are rare: made on first use
	for {
		h, body, err := r.Next()
		if err != nil {
			return err
		}
		cn.lastRead.Store(int64(time.Since(cn.epoch)))
		switch {
		case !h.Request && !h.Event:
			cn.deliver(h, body)
		case !h.Request:
			// A heartbeat response: reading it was the point.
		default:
			if events == nil {
				events = hessian.NewDecoder(nil)
			}
			cn.handleRequest(h, body, events)
		}
	}
}

// deliver hands a response to its call, copying the body, which the reader
// reuses. A response whose call has ended is dropped without decoding.
func (cn *conn) deliver(h protocol.Header, body []byte) {
	cl := cn.take(h.ID)
	if cl == nil {
		cn.metrics.late.Inc()
		return
	}
	b := cn.client.getBuffer()
	b.b = append(b.b[:0], body...)
	cl.hdr, cl.body = h, b
	cl.done <- struct{}{}
}

// writableEventData is the event by which a provider that said readonly
// takes traffic again (Dubbo 3's online command).
const writableEventData = "W"

// handleRequest handles a request from the provider: heartbeats are
// answered, readonly and writable events mark the connection; anything
// else is not something a provider sends a consumer, and is ignored.
func (cn *conn) handleRequest(h protocol.Header, body []byte, d *hessian.Decoder) {
	log := cn.client.log
	if !h.Event {
		log.Debug("dubbo: ignoring a request from the provider", "addr", cn.pool.addr, "id", h.ID)
		return
	}
	req, err := protocol.DecodeRequest(h, body, d)
	d.Reset(nil)
	if err != nil {
		log.Warn("dubbo: ignoring an event that does not decode", "addr", cn.pool.addr, "error", err)
		return
	}
	switch {
	case req.IsReadonly():
		cn.metrics.readonly.Inc()
		log.Info("dubbo: provider is shutting down (readonly event)", "addr", cn.pool.addr)
		cn.pool.setReadonly(cn, true)
	case req.EventData == writableEventData:
		log.Info("dubbo: provider takes traffic again (writable event)", "addr", cn.pool.addr)
		cn.pool.setReadonly(cn, false)
	case req.IsHeartbeat() && h.TwoWay:
		frame := cn.client.getBuffer()
		frame.b = protocol.AppendHeartbeat(frame.b[:0], h.ID, false)
		select {
		case cn.queue <- frame:
		default: // the queue is full of calls: they will do as a sign of life
			cn.client.putBuffer(frame)
		}
	}
}
