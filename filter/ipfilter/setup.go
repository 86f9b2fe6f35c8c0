// Package ipfilter implements the ip route filter: it admits or refuses a
// request by the client's address, checked against deny and allow lists of
// CIDRs and single addresses.
package ipfilter

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter"
)

// lists is a compiled config.IPFilter; it is read-only once New returns.
type lists struct {
	allow, deny []netip.Prefix
}

// New compiles cfg into the ip filter. Errors name the field and the entry,
// e.g. `allow: "10.0.0.0/33": bad CIDR: ...`.
func New(cfg *config.IPFilter) (filter.Filter, error) {
	if cfg == nil {
		return nil, errors.New("ip: no configuration")
	}
	if len(cfg.Allow) == 0 && len(cfg.Deny) == 0 {
		return nil, errors.New("allow, deny: list at least one address or CIDR")
	}
	allow, err := parse("allow", cfg.Allow)
	if err != nil {
		return nil, err
	}
	deny, err := parse("deny", cfg.Deny)
	if err != nil {
		return nil, err
	}
	return &lists{allow: allow, deny: deny}, nil
}

// parse parses one list. Clients are matched by their unmapped address, so
// an IPv4-mapped IPv6 prefix ("::ffff:10.0.0.0/104") becomes its IPv4 form
// ("10.0.0.0/8"); left as IPv6 it could never match.
func parse(field string, items []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(items))
	for _, s := range items {
		p, err := exchange.ParsePrefix(s)
		if err != nil {
			what := "bad address"
			if strings.Contains(s, "/") {
				what = "bad CIDR"
			}
			return nil, fmt.Errorf("%s: %q: %s: %w", field, s, what, err)
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p)
	}
	return out, nil
}
