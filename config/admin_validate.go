package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// minAdminToken is the shortest admin.token accepted: a shorter one can be
// guessed by anyone who can reach the listener.
const minAdminToken = 16

// validateAdmin checks admin's token, token file and allowed hosts (the
// listen address is checked with the data listener's).
func validateAdmin(ps *problems, a *Admin) {
	switch {
	case a.Token != "" && a.TokenFile != "":
		ps.add("admin.token", 0, "set token or token_file, not both")
	case a.Token != "":
		if err := CheckAdminToken(a.Token); err != nil {
			ps.add("admin.token", 0, "%v", err)
		}
	case a.TokenFile != "" && strings.TrimSpace(a.TokenFile) != a.TokenFile:
		ps.add("admin.token_file", 0, "the path has leading or trailing white space")
	}
	for i, h := range a.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			ps.add(indexPath("admin.allowed_hosts", i), 0, "%v", err)
		}
	}
	if a.Readiness != ReadinessStrict && a.Readiness != ReadinessLenient {
		ps.add("admin.readiness", 0, "%q: want strict or lenient", a.Readiness)
	}
	if a.TLS.Set() {
		At{ps, "admin.tls"}.ValidateServerTLS(a.TLS)
	}
}

// CheckAdminToken checks an admin token, from the file or from
// token_file. The error never contains the token.
func CheckAdminToken(token string) error {
	if len(token) < minAdminToken {
		return fmt.Errorf("too short (%d characters): at least %d, e.g. `openssl rand -hex 32`", len(token), minAdminToken)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("character %d is not printable ASCII (a space, a control or non-ASCII character): it cannot be sent in an Authorization header", i+1)
		}
	}
	return nil
}

// checkAllowedHost accepts "name", "name:port", an IP address and
// "[v6]:port".
func checkAllowedHost(h string) error {
	host := h
	if hh, port, err := net.SplitHostPort(h); err == nil {
		if err := CheckPort(port, false); err != nil {
			return fmt.Errorf("%q: %v", h, err)
		}
		host = hh
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return nil
	}
	if strings.Contains(host, "*") || !validHost(host) {
		return fmt.Errorf("%q: want a host name or host:port as sent in the Host header, such as \"gw-admin.ops.svc\" (no scheme, path or wildcard)", h)
	}
	return nil
}

// adminWarnings says when the admin listener is reachable from other
// machines and nothing but its address keeps strangers out.
func adminWarnings(ps *problems, a *Admin) {
	if a.Token != "" || a.TokenFile != "" {
		return
	}
	host, _, err := net.SplitHostPort(a.Listen)
	if err != nil || IsLoopbackHost(host) {
		return
	}
	ps.add("admin.listen", 0, "%q is reachable from other machines and admin.token is not set: anyone who reaches it can read the configuration and reload it; set admin.token (or token_file), or listen on 127.0.0.1", a.Listen)
}

// IsLoopbackHost reports whether host (of a host:port, brackets removed)
// is "localhost" or a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
