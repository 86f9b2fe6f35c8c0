package provider

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

const (
	outQueue       = 256      // frames waiting for the writer of one connection
	writeBuffer    = 32 << 10 // bufio.Writer size
	maxPooledFrame = 64 << 10 // larger frame buffers are not pooled
)

// conn is one consumer connection: a reader goroutine that decodes frames
// and starts calls, and a writer goroutine that batches frames into a
// bufio.Writer and flushes when its queue runs dry.
type conn struct {
	srv *Server
	nc  net.Conn

	out       chan []byte
	quit      chan struct{} // asks the writer to flush what is queued and close
	done      chan struct{} // closed once the connection is finished
	quitOnce  sync.Once
	closeOnce sync.Once

	encoders sync.Pool // *hessian.Encoder
	frames   sync.Pool // *[]byte
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		srv:  s,
		nc:   nc,
		out:  make(chan []byte, outQueue),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
}

// abort closes the connection at once, dropping queued frames.
func (c *conn) abort() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.nc.Close()
		c.srv.forget(c)
	})
}

// finish asks the writer to flush queued frames, then close.
func (c *conn) finish() {
	c.quitOnce.Do(func() { close(c.quit) })
}

// send queues a frame for the writer; it is dropped once the connection is
// finished.
func (c *conn) send(frame []byte) {
	select {
	case c.out <- frame:
	case <-c.done:
	}
}

func (c *conn) writeLoop() {
	defer c.srv.wg.Done()
	defer c.abort()
	w := bufio.NewWriterSize(c.nc, writeBuffer)
	for {
		select {
		case f := <-c.out:
			if err := c.write(w, f); err != nil {
				c.srv.logger.Debug("provider: write failed", "remote", c.nc.RemoteAddr().String(), "err", err)
				return
			}
		case <-c.quit:
			for {
				select {
				case f := <-c.out:
					if c.write(w, f) != nil {
						return
					}
				default:
					w.Flush()
					return
				}
			}
		case <-c.done:
			return
		}
	}
}

// write writes f and every frame queued behind it, then flushes.
func (c *conn) write(w *bufio.Writer, f []byte) error {
	for {
		_, err := w.Write(f)
		c.recycle(f)
		if err != nil {
			return err
		}
		select {
		case f = <-c.out:
			continue
		default:
		}
		return w.Flush()
	}
}

func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer c.abort()
	r := protocol.NewReader(c.nc, c.srv.maxPayload)
	d := hessian.NewDecoder(nil)
	d.SetLimits(hessian.Limits{MaxBytes: c.srv.maxPayload, MaxLength: c.srv.maxPayload})
	for {
		h, body, err := r.Next()
		if err != nil {
			c.readFailed(h, err)
			return
		}
		if !h.Request {
			continue // a response to an event of ours
		}
		req, err := protocol.DecodeRequest(h, body, d)
		if err != nil {
			// The frame was whole, so the stream is still in step: answer
			// as Java does and read on.
			c.srv.logger.Warn("provider: undecodable request", "remote", c.nc.RemoteAddr().String(), "err", err)
			if h.TwoWay {
				c.send(c.errorFrame(h.ID, protocol.StatusBadRequest, "Fail to decode request due to: "+err.Error()))
			}
			continue
		}
		if req.Event {
			if req.IsHeartbeat() && h.TwoWay {
				c.srv.heartbeats.Add(1)
				c.send(protocol.AppendHeartbeat(c.newFrame(), h.ID, false))
			}
			continue
		}
		if !c.srv.startCall() {
			c.srv.rejected.Add(1)
			if h.TwoWay {
				c.send(c.errorFrame(h.ID, protocol.StatusThreadpoolExhausted, c.srv.exhaustedMessage(c.nc.LocalAddr())))
			}
			continue
		}
		c.srv.wg.Add(1)
		go c.call(req)
	}
}

func (c *conn) readFailed(h protocol.Header, err error) {
	select {
	case <-c.done:
		return // closed by us
	default:
	}
	if errors.Is(err, io.EOF) {
		return
	}
	c.srv.logger.Warn("provider: closing connection after a bad frame", "remote", c.nc.RemoteAddr().String(), "err", err)
	if errors.Is(err, protocol.ErrPayloadTooLarge) && h.Request && h.TwoWay {
		c.send(c.errorFrame(h.ID, protocol.StatusBadRequest, "Data length too large: "+strconv.Itoa(h.BodyLen)+", max payload: "+strconv.Itoa(c.srv.maxPayload)))
		c.finish()
		<-c.done // the writer flushes the answer, then closes
	}
}

func (c *conn) call(req *protocol.DecodedRequest) {
	defer c.srv.wg.Done()
	defer c.srv.endCall()
	resp := c.srv.invoke(c.srv.baseCtx, req, c)
	c.srv.requests.Add(1)
	if !req.TwoWay {
		return
	}
	resp.ID = req.ID
	c.send(c.responseFrame(resp))
}

// responseFrame encodes resp; one over the payload limit or that cannot be
// encoded is replaced by a BAD_RESPONSE, as Java does.
func (c *conn) responseFrame(resp *protocol.Response) []byte {
	e, _ := c.encoders.Get().(*hessian.Encoder)
	if e == nil {
		e = hessian.NewEncoder(nil)
	}
	defer c.encoders.Put(e)
	frame, err := protocol.AppendResponse(c.newFrame(), e, resp)
	if err != nil {
		return c.errorFrame(resp.ID, protocol.StatusBadResponse, "Failed to send response: "+err.Error())
	}
	if n := len(frame) - protocol.HeaderLen; n > c.srv.maxPayload {
		c.recycle(frame)
		return c.errorFrame(resp.ID, protocol.StatusBadResponse, "Data length too large: "+strconv.Itoa(n)+", max payload: "+strconv.Itoa(c.srv.maxPayload))
	}
	return frame
}

func (c *conn) errorFrame(id uint64, status protocol.Status, msg string) []byte {
	e := hessian.NewEncoder(nil)
	frame, _ := protocol.AppendResponse(c.newFrame(), e, &protocol.Response{ID: id, Status: status, ErrorMessage: msg})
	return frame
}

func (c *conn) newFrame() []byte {
	if p, ok := c.frames.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 512)
}

func (c *conn) recycle(f []byte) {
	if cap(f) <= maxPooledFrame {
		c.frames.Put(&f)
	}
}
