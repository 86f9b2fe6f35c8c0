package registry

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/cluster"
)

// ProviderURL is a provider URL as registries publish it:
// dubbo://host:port/interface?version=1.0.0&group=g&weight=100&timestamp=...
type ProviderURL struct {
	Protocol  string
	Addr      string
	Interface string
	Params    url.Values
}

// ParseProviderURL parses a provider URL; "host:port" alone is accepted as a
// dubbo provider with no params. ZooKeeper node names are URL-encoded: pass
// them decoded.
func ParseProviderURL(s string) (*ProviderURL, error) {
	raw := s
	if !strings.Contains(s, "://") {
		s = "dubbo://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("provider URL %q: %w", raw, err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("provider URL %q: want host:port", raw)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("provider URL %q: bad port %q", raw, port)
	}
	return &ProviderURL{
		Protocol:  u.Scheme,
		Addr:      u.Host,
		Interface: strings.TrimPrefix(u.Path, "/"),
		Params:    u.Query(),
	}, nil
}

// Matches reports whether the provider serves key, with Dubbo's rules: the
// interface must be equal (when the URL names one); group and version must be
// equal, "*" on the consumer side matches anything, and a consumer group may
// list several ("a,b").
func (p *ProviderURL) Matches(key ServiceKey) bool {
	return MatchesKey(key, p.Interface, p.Params.Get("group"), p.Params.Get("version"), p.Disabled())
}

// Disabled reports whether the URL says enabled=false or disabled=true.
func (p *ProviderURL) Disabled() bool {
	return p.Params.Get("enabled") == "false" || p.Params.Get("disabled") == "true"
}

// MatchesKey is Matches for a provider known by its interface, group,
// version and whether it is disabled (a registry keeping those rather
// than the URL).
func MatchesKey(key ServiceKey, iface, group, version string, disabled bool) bool {
	if iface != "" && iface != key.Interface || disabled {
		return false
	}
	return matchValue(key.Group, group, true) && matchValue(key.Version, version, false)
}

func matchValue(want, got string, list bool) bool {
	if want == "*" || want == got {
		return true
	}
	if list && strings.Contains(want, ",") {
		for _, w := range strings.Split(want, ",") {
			if strings.TrimSpace(w) == got {
				return true
			}
		}
	}
	return false
}

// Provider turns the URL into the cluster's view of a provider (Java
// Dubbo's defaults for weight and warm-up apply).
func (p *ProviderURL) Provider() (*cluster.Provider, error) {
	params := make(map[string]string, len(p.Params))
	for k, v := range p.Params {
		if len(v) > 0 {
			params[k] = v[0]
		}
	}
	c, err := cluster.NewProvider(p.Addr, params)
	if err != nil && p.Addr != "" {
		err = fmt.Errorf("provider %s: %w", p.Addr, err)
	}
	if c != nil {
		c.Protocol, _ = cluster.ParseProtocol(p.Protocol)
	}
	return c, err
}
