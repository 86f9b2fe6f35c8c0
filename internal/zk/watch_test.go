package zk

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// TestWithoutWatchChannels checks, against a real ZooKeeper, the option
// this copy adds: a watch is recorded without a channel of its own, its
// event reaches the callback, it is re-set on the server after the
// connection drops, and a path watched twice is still one record.
func TestWithoutWatchChannels(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	var mu sync.Mutex
	var events []Event
	var conns []net.Conn
	c, _, err := Connect([]string{addr}, 10*time.Second, WithLogInfo(false), WithLogger(quiet{}),
		WithoutWatchChannels(),
		WithEventCallback(func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		}),
		WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			nc, err := net.DialTimeout(network, address, timeout)
			if err == nil {
				mu.Lock()
				conns = append(conns, nc)
				mu.Unlock()
			}
			return nc, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := fmt.Sprintf("/dubbogw-zk-watch-%016x", rand.Uint64())
	if _, err := c.Create(path, nil, 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(path+"/b", -1); _ = c.Delete(path+"/a", -1); _ = c.Delete(path, -1) }()

	fired := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			got := 0
			for _, ev := range events {
				if ev.Type == EventNodeChildrenChanged && ev.Path == path {
					got++
				}
			}
			return got >= n
		}
	}
	record := func() []chan Event {
		c.watchersLock.Lock()
		defer c.watchersLock.Unlock()
		return c.watchers[watchPathType{path, watchTypeChild}]
	}

	_, _, ch, err := c.ChildrenW(path)
	if err != nil || ch == nil {
		t.Fatalf("ChildrenW: channel %v, %v", ch, err)
	}
	_, _, ch2, err := c.ChildrenW(path)
	if err != nil || ch2 != ch {
		t.Fatalf("second ChildrenW: %v, %v: want the shared channel", ch2, err)
	}
	if w := record(); len(w) != 1 || w[0] != nil {
		t.Fatalf("record %v, want one entry without a channel", w)
	}
	if _, err := c.Create(path+"/a", nil, 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the children event on the callback", fired(1))
	if w := record(); w != nil {
		t.Errorf("record %v after the watch fired, want none", w)
	}
	select {
	case ev := <-ch:
		t.Errorf("the shared channel received %+v", ev)
	default:
	}

	// Set again, then the connection drops: the client sets the watch
	// again on the session (SetWatches), and the next change fires it.
	if _, _, _, err := c.ChildrenW(path); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	first := conns[len(conns)-1]
	mu.Unlock()
	_ = first.Close()
	testenv.WaitFor(t, 20*time.Second, "a new connection with the session", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(conns) > 1 && c.State() == StateHasSession
	})
	if _, err := c.Create(path+"/b", nil, 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the watch set again after the reconnection to fire", fired(2))
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// TestPacketsLargerThanTheFirstBuffer writes and reads a node bigger than
// the send and receive buffers a connection starts with (sendBufferStart,
// recvBufferStart), and small ones around it, through the buffered reader;
// a request larger than the largest buffer is refused.
func TestPacketsLargerThanTheFirstBuffer(t *testing.T) {
	c, _, err := Connect([]string{testenv.ZooKeeperAddr(t)}, 10*time.Second, WithLogInfo(false), WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := fmt.Sprintf("/dubbogw-zk-large-%016x", rand.Uint64())
	big := make([]byte, 3*recvBufferStart+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if _, err := c.Create(path, big, 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(path, -1) }()
	for range 3 {
		data, _, err := c.Get(path)
		if err != nil || !bytes.Equal(data, big) {
			t.Fatalf("read %d bytes (%v), want the %d written", len(data), err, len(big))
		}
		if ok, _, err := c.Exists("/"); err != nil || !ok {
			t.Fatalf("a small read after a large one: %v, %v", ok, err)
		}
	}
	if _, err := c.Set(path, make([]byte, c.sendBufferMax), -1); err != ErrShortBuffer {
		t.Errorf("a request over the largest send buffer: %v, want ErrShortBuffer", err)
	}
	if data, _, err := c.Get(path); err != nil || !bytes.Equal(data, big) {
		t.Errorf("after the refused request: %d bytes (%v)", len(data), err)
	}
}
