// Package dubbo_test proves dubbogw's in-process provider (dubbo/provider)
// against a Dubbo consumer nobody here wrote: npm's dubbo-remoting (the
// dubbo protocol codec of sofa-rpc-node, over hessian.js), driven by
// ../node-dubbo/peer.js. Frames the npm client writes must decode in our
// server to the values it meant, and our responses, exceptions, nulls,
// heartbeat answers and readonly event must decode there.
//
// dubbo-remoting 2.1.4's ways, as met here: it writes the dubbo version
// "5.3.0" into every request unless the caller sets the "dubbo" attachment,
// so a provider following Java's rule (attachments only for 2.0.2 - 2.0.99)
// answers it without attachments; it always sends the attachments path and
// group (empty when none); it derives the parameter descriptor from the
// JavaScript values, so a value passed to an Object parameter needs
// "$abstractClass": "java.lang.Object"; a byte[] must be {"$class": "byte",
// "isArray": true} ({"$class": "[byte"} with a Buffer fails to encode);
// hessian.js writes a java.util.Map untyped; its decoder does not tell a
// response's status, so peer.js reads the status byte itself. As a provider (not used here) it
// writes a falsy result (0, false, "", null) without the response-kind
// byte, which is an invalid frame.
package dubbo_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/test/peers"
)

// The echo service: echo(String key, Object value) records the value the
// server decoded under key and returns it, so a test sees both directions.
const (
	echoService = "org.dubbogw.peers.EchoService"
	echoVersion = "1.0.0"
)

type echoed struct {
	mu   sync.Mutex
	seen map[string]any
}

func (e *echoed) service() provider.Service {
	return provider.Service{Interface: echoService, Version: echoVersion, Methods: map[string][]provider.Method{
		"echo": {{ParamTypes: []string{"java.lang.String", "java.lang.Object"}, Func: func(_ context.Context, args []any) (any, error) {
			key, _ := args[0].(string)
			e.mu.Lock()
			defer e.mu.Unlock()
			e.seen[key] = args[1]
			return args[1], nil
		}}},
	}}
}

func (e *echoed) get(key string) (any, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.seen[key]
	return v, ok
}

func TestDubboRemoting(t *testing.T) {
	echo := &echoed{seen: map[string]any{}}
	srv := provider.NewServer(nil)
	for _, svc := range demo.DubboServices() {
		srv.Register(svc)
	}
	srv.Register(echo.service())
	ln, err := srv.Listen(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Close(ctx)
		}
	})
	h := startHarness(t, ln.String())

	userCall := func(method string, args ...any) call {
		if args == nil {
			args = []any{}
		}
		return call{Service: demo.UserInterface, Method: method, Args: args}
	}

	t.Run("demo", func(t *testing.T) {
		// Raw JSON keeps the fields in the Java class's order (hessian.js
		// writes an object's fields in its keys' order).
		user := json.RawMessage(`{"$class":"` + demo.UserClass + `","$":{"id":"u-9","name":"Ann","age":{"$class":"int","$":41},"email":"ann@example.org"}}`)
		users := &hessian.List{Items: []any{demo.User("1"), demo.User("2"), demo.User("3")}}
		for _, c := range []struct {
			name string
			call call
			want any // the value in our model, as the provider answers it
		}{
			{"pojo out", userCall("getUser", "42"), demo.User("42")},
			{"list out", userCall("listUsers", 3), users},
			{"pojo in and out", userCall("createUser", user), &hessian.Object{Class: demo.UserClass, Fields: []hessian.Field{
				{Name: "id", Value: "u-9"}, {Name: "name", Value: "Ann"}, {Name: "age", Value: int32(41)}, {Name: "email", Value: "ann@example.org"}}}},
			{"zero args", userCall("greet"), "Hello, world"},
			{"overload", userCall("greet", "Bo"), "Hello, Bo"},
			{"slow", userCall("slow", 30), "slept 30ms"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := h.call(t, c.call)
				wantOK(t, r, c.want)
			})
		}
	})

	t.Run("exception", func(t *testing.T) {
		r := h.call(t, userCall("fail", "no stock"))
		wantException(t, r, demo.ExceptionClass, "no stock")
	})

	t.Run("unknown method", func(t *testing.T) {
		r := h.call(t, userCall("nosuch", "x"))
		if r.OK || r.Status != 20 {
			t.Fatalf("got ok=%v status=%d, want an exception response (status 20)", r.OK, r.Status)
		}
		x := exceptionOf(t, r)
		if x.Class == "" || !strings.Contains(x.Message, "nosuch") {
			t.Errorf("exception %s: %q, want one naming the method nosuch", x.Class, x.Message)
		}
	})

	t.Run("unknown service", func(t *testing.T) {
		r := h.call(t, call{Service: "org.example.Nothing", Method: "x", Args: []any{}})
		if r.OK || r.Status != 60 {
			t.Fatalf("got ok=%v status=%d, want status 60 (SERVICE_NOT_FOUND)", r.OK, r.Status)
		}
		// A non-OK body is a plain string; dubbo-remoting makes an Error of it.
		x := exceptionOf(t, r)
		if !strings.Contains(x.Message, "org.example.Nothing") {
			t.Errorf("error message %q does not name the service", x.Message)
		}
	})

	t.Run("generic", func(t *testing.T) {
		generic := func(method string, types []string, args ...any) call {
			if args == nil {
				args = []any{}
			}
			if types == nil {
				types = []string{}
			}
			return call{Service: demo.UserInterface, Method: "$invoke", Props: map[string]string{"generic": "true"},
				Args: []any{method,
					map[string]any{"$class": "[java.lang.String", "$": types},
					map[string]any{"$class": "[java.lang.Object", "$": args}}}
		}
		// dubbo/provider answers objects as maps with a "class" key; hessian.js
		// shows a map as a plain object.
		userMap := func(id, name string, age int32, email string) any {
			return &hessian.Map{Entries: []hessian.Entry{
				{Key: "class", Value: demo.UserClass}, {Key: "id", Value: id},
				{Key: "name", Value: name}, {Key: "age", Value: age}, {Key: "email", Value: email}}}
		}
		r := h.call(t, generic("getUser", []string{"java.lang.String"}, "42"))
		wantOK(t, r, userMap("42", "user 42", 30, "42@example.com"))

		r = h.call(t, generic("createUser", []string{demo.UserClass},
			map[string]any{"class": demo.UserClass, "id": "g-1", "name": "Cy", "age": 22, "email": "cy@example.org"}))
		wantOK(t, r, userMap("g-1", "Cy", 22, "cy@example.org"))

		r = h.call(t, generic("greet", nil))
		wantOK(t, r, "Hello, world")

		r = h.call(t, generic("fail", []string{"java.lang.String"}, "generic boom"))
		wantException(t, r, demo.ExceptionClass, "generic boom")
	})

	t.Run("echo", func(t *testing.T) {
		// Each value is given to dubbo-remoting in js-to-java form, declared
		// as java.lang.Object ($abstractClass) so the descriptor matches
		// echo(String, Object) whatever the value's own type.
		object := func(class string, v any) map[string]any {
			return map[string]any{"$class": class, "$": v, "$abstractClass": "java.lang.Object"}
		}
		when := time.UnixMilli(1700000000123).UTC()
		for _, c := range []struct {
			key    string
			arg    any
			server *peers.Desc // what our server must decode
		}{
			{"int", object("int", 7), peers.Int(7)},
			{"int zero", object("int", 0), peers.Int(0)},
			{"negative int", object("int", -300000), peers.Int(-300000)},
			{"long", object("long", -5), peers.Long(-5)},
			{"long past 2^53", object("long", "9007199254740993"), peers.Long(9007199254740993)},
			{"double", object("double", 1.5), peers.Double(1.5)},
			{"false", object("boolean", false), peers.Bool(false)},
			{"true", object("boolean", true), peers.Bool(true)},
			{"empty string", object("java.lang.String", ""), peers.String("")},
			{"unicode", object("java.lang.String", "héllo, 世界 🎉"), peers.String("héllo, 世界 🎉")},
			{"long string", object("java.lang.String", strings.Repeat("dubbo ", 20000)), peers.String(strings.Repeat("dubbo ", 20000))},
			{"null", nil, peers.Null()},
			{"date", object("java.util.Date", map[string]any{"$date": when.UnixMilli()}), peers.Date(when.UnixMilli())},
			{"bytes", map[string]any{"$class": "byte", "isArray": true, "$abstractClass": "java.lang.Object",
				"$": map[string]any{"$bytes": base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff})}}, peers.Binary([]byte{0, 1, 2, 0xff})},
			{"list", object("java.util.List", []any{1, "two", nil}), peers.List("java.util.List", peers.Int(1), peers.String("two"), peers.Null())},
			// hessian.js writes a java.util.Map untyped, as Java writes a HashMap.
			{"map", object("java.util.Map", map[string]any{"a": 1, "b": "x"}), peers.Map("", peers.String("a"), peers.Int(1), peers.String("b"), peers.String("x"))},
			{"object", json.RawMessage(`{"$class":"` + demo.UserClass + `","$abstractClass":"java.lang.Object","$":{"id":"o-1","name":"Di","age":{"$class":"int","$":50},"email":"di@example.org"}}`),
				peers.Object(demo.UserClass, "id", peers.String("o-1"), "name", peers.String("Di"), "age", peers.Int(50), "email", peers.String("di@example.org"))},
			// An exception as a value: dubbo-remoting writes a JavaScript
			// Error as a java.lang.Exception with its stack; checked apart
			// below, since the stack is node's.
			{"exception", object("java.lang.Exception", map[string]any{"$error": "out of stock"}), nil},
		} {
			t.Run(c.key, func(t *testing.T) {
				r := h.call(t, call{Service: echoService, Version: echoVersion, Method: "echo", Args: []any{c.key, c.arg}})
				seen, ok := echo.get(c.key)
				if !ok {
					t.Fatalf("the server never ran echo(%q): %+v", c.key, r)
				}
				if c.server == nil {
					wantNodeError(t, seen, "Error: out of stock")
				} else {
					got, err := peers.Describe(seen)
					if err != nil {
						t.Fatalf("describing what the server decoded (%#v): %v", seen, err)
					}
					w, g := peers.Canonical(peers.SortEntries(c.server, "")), peers.Canonical(peers.SortEntries(got, ""))
					if d := peers.Diff(w, g); d != "" {
						t.Errorf("the server decoded another value than dubbo-remoting wrote: %s", d)
					}
				}
				// And dubbo-remoting reads our answer back as that value.
				wantOK(t, r, seen)
			})
		}
	})

	t.Run("response attachments", func(t *testing.T) {
		// dubbo-remoting says dubbo version "5.3.0" unless told otherwise;
		// Java providers (and dubbo/provider) answer attachments only to
		// 2.0.2 - 2.0.99. With "2.0.2" the answer is kind 4, with
		// attachments, and dubbo-remoting reads them.
		c := userCall("greet")
		c.Props = map[string]string{"dubbo": "2.0.2"}
		r := h.call(t, c)
		wantOK(t, r, "Hello, world")
		if r.Props == nil {
			t.Errorf("no response attachments for a dubbo 2.0.2 request")
		}
		r = h.call(t, userCall("greet"))
		wantOK(t, r, "Hello, world")
		if r.Props != nil {
			t.Errorf("response attachments %v for a dubbo 5.3.0 request, which Java would not send", r.Props)
		}
	})

	t.Run("multiplexing", func(t *testing.T) {
		// 60 calls written at once on dubbo-remoting's one connection, the
		// slow ones first: our server answers out of order, and each
		// answer reaches its call.
		var calls []call
		var want []any
		for i := range 60 {
			if i%6 == 0 {
				ms := 40 + i
				calls = append(calls, userCall("slow", ms))
				want = append(want, fmt.Sprintf("slept %dms", ms))
				continue
			}
			id := strconv.Itoa(i)
			calls = append(calls, userCall("getUser", id))
			want = append(want, demo.User(id))
		}
		var answer struct{ Results []result }
		h.do(t, map[string]any{"op": "parallel", "calls": calls}, &answer)
		if len(answer.Results) != len(calls) {
			t.Fatalf("%d results for %d calls", len(answer.Results), len(calls))
		}
		for i, r := range answer.Results {
			t.Run(fmt.Sprint(i), func(t *testing.T) { wantOK(t, r, want[i]) })
		}
	})

	t.Run("heartbeat", func(t *testing.T) {
		before := srv.Stats().Heartbeats
		var answer struct {
			OK      bool `json:"ok"`
			Timeout bool `json:"timeout"`
		}
		h.do(t, map[string]string{"op": "heartbeat"}, &answer)
		if !answer.OK {
			t.Fatalf("dubbo-remoting got no heartbeat answer it could read: %+v", answer)
		}
		if after := srv.Stats().Heartbeats; after != before+1 {
			t.Errorf("the server counted %d heartbeats answered, want %d", after, before+1)
		}
	})

	// Last: closing the server sends dubbo-remoting the readonly event.
	t.Run("readonly event on close", func(t *testing.T) {
		h.send(t, map[string]string{"op": "event"})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closeErr := make(chan error, 1)
		go func() { closeErr <- srv.Close(ctx) }()
		closed = true
		var answer struct {
			Event   any  `json:"event"`
			Timeout bool `json:"timeout"`
		}
		h.receive(t, &answer)
		if answer.Event != "R" {
			t.Errorf("dubbo-remoting got the event %#v (timeout %v), want the readonly event \"R\"", answer.Event, answer.Timeout)
		}
		if err := <-closeErr; err != nil {
			t.Errorf("closing the server: %v", err)
		}
	})
}

// wantNodeError checks v is the java.lang.Exception dubbo-remoting makes of
// a JavaScript Error: the message, and node's stack as StackTraceElements.
func wantNodeError(t *testing.T, v any, message string) {
	t.Helper()
	x, ok := hessian.AsException(v)
	if !ok {
		t.Fatalf("the server decoded %#v, want a Throwable", v)
	}
	if x.Class != "java.lang.Exception" || x.Message != message {
		t.Errorf("the server decoded %s: %q, want java.lang.Exception: %q", x.Class, x.Message, message)
	}
	found := false
	for _, f := range x.StackTrace {
		found = found || strings.HasSuffix(f.FileName, "peer.js") && f.LineNumber > 0
	}
	if !found {
		t.Errorf("no peer.js frame with a line number in the decoded stack %+v", x.StackTrace)
	}
}

// wantOK checks dubbo-remoting decoded a value response carrying want (a
// value of our model), as hessian.js shows it.
func wantOK(t *testing.T, r result, want any) {
	t.Helper()
	if !r.OK {
		t.Fatalf("call failed: status %d, error %s, timeout %v", r.Status, r.Error, r.Timeout)
	}
	if r.Status != 20 {
		t.Errorf("status %d, want 20", r.Status)
	}
	var got any
	if err := json.Unmarshal(r.Value, &got); err != nil {
		t.Fatalf("value %s: %v", r.Value, err)
	}
	w, _ := json.Marshal(jsSees(want))
	g, _ := json.Marshal(got)
	if string(w) != string(g) {
		t.Errorf("dubbo-remoting decoded\n  %s\nwant\n  %s", clip(g), clip(w))
	}
}

type jsException struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

func exceptionOf(t *testing.T, r result) jsException {
	t.Helper()
	var e struct {
		Exception *jsException `json:"$exception"`
	}
	if err := json.Unmarshal(r.Error, &e); err != nil || e.Exception == nil {
		t.Fatalf("error %s is not an exception dubbo-remoting decoded (%v)", r.Error, err)
	}
	return *e.Exception
}

// wantException checks dubbo-remoting decoded an exception response (status
// OK, kind exception) of class with message.
func wantException(t *testing.T, r result, class, message string) {
	t.Helper()
	if r.OK {
		t.Fatalf("call succeeded with %s, want the exception %s", r.Value, class)
	}
	if r.Status != 20 {
		t.Errorf("status %d, want 20: an exception travels in an OK response", r.Status)
	}
	x := exceptionOf(t, r)
	if x.Class != class || x.Message != message {
		t.Errorf("exception %s: %q, want %s: %q", x.Class, x.Message, class, message)
	}
}

// jsSees is how peer.js prints a value of our model after hessian.js read
// it without types: objects as their fields, maps as plain objects, ints,
// doubles and safe longs as numbers, longs past 2^53 as strings, dates as
// {"$date":ms}, binaries as {"$bytes":base64}, exceptions as
// {"$exception":{class,message}}.
func jsSees(v any) any {
	switch v := v.(type) {
	case nil, bool, string:
		return v
	case int32:
		return float64(v)
	case int64:
		if v > 1<<53-1 || v < -(1<<53-1) {
			return strconv.FormatInt(v, 10)
		}
		return float64(v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprint(v)
		}
		return v
	case time.Time:
		return map[string]any{"$date": float64(v.UnixMilli())}
	case []byte:
		return map[string]any{"$bytes": base64.StdEncoding.EncodeToString(v)}
	case *hessian.List:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = jsSees(it)
		}
		return out
	case *hessian.Map:
		out := make(map[string]any, len(v.Entries))
		for _, e := range v.Entries {
			out[fmt.Sprint(e.Key)] = jsSees(e.Value)
		}
		return out
	case *hessian.Exception:
		return map[string]any{"$exception": map[string]any{"class": v.Class, "message": v.Message}}
	case *hessian.Object:
		if x, ok := hessian.AsException(v); ok {
			return jsSees(x)
		}
		out := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			out[f.Name] = jsSees(f.Value)
		}
		return out
	}
	return fmt.Sprintf("unexpected %T", v)
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}
