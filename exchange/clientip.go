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
// peerTrusted reports whether the peer is a trusted proxy.
func ClientIP(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) (client netip.Addr, peerTrusted bool) {
	peer, err := netip.ParseAddrPort(remoteAddr)
	var addr netip.Addr
	if err == nil {
		addr = peer.Addr().Unmap()
	} else if a, err := netip.ParseAddr(remoteAddr); err == nil {
		addr = a.Unmap()
	} else {
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
			a, err := netip.ParseAddr(hop)
			if err != nil {
				// A malformed hop: stop believing the chain; the last good address stands.
				return addr, true
			}
			addr = a.Unmap()
			if !contains(trusted, addr) {
				return addr, true
			}
		}
	}
	return addr, true
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
