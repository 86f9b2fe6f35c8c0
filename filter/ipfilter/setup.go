// Package ipfilter implements the ip route filter: it admits or refuses a
// request by the client's address, checked against deny and allow lists of
// CIDRs and single addresses.
package ipfilter

import (
	"net/netip"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter"
)

// lists is a compiled Config; it is read-only once New returns.
type lists struct {
	allow, deny []netip.Prefix
}

// New compiles cfg into the ip filter. Its error lists every problem,
// each naming the entry, e.g. `allow[1]: "10.0.0.0/33" is not ...`.
func New(cfg *Config) (filter.Filter, error) {
	var l *lists
	if err := config.Check("", func(at config.At) { l = compile(cfg, at) }); err != nil {
		return nil, err
	}
	return l, nil
}

// compile builds the lists of cfg, reporting its problems at at: the
// rules of the ip filter, written once for Validate and New.
func compile(cfg *Config, at config.At) *lists {
	if len(cfg.Allow) == 0 && len(cfg.Deny) == 0 {
		at.Errorf("empty ip filter: set allow or deny (addresses or CIDRs)")
	}
	return &lists{allow: parse(at.Field("allow"), cfg.Allow), deny: parse(at.Field("deny"), cfg.Deny)}
}

// parse parses one list. Clients are matched by their unmapped address, so
// an IPv4-mapped IPv6 prefix ("::ffff:10.0.0.0/104") becomes its IPv4 form
// ("10.0.0.0/8"); left as IPv6 it could never match.
func parse(at config.At, items []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(items))
	for i, s := range items {
		p, err := exchange.ParsePrefix(s)
		if err != nil {
			at.Index(i).Errorf("%q is not an IP address or CIDR: %v", s, err)
			continue
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p)
	}
	return out
}
