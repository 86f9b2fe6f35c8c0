package zk

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// answers counts the answers of asynchronous requests: each must come
// exactly once.
type answers struct {
	mu   sync.Mutex
	errs map[int][]error
	all  chan struct{} // closed when want requests have an answer
	want int
}

func newAnswers(want int) *answers {
	return &answers{errs: make(map[int][]error), all: make(chan struct{}), want: want}
}

func (a *answers) answer(i int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs[i] = append(a.errs[i], err)
	if len(a.errs) == a.want && len(a.errs[i]) == 1 {
		close(a.all)
	}
}

// await waits for every answer, then a little longer for a second one.
func (a *answers) await(t *testing.T, within time.Duration) map[int][]error {
	t.Helper()
	select {
	case <-a.all:
	case <-time.After(within):
		a.mu.Lock()
		defer a.mu.Unlock()
		t.Fatalf("%d of %d requests answered within %v", len(a.errs), a.want, within)
	}
	time.Sleep(200 * time.Millisecond)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, errs := range a.errs {
		if len(errs) != 1 {
			t.Errorf("request %d answered %d times: %v", i, len(errs), errs)
		}
	}
	return a.errs
}

// TestAsyncReads checks ChildrenAsync, GetAsync and ExistsAsync against a
// real ZooKeeper: their results, the watches they set (events on the
// callback) and not set, and a missing node.
func TestAsyncReads(t *testing.T) {
	events := make(chan Event, 16)
	c, _, err := Connect([]string{testenv.ZooKeeperAddr(t)}, 10*time.Second, WithLogInfo(false), WithLogger(quiet{}),
		WithoutWatchChannels(),
		WithEventCallback(func(ev Event) {
			if ev.Type != EventSession {
				events <- ev
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := fmt.Sprintf("/dubbogw-zk-async-%016x", rand.Uint64())
	if _, err := c.Create(path, []byte("parent"), 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(path+"/b", -1); _ = c.Delete(path+"/a", -1); _ = c.Delete(path, -1) }()
	if _, err := c.Create(path+"/a", []byte("x"), 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}

	type result struct {
		children []string
		data     []byte
		exists   bool
		watched  bool
		err      error
	}
	do := func(start func(done func(result))) result {
		t.Helper()
		ch := make(chan result, 2)
		start(func(r result) { ch <- r })
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no answer within 10 s")
		}
		return result{}
	}
	children := func(p string, watch bool) result {
		return do(func(done func(result)) {
			c.ChildrenAsync(p, watch, func(children []string, w <-chan Event, err error) {
				done(result{children: children, watched: w != nil, err: err})
			})
		})
	}
	get := func(p string, watch bool) result {
		return do(func(done func(result)) {
			c.GetAsync(p, watch, func(data []byte, w <-chan Event, err error) {
				done(result{data: data, watched: w != nil, err: err})
			})
		})
	}
	exists := func(p string, watch bool) result {
		return do(func(done func(result)) {
			c.ExistsAsync(p, watch, func(exists bool, w <-chan Event, err error) {
				done(result{exists: exists, watched: w != nil, err: err})
			})
		})
	}
	expectEvent := func(typ EventType, p string) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Type != typ || ev.Path != p {
				t.Fatalf("event %v on %s, want %v on %s", ev.Type, ev.Path, typ, p)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event on %s within 10 s", typ, p)
		}
	}
	noEvent := func() {
		t.Helper()
		select {
		case ev := <-events:
			t.Fatalf("unexpected event %v on %s", ev.Type, ev.Path)
		case <-time.After(300 * time.Millisecond):
		}
	}

	if r := children(path, false); r.err != nil || !slices.Equal(r.children, []string{"a"}) || r.watched {
		t.Fatalf("ChildrenAsync without a watch: %+v", r)
	}
	if r := get(path+"/a", false); r.err != nil || string(r.data) != "x" || r.watched {
		t.Fatalf("GetAsync without a watch: %+v", r)
	}
	if r := get(path+"/missing", true); !errors.Is(r.err, ErrNoNode) || r.watched {
		t.Fatalf("GetAsync of a missing node: %+v", r)
	}
	if r := exists(path+"/a", false); r.err != nil || !r.exists || r.watched {
		t.Fatalf("ExistsAsync without a watch: %+v", r)
	}
	// Nothing was watched so far: a change fires nothing.
	if _, err := c.Set(path+"/a", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	noEvent()

	if r := children(path, true); r.err != nil || !slices.Equal(r.children, []string{"a"}) || !r.watched {
		t.Fatalf("ChildrenAsync with a watch: %+v", r)
	}
	if r := get(path+"/a", true); r.err != nil || string(r.data) != "y" || !r.watched {
		t.Fatalf("GetAsync with a watch: %+v", r)
	}
	if r := exists(path+"/b", true); r.err != nil || r.exists || !r.watched {
		t.Fatalf("ExistsAsync of a missing node with a watch: %+v", r)
	}
	if _, err := c.Set(path+"/a", []byte("z"), -1); err != nil {
		t.Fatal(err)
	}
	expectEvent(EventNodeDataChanged, path+"/a")
	if _, err := c.Create(path+"/b", nil, 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}
	// One creation fires both the exists watch on b and the child watch.
	got := map[EventType]string{}
	for range 2 {
		select {
		case ev := <-events:
			got[ev.Type] = ev.Path
		case <-time.After(10 * time.Second):
			t.Fatalf("events after creating b: %v", got)
		}
	}
	if got[EventNodeCreated] != path+"/b" || got[EventNodeChildrenChanged] != path {
		t.Fatalf("events after creating b: %v", got)
	}
	noEvent()
}

// TestAsyncAnsweredOnceOnClose checks that every asynchronous request is
// answered exactly once when the client closes with requests in the
// server, and with requests not yet sent.
func TestAsyncAnsweredOnceOnClose(t *testing.T) {
	t.Run("in the server", func(t *testing.T) {
		c, _, err := Connect([]string{testenv.ZooKeeperAddr(t)}, 10*time.Second, WithLogInfo(false), WithLogger(quiet{}),
			WithSendQueueSize(256))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Sync("/"); err != nil { // a session, so requests go out at once
			t.Fatal(err)
		}
		const n = 200
		a := newAnswers(n)
		for i := range n {
			c.GetAsync("/", false, func(_ []byte, _ <-chan Event, err error) { a.answer(i, err) })
		}
		c.Close()
		for i, errs := range a.await(t, 10*time.Second) {
			if err := errs[0]; err != nil && !errors.Is(err, ErrClosing) && !errors.Is(err, ErrConnectionClosed) {
				t.Errorf("request %d: %v", i, err)
			}
		}
	})

	t.Run("not sent", func(t *testing.T) {
		// A server that accepts and never answers: the session never
		// starts, and requests wait in the send queue.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 4)
		go func() {
			for {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- nc
			}
		}()
		c, _, err := Connect([]string{ln.Addr().String()}, 10*time.Second, WithLogInfo(false), WithLogger(quiet{}),
			WithSendQueueSize(2))
		if err != nil {
			t.Fatal(err)
		}
		var server net.Conn
		select {
		case server = <-accepted:
		case <-time.After(10 * time.Second):
			t.Fatal("the client did not connect")
		}
		a := newAnswers(3)
		for i := range 3 {
			c.ChildrenAsync("/", true, func(_ []string, _ <-chan Event, err error) { a.answer(i, err) })
		}
		// The third found the queue full, and was answered at once.
		a.mu.Lock()
		if errs := a.errs[2]; len(errs) != 1 || !errors.Is(errs[0], ErrSendQueueFull) {
			t.Errorf("the request past the queue's size: %v, want %v", errs, ErrSendQueueFull)
		}
		if len(a.errs) != 1 {
			t.Errorf("answers before the client closed: %v", a.errs)
		}
		a.mu.Unlock()

		var closed atomic.Bool
		go func() { c.Close(); closed.Store(true) }()
		time.Sleep(100 * time.Millisecond)
		server.Close() // the handshake fails: the client, told to quit, flushes its queue
		for i, errs := range a.await(t, 10*time.Second) {
			if i < 2 && !errors.Is(errs[0], ErrClosing) && !errors.Is(errs[0], ErrConnectionClosed) {
				t.Errorf("request %d: %v, want it closed", i, errs[0])
			}
		}
		// Close waits at most a second or two for its own request.
		deadline := time.Now().Add(10 * time.Second)
		for !closed.Load() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !closed.Load() {
			t.Error("Close did not return")
		}
	})
}

// TestAsyncInOrder checks that asynchronous requests are written in the
// order they were made, whether queueAsync writes them itself or queues
// them behind requests still in the send queue. A real ZooKeeper answers
// in the order it received, so the answers must come in order. The
// first requests are made to queue (as if one were waiting in the queue
// already); the next are made at once after, while the queue drains; the
// last once it has drained, and so are written directly.
func TestAsyncInOrder(t *testing.T) {
	c, _, err := Connect([]string{testenv.ZooKeeperAddr(t)}, 10*time.Second, WithLogInfo(false), WithLogger(quiet{}),
		WithSendQueueSize(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Sync("/"); err != nil { // a session, so requests go out at once
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		order   []int
		errs    []error
		answers sync.WaitGroup
	)
	n := 0
	ask := func(k int) {
		for range k {
			answers.Add(1)
			i := n
			n++
			c.GetAsync("/", false, func(_ []byte, _ <-chan Event, err error) {
				mu.Lock()
				order = append(order, i)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				answers.Done()
			})
		}
	}
	c.unsent.Add(1) // one request waits in the queue: the next ones queue behind it
	ask(500)
	c.unsent.Add(-1)
	ask(500)
	deadline := time.Now().Add(10 * time.Second)
	for c.unsent.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	queued := n - int(c.directSends.Load())
	ask(500)

	answered := make(chan struct{})
	go func() { answers.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d requests not all answered within 30s", n)
	}
	time.Sleep(100 * time.Millisecond) // a second answer would come now
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("%d requests failed, the first: %v", len(errs), errs[0])
	}
	if len(order) != n {
		t.Errorf("%d answers to %d requests", len(order), n)
	}
	for k := 1; k < len(order); k++ {
		if order[k] <= order[k-1] {
			t.Fatalf("answer %d is of request %d, after request %d's: requests were written out of order", k, order[k], order[k-1])
		}
	}
	if direct := int(c.directSends.Load()); queued < 500 || direct < 500 {
		t.Errorf("%d requests queued, %d written directly: want at least 500 each", queued, direct)
	}
	t.Logf("%d of %d requests queued", queued, n)
}
