package testenv

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one address. A test points
// a client at Addr and calls Pause to make the address unreachable — open
// connections are cut and new ones are closed as soon as they are
// accepted — and Resume to forward again. Kept paused past a ZooKeeper
// session timeout, it makes the server expire the client's session.
// SetDelay makes the target slow instead: every reply is held back.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	delay atomic.Int64 // nanoseconds each chunk from the target is held

	mu     sync.Mutex
	paused bool
	closed bool
	conns  map[net.Conn]struct{}
}

// StartProxy starts a proxy to target on a free loopback port; it is
// closed when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy to %s: %v", target, err)
	}
	p := &Proxy{target: target, ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Pause cuts every open connection and refuses to forward new ones until
// Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
	p.cutLocked()
}

// SetDelay holds every chunk the target sends for d before forwarding it
// (each chunk d after it arrived, in order; replies do not queue behind
// each other's delays), as a slow server looks to its clients. 0 ends it.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Resume forwards new connections again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.cutLocked()
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) cutLocked() {
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward pipes one client connection to the target until either side
// closes or the proxy cuts it.
func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		client.Close()
		return
	}
	upstream, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil || !p.track(upstream) {
		if upstream != nil {
			upstream.Close()
		}
		p.untrack(client)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go func() {
		p.delayedCopy(client, upstream)
		done <- struct{}{}
	}()
	<-done
	// One direction ended: end both, which also ends the other copy.
	p.untrack(client)
	p.untrack(upstream)
	<-done
}

// track registers c so that Pause can cut it; it refuses while paused.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused || p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// delayedCopy copies src to dst, each chunk held for the delay in force
// when it was read.
func (p *Proxy) delayedCopy(dst, src net.Conn) {
	type chunk struct {
		data []byte
		due  time.Time
	}
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		if wait := time.Until(c.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			src.Close() // stops the reader, which closes chunks
			for range chunks {
			}
			return
		}
	}
}
