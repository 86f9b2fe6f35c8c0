package ipfilter_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/ipfilter"
)

func TestIPFilter(t *testing.T) {
	allowDeny := ipfilter.Config{
		Allow: []string{"10.0.0.0/8", "2001:db8::/32", "192.0.2.7"},
		Deny:  []string{"10.1.0.0/16", "2001:db8:bad::/48"},
	}
	denyOnly := ipfilter.Config{Deny: []string{"192.0.2.0/24", "::1"}}
	tests := []struct {
		name   string
		cfg    ipfilter.Config
		remote string // r.RemoteAddr
		info   string // exchange Info's ClientIP; "" = no Info at all, "zero" = Info without ClientIP
		pass   bool
	}{
		{"IPv4 in allow", allowDeny, "10.2.3.4:5000", "", true},
		{"single address in allow", allowDeny, "192.0.2.7:1", "", true},
		{"deny beats allow", allowDeny, "10.1.2.3:5000", "", false},
		{"not in allow", allowDeny, "192.168.1.1:5000", "", false},
		{"IPv6 in allow", allowDeny, "[2001:db8::1]:443", "", true},
		{"IPv6 in deny", allowDeny, "[2001:db8:bad::1]:443", "", false},
		{"IPv4-mapped peer allowed as IPv4", allowDeny, "[::ffff:10.2.3.4]:80", "", true},
		{"IPv4-mapped peer denied as IPv4", allowDeny, "[::ffff:10.1.2.3]:80", "", false},
		{"peer without port", allowDeny, "10.2.3.4", "", true},
		{"unknown peer address is refused", allowDeny, "@", "", false},
		{"Info client IP wins over the peer (denied)", allowDeny, "10.2.3.4:1", "192.168.1.1", false},
		{"Info client IP wins over the peer (allowed)", allowDeny, "192.168.1.1:1", "10.2.3.4", true},
		{"Info mapped client IP", allowDeny, "192.168.1.1:1", "::ffff:10.2.3.4", true},
		{"Info with an unknown client (malformed X-Forwarded-For) is refused, never the peer", allowDeny, "10.2.3.4:1", "zero", false},
		{"deny only: others pass", denyOnly, "198.51.100.1:1", "", true},
		{"deny only: listed IPv4 refused", denyOnly, "192.0.2.9:1", "", false},
		{"deny only: listed IPv6 refused", denyOnly, "[::1]:1", "", false},
		{"deny only: IPv6 does not match IPv4 lists", denyOnly, "[2001:db8::1]:1", "", true},
		{"deny only: unknown peer address is refused", denyOnly, "pipe", "", false},
		{"mapped CIDR in config matches IPv4 clients", ipfilter.Config{Allow: []string{"::ffff:10.0.0.0/104"}}, "10.9.9.9:1", "", true},
		{"zoned peer", ipfilter.Config{Allow: []string{"fe80::/10"}}, "[fe80::1%eth0]:80", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ipfilter.New(&tt.cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var called bool
			h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				w.WriteHeader(http.StatusNoContent)
			}))
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tt.remote
			var info *exchange.Info
			if tt.info != "" {
				info = &exchange.Info{Route: "r"}
				if tt.info != "zero" {
					info.ClientIP = netip.MustParseAddr(tt.info)
				}
				req = req.WithContext(exchange.WithInfo(req.Context(), info))
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if called != tt.pass {
				t.Fatalf("next called = %v, want %v (status %d)", called, tt.pass, rec.Code)
			}
			if tt.pass {
				return
			}
			if rec.Code != http.StatusForbidden {
				t.Fatalf("status = %d, want 403", rec.Code)
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if body.Error.Code != exchange.CodeForbidden || body.Error.Message != "client address is not allowed" {
				t.Errorf("error = %+v", body.Error)
			}
			if info != nil && info.ErrorCode != exchange.CodeForbidden {
				t.Errorf("info.ErrorCode = %q", info.ErrorCode)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  ipfilter.Config
		want string
	}{
		{"empty", ipfilter.Config{}, "empty ip filter: set allow or deny"},
		{"bad CIDR", ipfilter.Config{Allow: []string{"10.0.0.0/8", "10.0.0.0/33"}}, `allow[1]: "10.0.0.0/33" is not an IP address or CIDR`},
		{"bad address", ipfilter.Config{Deny: []string{"10.0.0.256"}}, `deny[0]: "10.0.0.256" is not an IP address or CIDR`},
		{"host name", ipfilter.Config{Deny: []string{"localhost"}}, `deny[0]: "localhost" is not an IP address or CIDR`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ipfilter.New(&tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// The admitted path must not allocate: it runs on every request of the route.
func TestAdmitDoesNotAllocate(t *testing.T) {
	f, err := ipfilter.New(&ipfilter.Config{Allow: []string{"10.0.0.0/8", "2001:db8::/32"}, Deny: []string{"10.1.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	h := f.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	withInfo := httptest.NewRequest(http.MethodGet, "/", nil)
	withInfo = withInfo.WithContext(exchange.WithInfo(withInfo.Context(), &exchange.Info{ClientIP: netip.MustParseAddr("10.2.3.4")}))
	peerOnly := httptest.NewRequest(http.MethodGet, "/", nil)
	peerOnly.RemoteAddr = "[2001:db8::1]:443"
	for name, req := range map[string]*http.Request{"info": withInfo, "peer": peerOnly} {
		if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(nil, req) }); n != 0 {
			t.Errorf("%s: %v allocations per request, want 0", name, n)
		}
	}
}

func BenchmarkIPFilter(b *testing.B) {
	cfg := &ipfilter.Config{
		Allow: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "2001:db8::/32"},
		Deny:  []string{"10.1.0.0/16", "10.2.0.0/16", "192.0.2.0/24"},
	}
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	f, err := ipfilter.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	withInfo := httptest.NewRequest(http.MethodGet, "/", nil)
	withInfo = withInfo.WithContext(exchange.WithInfo(withInfo.Context(), &exchange.Info{ClientIP: netip.MustParseAddr("192.168.7.7")}))
	peerOnly := httptest.NewRequest(http.MethodGet, "/", nil)
	peerOnly.RemoteAddr = "[2001:db8::1]:443"
	for _, bc := range []struct {
		name string
		h    http.Handler
		req  *http.Request
	}{
		{"no-filter", next, withInfo},
		{"info-client-ip", f.Wrap(next), withInfo},
		{"remote-addr", f.Wrap(next), peerOnly},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(nil, bc.req)
			}
		})
	}
}
