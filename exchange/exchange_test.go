package exchange

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted, err := ParsePrefixes([]string{"10.0.0.0/8", "::1", "192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		remote      string
		xff         []string
		trusted     []netip.Prefix
		want        string
		peerTrusted bool
	}{
		{"198.51.100.1:5555", []string{"1.2.3.4"}, trusted, "198.51.100.1", false},         // untrusted peer: header ignored
		{"198.51.100.1:5555", nil, nil, "198.51.100.1", false},                             // no trusted list
		{"10.0.0.5:80", []string{"203.0.113.9"}, trusted, "203.0.113.9", true},             // one trusted hop
		{"10.0.0.5:80", []string{"6.6.6.6, 203.0.113.9"}, trusted, "203.0.113.9", true},    // forged left part not believed
		{"10.0.0.5:80", []string{"203.0.113.9, 10.1.1.1"}, trusted, "203.0.113.9", true},   // two trusted hops
		{"10.0.0.5:80", []string{"203.0.113.9", "10.1.1.1"}, trusted, "203.0.113.9", true}, // several header lines
		{"10.0.0.5:80", []string{"garbage, 10.1.1.1"}, trusted, "invalid IP", true},        // malformed hop: unknown client, fail closed
		{"10.0.0.5:80", []string{"unknown"}, trusted, "invalid IP", true},                  // not the trusted proxy
		{"10.0.0.5:80", []string{"_hidden, 10.1.1.1"}, trusted, "invalid IP", true},        // RFC 7239 obfuscated id
		{"10.0.0.5:80", []string{"203.0.113.9:5555"}, trusted, "203.0.113.9", true},        // ip:port
		{"10.0.0.5:80", []string{"[2001:db8::1]:443"}, trusted, "2001:db8::1", true},       // [ipv6]:port
		{"10.0.0.5:80", []string{"[2001:db8::1]"}, trusted, "2001:db8::1", true},           // [ipv6]
		{"10.0.0.5:80", []string{"[203.0.113.9]"}, trusted, "invalid IP", true},            // brackets hold IPv6 only
		{"10.0.0.5:80", []string{"203.0.113.9:1:2"}, trusted, "invalid IP", true},          // two ports
		{"10.0.0.5:80", []string{"203.0.113.9:x"}, trusted, "invalid IP", true},            // bad port
		{"10.0.0.5:80", []string{"10.1.1.1:80, 10.1.1.2"}, trusted, "10.1.1.1", true},      // every hop trusted: the leftmost
		{"10.0.0.5:80", nil, trusted, "10.0.0.5", true},                                    // trusted peer, no header
		{"[::1]:80", []string{"2001:db8::1"}, trusted, "2001:db8::1", true},                // IPv6
		{"[::ffff:192.0.2.7]:80", []string{"203.0.113.1"}, trusted, "203.0.113.1", true},   // mapped peer
		{"192.0.2.7", nil, trusted, "192.0.2.7", true},                                     // address without port
		{"@unix", nil, trusted, "invalid IP", false},
	}
	for _, c := range cases {
		got, pt := ClientIP(c.remote, c.xff, c.trusted)
		if got.String() != c.want || pt != c.peerTrusted {
			t.Errorf("ClientIP(%q, %q) = %s, %v; want %s, %v", c.remote, c.xff, got, pt, c.want, c.peerTrusted)
		}
	}
	if _, err := ParsePrefix("10.0.0.0/33"); err == nil {
		t.Error("bad CIDR accepted")
	}
}

func TestWriteError(t *testing.T) {
	r := httptest.NewRequest("GET", "/x", nil)
	info := &Info{RequestID: "rid", Route: "r1"}
	r = r.WithContext(WithInfo(context.Background(), info))
	w := httptest.NewRecorder()
	WriteError(w, r, 503, CodeNoProvider, "no provider for \"a\"\n<b> & \xff")
	if w.Code != 503 || w.Header().Get("Content-Type") != "application/json" || info.ErrorCode != CodeNoProvider {
		t.Fatalf("status %d, headers %v, code %q", w.Code, w.Header(), info.ErrorCode)
	}
	var v map[string]map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("not JSON: %v: %q", err, w.Body.String())
	}
	e := v["error"]
	if e["code"] != "NO_PROVIDER" || e["route"] != "r1" || e["request_id"] != "rid" || e["message"] != "no provider for \"a\"\n<b> & \ufffd" {
		t.Errorf("body %v", e)
	}
	// Without Info: no route or id fields, still valid JSON.
	w = httptest.NewRecorder()
	WriteError(w, httptest.NewRequest("GET", "/", nil), 404, CodeNoRoute, "none")
	if w.Body.String() != `{"error":{"code":"NO_ROUTE","message":"none"}}`+"\n" {
		t.Errorf("body %q", w.Body.String())
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain")
	f.Add("quote\" back\\ nl\n ctl\x01 \xff\xfe 漢字 😀")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendJSONString(nil, s)
		var out string
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%q encoded as invalid JSON %q: %v", s, b, err)
		}
	})
}

// TestPathValue: the values the gateway put in the request's Info come
// first; a request without them (routed by an http.ServeMux, or built by a
// test) falls back to r.PathValue.
func TestPathValue(t *testing.T) {
	r := httptest.NewRequest("GET", "/users/7", nil)
	r.SetPathValue("id", "from-mux")
	if got := PathValue(r, "id"); got != "from-mux" {
		t.Errorf("without Info: %q", got)
	}
	info := &Info{PathParams: []PathParam{{"id", "7"}, {"tab", "orders"}}}
	r = r.WithContext(WithInfo(r.Context(), info))
	for name, want := range map[string]string{"id": "7", "tab": "orders", "none": ""} {
		if got := PathValue(r, name); got != want {
			t.Errorf("PathValue(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestGRPCErrors: a gRPC request gets the gateway's errors as gRPC
// statuses (Trailers-Only, HTTP 200), everyone else the JSON body.
func TestGRPCErrors(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/grpc": true, "application/grpc+proto": true, "application/GRPC;charset=x": true,
		"application/grpc-web": false, "application/grpcx": false, "application/json": false, "": false,
	} {
		r := httptest.NewRequest("POST", "/pkg.Svc/M", nil)
		r.Header.Set("Content-Type", ct)
		if got := IsGRPC(r); got != want {
			t.Errorf("IsGRPC(%q) = %v", ct, got)
		}
	}
	r := httptest.NewRequest("POST", "/pkg.Svc/M", nil)
	r.Header.Set("Content-Type", "application/grpc")
	w := httptest.NewRecorder()
	Fail(w, r, CodeRateLimited, "slow down: 100% é")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/grpc" || w.Header().Get("Grpc-Status") != "8" ||
		w.Header().Get("Grpc-Message") != "slow down: 100%25 %C3%A9" || w.Body.Len() != 0 {
		t.Errorf("got %d %v %q", w.Code, w.Header(), w.Body.String())
	}
	for code, want := range map[string]int{
		CodeBadRequest: 3, CodeUnauthorized: 16, CodeForbidden: 7, CodeNoRoute: 12, CodeTimeout: 4, CodeTooLarge: 8,
		CodeDubboException: 2, CodeBadGateway: 14, CodeNoProvider: 14, CodeShed: 14, CodeInternal: 13,
	} {
		if got := GRPCCode(code); got != want {
			t.Errorf("GRPCCode(%s) = %d, want %d", code, got, want)
		}
	}
}
