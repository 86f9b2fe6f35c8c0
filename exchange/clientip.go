package exchange

import (
	"net/netip"
	"strings"
)

// ClientIP finds the client's address. remoteAddr is the connection's peer
// ("ip:port"); forwardedFor are the request's X-Forwarded-For header values.
// X-Forwarded-For is believed only hop by hop from the right while each hop
// is a trusted proxy: the first untrusted address is the client. When the peer
// itself is not trusted, the header is ignored (a client cannot forge it).
// A hop is an address, optionally with a port ("198.51.100.7:5555",
// "[2001:db8::1]:443", "[2001:db8::1]"); a hop that is none of these
// ("unknown", a name, an obfuscated id) makes the client unknown: the zero
// Addr, which IP rules refuse, rather than the trusted proxy that relayed it.
// peerTrusted reports whether the peer is a trusted proxy.
func ClientIP(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) (client netip.Addr, peerTrusted bool) {
	addr, ok := parseHop(remoteAddr)
	if !ok {
		return netip.Addr{}, false
	}
	if len(trusted) == 0 || !contains(trusted, addr) {
		return addr, false
	}
	for i := len(forwardedFor) - 1; i >= 0; i-- {
		hops := forwardedFor[i]
		for hops != "" {
			var hop string
			if j := strings.LastIndexByte(hops, ','); j >= 0 {
				hop, hops = hops[j+1:], hops[:j]
			} else {
				hop, hops = hops, ""
			}
			hop = strings.TrimSpace(hop)
			if hop == "" {
				continue
			}
			if addr, ok = parseHop(hop); !ok {
				// Fail closed: whoever sent this hop is not known, and must
				// not pass for the trusted proxy that relayed it.
				return netip.Addr{}, true
			}
			if !contains(trusted, addr) {
				return addr, true
			}
		}
	}
	return addr, true
}

// parseHop parses one address as proxies write it: "ip", "ip:port",
// "[ipv6]" or "[ipv6]:port"; IPv4-mapped IPv6 addresses are unmapped and
// zones dropped.
func parseHop(s string) (netip.Addr, bool) {
	var a netip.Addr
	var err error
	switch {
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		a, err = netip.ParseAddr(s[1 : len(s)-1])
		if err == nil && !a.Is6() {
			return netip.Addr{}, false // "[192.0.2.1]" is no address
		}
	case strings.Count(s, ":") == 1 || strings.HasPrefix(s, "["):
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// ParsePrefixes parses CIDRs and single addresses ("10.0.0.0/8", "192.0.2.7", "::1").
func ParsePrefixes(items []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(items))
	for _, s := range items {
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ParsePrefix parses one CIDR or single address.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func contains(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
