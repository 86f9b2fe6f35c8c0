package interop

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/test/peers"
)

// The Java names of dubbogoprovider's services (dubbogoprovider/service.go).
const (
	userService    = "org.dubbogw.interop.UserService"
	userVersion    = "1.0.0"
	greeterService = "org.dubbogw.interop.GreeterService"
	greeterGroup   = "blue"
	userClass      = "org.dubbogw.interop.User"
	bizException   = "org.dubbogw.interop.BizException"
)

// The provider's session timeout: a consumer connection the provider
// reads nothing from for this long is closed. Its heartbeats (every
// providerHeartbeat) keep a consumer that answers them connected.
const (
	providerHeartbeat      = 400 * time.Millisecond
	providerSessionTimeout = 2 * time.Second
)

// TestDubboGoProvider drives a real Apache dubbo-go v3.3.0 provider with
// dubbogw's client: typed and generic calls of every kind of method,
// exceptions, timeouts, groups and versions, attachments, multiplexing,
// the provider's own heartbeats, and its ZooKeeper registration.
func TestDubboGoProvider(t *testing.T) {
	zkAddr := zkAddress(t)
	p := startDubboGoProvider(t, providerConfig{
		ZK:             zkAddr,
		Heartbeat:      providerHeartbeat.String(),
		SessionTimeout: providerSessionTimeout.String(),
	})
	client := dubbo.New(dubbo.Options{})
	t.Cleanup(func() { closeClient(t, client) })

	t.Run("registry", func(t *testing.T) {
		if zkAddr == "" {
			t.Skip("DUBBOGW_TEST_ZK_ADDR is not set (scripts/test.sh starts a ZooKeeper; set CI to make this a failure)")
		}
		checkRegistration(t, zkAddr, p.Addr)
	})

	t.Run("overload", func(t *testing.T) {
		t.Skip("dubbo-go cannot export Java overloads: Go has no overloading and dubbo-go keys a service's methods by name alone " +
			"(common/rpc_service.go, suitableMethods); overload selection is proven against dubbo/provider and dubbo-remoting in test/peers/dubbo")
	})

	for _, c := range dubboGoCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := client.Invoke(ctx, p.Addr, c.inv)
			c.check(t, res, err)
		})
	}

	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		for _, generic := range []bool{false, true} {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			start := time.Now()
			_, err := client.Invoke(ctx, p.Addr, slow(2000, generic))
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("generic=%v: slow(2000) with a 100ms deadline: got %v, want context.DeadlineExceeded", generic, err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("generic=%v: the call returned %v after its 100ms deadline", generic, took)
			}
		}
		// dubbo-go drops a response over its getty max-msg-len (100 KiB by
		// default), logging "Data length ... too large": the consumer hears
		// nothing and meets its deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := client.Invoke(ctx, p.Addr, &dubbo.Invocation{Interface: userService, Version: userVersion,
			Method: "listUsers", ParamTypes: []string{"int"}, Args: []any{int32(5000)}})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("listUsers(5000), a 230 KiB answer dubbo-go does not send: got %v, want context.DeadlineExceeded", err)
		}
		// The connection stays usable: a slow call within its deadline
		// gets its own answer, not the late one of the call that gave up.
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := client.Invoke(ctx, p.Addr, slow(200, false))
		if err != nil {
			t.Fatalf("slow(200) after the timeouts: %v", err)
		}
		if res.Value != "slept 200ms" {
			t.Errorf("slow(200) after the timeouts = %#v, want \"slept 200ms\"", res.Value)
		}
	})

	t.Run("multiplexing", func(t *testing.T) {
		t.Parallel()
		// 200 calls at once on the client's one connection, some slow so
		// the provider answers out of order: each call gets its own answer.
		const n = 200
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				if i%10 == 0 {
					ms := int32(10 + i%50)
					res, err := client.Invoke(ctx, p.Addr, slow(ms, i%20 == 0))
					if err != nil {
						errs <- fmt.Errorf("slow(%d): %w", ms, err)
					} else if want := fmt.Sprintf("slept %dms", ms); res.Value != want {
						errs <- fmt.Errorf("slow(%d) = %#v, want %q", ms, res.Value, want)
					}
					return
				}
				id := fmt.Sprint(i)
				res, err := client.Invoke(ctx, p.Addr, &dubbo.Invocation{
					Interface: userService, Version: userVersion, Method: "getUser",
					ParamTypes: []string{"java.lang.String"}, Args: []any{id},
				})
				if err != nil {
					errs <- fmt.Errorf("getUser(%s): %w", id, err)
					return
				}
				o, ok := res.Value.(*hessian.Object)
				if !ok {
					errs <- fmt.Errorf("getUser(%s) = %T, want a %s", id, res.Value, userClass)
					return
				}
				if got, _ := o.Get("id"); got != id {
					errs <- fmt.Errorf("getUser(%s) answered the user %v: another call's response", id, got)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("provider heartbeats", func(t *testing.T) {
		t.Parallel()
		// The provider sends a heartbeat request every 400ms and closes a
		// connection it has read nothing from for 2s. A client that
		// answers the heartbeats keeps its connection through a longer
		// silence: the provider sees the same remote address before and
		// after it. (The wait is the silence under test, not a
		// synchronisation.)
		idle := dubbo.New(dubbo.Options{Heartbeat: time.Minute})
		defer closeClient(t, idle)
		before := whoami(t, idle, p.Addr)
		time.Sleep(2*providerSessionTimeout + providerHeartbeat)
		after := whoami(t, idle, p.Addr)
		if before != after {
			t.Errorf("the provider saw %s before %v of silence and %s after: it closed the connection, so the client did not answer its heartbeats", before, 2*providerSessionTimeout+providerHeartbeat, after)
		}
	})
}

// dubboGoCase is one call and what it must give.
type dubboGoCase struct {
	name  string
	inv   *dubbo.Invocation
	check func(t *testing.T, res *dubbo.Result, err error)
}

func dubboGoCases() []dubboGoCase {
	typed := func(method string, types []string, args ...any) *dubbo.Invocation {
		return &dubbo.Invocation{Interface: userService, Version: userVersion, Method: method, ParamTypes: types, Args: args}
	}
	generic := func(method string, types []string, args ...any) *dubbo.Invocation {
		inv := typed(method, types, args...)
		inv.Generic = true
		return inv
	}
	when := time.UnixMilli(1700000000123).UTC()

	// The user getUser("7") builds, as dubbo-go-hessian2 writes a *User
	// (the hessian tags name the fields; a []string is a "[string" list) ...
	user7 := peers.Object(userClass,
		"id", peers.String("7"), "name", peers.String("user-7"), "age", peers.Int(30),
		"email", peers.String("7@example.org"), "tags", peers.List("[string", peers.String("a"), peers.String("b")))
	// ... and as dubbo-go's generic filter answers it: an untyped map with
	// a "class" key whose other keys are the Go field names with the first
	// letter lowered (ID → iD), the tags an untyped list (the generic
	// filter makes every slice a []any, which dubbo-go-hessian2 writes
	// untyped).
	genericUser := func(id, name string, age int32, email string, tags ...string) *peers.Desc {
		items := make([]*peers.Desc, len(tags))
		for i, tag := range tags {
			items[i] = peers.String(tag)
		}
		return peers.Map("",
			peers.String("age"), peers.Int(age),
			peers.String("class"), peers.String(userClass),
			peers.String("email"), peers.String(email),
			peers.String("iD"), peers.String(id),
			peers.String("name"), peers.String(name),
			peers.String("tags"), peers.List("", items...))
	}
	ann := &hessian.Object{Class: userClass, Fields: []hessian.Field{
		{Name: "id", Value: ""}, {Name: "name", Value: "Ann"}, {Name: "age", Value: int32(41)},
		{Name: "email", Value: "ann@example.org"}, {Name: "tags", Value: &hessian.List{Items: []any{"x", "y"}}},
	}}
	annMap := &hessian.Map{Entries: []hessian.Entry{
		{Key: "class", Value: userClass}, {Key: "name", Value: "Ann"}, {Key: "age", Value: int32(41)},
		{Key: "email", Value: "ann@example.org"}, {Key: "tags", Value: &hessian.List{Items: []any{"x", "y"}}},
	}}
	scores := &hessian.Map{Entries: []hessian.Entry{{Key: "ann", Value: int32(1)}, {Key: "bob", Value: int32(2)}}}
	parts := &hessian.List{Items: []any{"a", "b", "c"}}

	// Streamed arguments (WriteArgs), the way the gateway writes JSON
	// straight into the request: Ann as an object, and as a generic map.
	streamed := func(inv *dubbo.Invocation, write func(e *hessian.Encoder)) *dubbo.Invocation {
		inv.Args = nil
		inv.WriteArgs = func(e *hessian.Encoder) error { write(e); return nil }
		return inv
	}
	writeAnn := func(e *hessian.Encoder) {
		e.WriteObjectStart(userClass, []string{"id", "name", "age", "email", "tags"})
		e.WriteString("")
		e.WriteString("Ann")
		e.WriteInt(41)
		e.WriteString("ann@example.org")
		e.WriteListStart("", -1)
		e.WriteString("x")
		e.WriteString("y")
		e.WriteListEnd()
	}
	writeAnnMap := func(e *hessian.Encoder) {
		e.WriteMapStart("")
		for _, kv := range [][2]string{{"class", userClass}, {"name", "Ann"}, {"email", "ann@example.org"}} {
			e.WriteString(kv[0])
			e.WriteString(kv[1])
		}
		e.WriteString("age")
		e.WriteInt(41)
		e.WriteString("tags")
		e.WriteListStart("", 2)
		e.WriteString("x")
		e.WriteString("y")
		e.WriteMapEnd()
	}

	str := []string{"java.lang.String"}
	return []dubboGoCase{
		{"typed/streamed args", streamed(typed("createUser", []string{userClass}), writeAnn), wantValue(peers.Object(userClass,
			"id", peers.String("new-Ann"), "name", peers.String("Ann"), "age", peers.Int(41),
			"email", peers.String("ann@example.org"), "tags", peers.List("[string", peers.String("x"), peers.String("y"))))},
		{"generic/streamed args", streamed(generic("createUser", []string{userClass}), writeAnnMap),
			wantValue(genericUser("new-Ann", "Ann", 41, "ann@example.org", "x", "y"))},
		{"typed/pojo out", typed("getUser", str, "7"), wantValue(user7)},
		{"typed/null out", typed("getUser", str, "missing"), wantValue(peers.Null())},
		{"typed/pojo in and out", typed("createUser", []string{userClass}, ann), wantValue(peers.Object(userClass,
			"id", peers.String("new-Ann"), "name", peers.String("Ann"), "age", peers.Int(41),
			"email", peers.String("ann@example.org"), "tags", peers.List("[string", peers.String("x"), peers.String("y"))))},
		{"typed/list out", typed("listUsers", []string{"int"}, int32(2)), wantValue(peers.List("[org.dubbogw.interop.User",
			userOf("0"), userOf("1")))},
		// About 94 KiB: dubbo-go's getty session writes at most 100 KiB
		// (max-msg-len 102400); see "deadline" for a bigger answer.
		{"typed/large list out", typed("listUsers", []string{"int"}, int32(2000)), wantUsers(2000)},
		{"typed/list in", typed("join", []string{"java.util.List", "java.lang.String"}, parts, "-"), wantValue(peers.String("a-b-c"))},
		{"typed/map in and out", typed("addBonus", []string{"java.util.Map", "int"}, scores, int32(10)), wantValue(peers.Map("",
			peers.String("ann"), peers.Int(11), peers.String("bob"), peers.Int(12)))},
		{"typed/longs", typed("add", []string{"long", "long"}, int64(1)<<40, int64(2)), wantValue(peers.Long(1<<40 + 2))},
		{"typed/date", typed("shift", []string{"java.util.Date", "long"}, when, int64(1000)), wantValue(peers.Date(1700000001123))},
		{"typed/zero args", typed("greet", nil), wantValue(peers.String("hello from dubbo-go"))},
		{"typed/exception", typed("fail", str, "no stock"), wantException(bizException, "no stock")},
		{"typed/go error", typed("crash", str, "disk"), wantException("java.lang.Throwable", "crash: disk")},
		{"typed/attachments", withAttachments(typed("greet", nil), map[string]string{"trace-id": "t-42"}), wantAttachment("trace-id", "t-42")},
		{"typed/group", &dubbo.Invocation{Interface: greeterService, Group: greeterGroup, Method: "hello", ParamTypes: str, Args: []any{"Bo"}},
			wantValue(peers.String("hello Bo from group blue"))},

		{"generic/pojo out", generic("getUser", str, "7"), wantValue(genericUser("7", "user-7", 30, "7@example.org", "a", "b"))},
		{"generic/null out", generic("getUser", str, "missing"), wantValue(peers.Null())},
		{"generic/pojo in and out", generic("createUser", []string{userClass}, annMap), wantValue(genericUser("new-Ann", "Ann", 41, "ann@example.org", "x", "y"))},
		{"generic/list out", generic("listUsers", []string{"int"}, int32(2)), wantValue(peers.List("",
			genericUser("0", "user-0", 30, "0@example.org", "a", "b"), genericUser("1", "user-1", 30, "1@example.org", "a", "b")))},
		{"generic/list in", generic("join", []string{"java.util.List", "java.lang.String"}, parts, "+"), wantValue(peers.String("a+b+c"))},
		{"generic/map in and out", generic("addBonus", []string{"java.util.Map", "int"}, scores, int32(5)), wantValue(peers.Map("",
			peers.String("ann"), peers.Int(6), peers.String("bob"), peers.Int(7)))},
		{"generic/longs", generic("add", []string{"long", "long"}, int64(-5), int64(1)<<40), wantValue(peers.Long(1<<40 - 5))},
		// dubbo-go's generic filter turns every struct result into a map of
		// its exported fields; time.Time has none, so a date comes back as
		// an empty map. A dubbo-go quirk, not a wire error.
		{"generic/date", generic("shift", []string{"java.util.Date", "long"}, when, int64(1000)), wantValue(peers.Map(""))},
		{"generic/zero args", generic("greet", nil), wantValue(peers.String("hello from dubbo-go"))},
		{"generic/exception", generic("fail", str, "no stock"), wantException(bizException, "no stock")},
		{"generic/group", &dubbo.Invocation{Interface: greeterService, Group: greeterGroup, Method: "hello", ParamTypes: str, Args: []any{"Cy"}, Generic: true},
			wantValue(peers.String("hello Cy from group blue"))},

		// dubbo-go answers what Java answers with a status (service or
		// method not found) as an exception response: a java.lang.Throwable
		// carrying its error text.
		{"error/unknown method", typed("nosuch", str, "x"), wantException("java.lang.Throwable", "cannot find method [nosuch]")},
		{"error/wrong version", &dubbo.Invocation{Interface: userService, Version: "9.9.9", Method: "greet"},
			wantException("java.lang.Throwable", "don't have this exporter")},
		{"error/missing group", &dubbo.Invocation{Interface: greeterService, Method: "hello", ParamTypes: str, Args: []any{"Di"}},
			wantException("java.lang.Throwable", "don't have this exporter")},
	}
}

// userOf is the user getUser(id) builds, as dubbo-go-hessian2 writes it.
func userOf(id string) *peers.Desc {
	return peers.Object(userClass,
		"id", peers.String(id), "name", peers.String("user-"+id), "age", peers.Int(30),
		"email", peers.String(id+"@example.org"), "tags", peers.List("[string", peers.String("a"), peers.String("b")))
}

func slow(ms int32, generic bool) *dubbo.Invocation {
	return &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "slow",
		ParamTypes: []string{"int"}, Args: []any{ms}, Generic: generic}
}

func withAttachments(inv *dubbo.Invocation, a map[string]string) *dubbo.Invocation {
	inv.Attachments = a
	return inv
}

// wantValue checks the call succeeded with want. Maps are compared with
// their entries sorted: dubbo-go-hessian2 writes a Go map in Go's random
// iteration order.
func wantValue(want *peers.Desc) func(*testing.T, *dubbo.Result, error) {
	return func(t *testing.T, res *dubbo.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("call failed: %v", err)
		}
		got, derr := peers.Describe(res.Value)
		if derr != nil {
			t.Fatalf("describing the result %#v: %v", res.Value, derr)
		}
		w := peers.Canonical(peers.SortEntries(want, ""))
		g := peers.Canonical(peers.SortEntries(got, ""))
		if d := peers.Diff(w, g); d != "" {
			t.Errorf("result differs: %s", d)
		}
	}
}

// wantUsers checks the call returned n users, getUser(0) to getUser(n-1):
// a response of several hundred KiB, read over many TCP reads.
func wantUsers(n int) func(*testing.T, *dubbo.Result, error) {
	return func(t *testing.T, res *dubbo.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("call failed: %v", err)
		}
		l, ok := res.Value.(*hessian.List)
		if !ok || len(l.Items) != n {
			t.Fatalf("got %T, want a list of %d users", res.Value, n)
		}
		for i, it := range l.Items {
			got, err := peers.Describe(it)
			if err != nil {
				t.Fatal(err)
			}
			if d := peers.Diff(peers.Canonical(userOf(fmt.Sprint(i))), peers.Canonical(got)); d != "" {
				t.Fatalf("user %d differs: %s", i, d)
			}
		}
	}
}

// wantException checks the call failed with a *dubbo.BusinessError carrying
// an exception of class whose message contains message.
func wantException(class, message string) func(*testing.T, *dubbo.Result, error) {
	return func(t *testing.T, res *dubbo.Result, err error) {
		t.Helper()
		var be *dubbo.BusinessError
		if !errors.As(err, &be) {
			t.Fatalf("got (%v, %v), want a *dubbo.BusinessError (%s: %s)", res, err, class, message)
		}
		if be.Exception == nil {
			t.Fatalf("the BusinessError carries no exception; raw: %#v", be.Raw)
		}
		if be.Exception.Class != class || !strings.Contains(be.Exception.Message, message) {
			t.Errorf("exception %s: %q, want %s with %q", be.Exception.Class, be.Exception.Message, class, message)
		}
		var he *hessian.Exception
		if !errors.As(err, &he) {
			t.Errorf("errors.As does not find the *hessian.Exception in %v", err)
		}
	}
}

// wantAttachment checks the provider sent the attachment back: dubbo-go
// answers with the request's attachments (response kinds 3/4/5, as the
// request said dubbo 2.0.2).
func wantAttachment(key, value string) func(*testing.T, *dubbo.Result, error) {
	return func(t *testing.T, res *dubbo.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("call failed: %v", err)
		}
		if got := res.Attachments[key]; got != value {
			t.Errorf("attachment %q = %#v, want %q (all: %v)", key, got, value, res.Attachments)
		}
	}
}

func whoami(t *testing.T, c *dubbo.Client, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.Invoke(ctx, addr, &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "whoami"})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	s, ok := res.Value.(string)
	if !ok || s == "" {
		t.Fatalf("whoami = %#v, want the caller's address", res.Value)
	}
	return s
}

func closeClient(t *testing.T, c *dubbo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Errorf("closing a client: %v", err)
	}
}

// checkRegistration checks the provider's nodes in ZooKeeper: the
// interface-level provider URLs (what Java consumers and dubbogw read)
// and the application-level instance dubbo-go registers by default.
func checkRegistration(t *testing.T, zkAddr, providerAddr string) {
	conn, events, err := zk.Connect([]string{zkAddr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(silentLogger{}))
	if err != nil {
		t.Fatalf("connecting to ZooKeeper at %s: %v", zkAddr, err)
	}
	defer conn.Close()
	deadline := time.After(10 * time.Second)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			t.Fatalf("no ZooKeeper session with %s after 10s", zkAddr)
		}
	}

	for _, svc := range []struct{ iface, want string }{
		{userService, "version=" + userVersion},
		{greeterService, "group=" + greeterGroup},
	} {
		path := "/dubbo/" + svc.iface + "/providers"
		children, _, err := conn.Children(path)
		if err != nil {
			t.Errorf("listing %s: %v", path, err)
			continue
		}
		prefix := "dubbo://" + providerAddr + "/" + svc.iface + "?"
		found := false
		for _, child := range children {
			u, err := url.QueryUnescape(child)
			if err != nil {
				t.Errorf("%s/%s is not a URL-encoded URL: %v", path, child, err)
				continue
			}
			if strings.HasPrefix(u, prefix) {
				found = true
				if !strings.Contains(u, svc.want) || !strings.Contains(u, "serialization=hessian2") {
					t.Errorf("%s registered as %s, want %s and serialization=hessian2", svc.iface, u, svc.want)
				}
			}
		}
		if !found {
			t.Errorf("no %s* under %s (children: %v)", prefix, path, children)
		}
	}

	instance := "/services/dubbogw-interop-provider/" + providerAddr
	if ok, _, err := conn.Exists(instance); err != nil || !ok {
		t.Errorf("application-level instance %s: exists=%v err=%v", instance, ok, err)
	}
}

// silentLogger keeps go-zookeeper's connection chatter out of test output.
type silentLogger struct{}

func (silentLogger) Printf(string, ...any) {}
