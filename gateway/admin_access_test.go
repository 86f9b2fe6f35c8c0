package gateway

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/config"
)

func TestAdminAccessRules(t *testing.T) {
	cfg := &config.Config{Admin: config.Admin{Listen: "gw-admin.internal:9090", Token: "0123456789abcdef-token",
		AllowedHosts: []string{"Ops.Example.com", "svc.ns:8443"}}}
	a, err := newAdminAccess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"":                           true, // HTTP/1.0: no browser
		"127.0.0.1:9090":             true,
		"127.0.0.1:19090":            true, // a port forward
		"10.1.2.3":                   true, // a pod IP
		"[::1]:9090":                 true,
		"localhost:1234":             true,
		"LOCALHOST.:9090":            true,
		"gw-admin.internal:9090":     true,
		"ops.example.com:1":          true,
		"svc.ns:8443":                true,
		"svc.ns:9090":                false, // listed with another port
		"attacker.example":           false,
		"localhost.attacker.example": false,
		"127.0.0.1.nip.io:9090":      false,
	} {
		if got := a.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	for _, c := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:9090", "127.0.0.1:9090", true},
		{"https://ops.example.com", "10.0.0.1:9090", true},
		{"http://127.0.0.1:8000", "127.0.0.1:9090", false}, // another local page
		{"null", "127.0.0.1:9090", false},
		{"https://evil.example", "127.0.0.1:9090", false},
	} {
		if got := a.originAllowed(c.origin, c.host); got != c.want {
			t.Errorf("originAllowed(%q, %q) = %v, want %v", c.origin, c.host, got, c.want)
		}
	}
	for auth, want := range map[string]bool{
		"Bearer 0123456789abcdef-token":  true,
		"bearer 0123456789abcdef-token":  true,
		"Bearer 0123456789abcdef-token ": true,
		"Bearer 0123456789abcdef-toke":   false,
		"0123456789abcdef-token":         false,
		"Basic 0123456789abcdef-token":   false,
		"":                               false,
	} {
		if got := a.tokenOK(auth); got != want {
			t.Errorf("tokenOK(%q) = %v, want %v", auth, got, want)
		}
	}
	for _, c := range []struct {
		ct, body string
		want     bool
	}{
		{"", "", true},
		{"application/json", "{}", true},
		{"application/json; charset=utf-8", "{}", true},
		{"", "x", false},
		{"text/plain", "", false},
		{"application/x-www-form-urlencoded", "a=b", false},
		{"multipart/form-data; boundary=x", "", false},
	} {
		r := httptest.NewRequest("POST", "/admin/reload", strings.NewReader(c.body))
		if c.ct != "" {
			r.Header.Set("Content-Type", c.ct)
		}
		if got := jsonOrEmpty(r); got != c.want {
			t.Errorf("jsonOrEmpty(%q, %q) = %v, want %v", c.ct, c.body, got, c.want)
		}
	}
}
