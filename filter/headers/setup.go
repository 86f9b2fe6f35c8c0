// Package headers implements the headers route filter: it edits request
// headers before the upstream sees them and response headers before the
// client does, with literal values compiled once per route.
package headers

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

// editor is a compiled config.Headers; it is read-only once New returns.
type editor struct {
	request, response ops
	// responseHook applies response ops; made once so requests allocate no closure.
	responseHook func(h http.Header, status int)
}

// ops is a compiled config.HeaderOps: canonical names, applied in the
// order remove, set, add, each list sorted by name.
type ops struct {
	remove []string
	set    []op
	add    []op
}

type op struct{ name, value string }

func (o *ops) empty() bool { return len(o.remove)+len(o.set)+len(o.add) == 0 }

// whyUnsettable says why a header cannot be set or added, or returns "".
func whyUnsettable(canonical string) string {
	switch canonical {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return "it is a hop-by-hop header: it describes a single connection, and the proxy and server manage it for each connection (it would be dropped or break the connection)"
	case "Host":
		return "the Host sent upstream is the target's (or the client's, with the upstream's preserve_host), never a header"
	case "Content-Length":
		return "it is the length of the body actually sent; setting it would corrupt the message framing"
	}
	return ""
}

// New compiles cfg into the headers filter. Errors name the offending field,
// e.g. `request.set: "Connection": ...`.
func New(cfg *config.Headers) (filter.Filter, error) {
	if cfg == nil {
		return nil, errors.New("headers: no configuration")
	}
	req, err := compile("request", cfg.Request)
	if err != nil {
		return nil, err
	}
	resp, err := compile("response", cfg.Response)
	if err != nil {
		return nil, err
	}
	if req.empty() && resp.empty() {
		return nil, errors.New("request, response: no header to set, add or remove")
	}
	e := &editor{request: req, response: resp}
	e.responseHook = func(h http.Header, _ int) { e.response.apply(h) }
	return e, nil
}

func compile(side string, cfg config.HeaderOps) (ops, error) {
	var o ops
	seen := make(map[string]bool, len(cfg.Remove))
	for _, name := range cfg.Remove {
		canon, err := canonicalName(name)
		if err != nil {
			return ops{}, fmt.Errorf("%s.remove: %w", side, err)
		}
		if !seen[canon] {
			seen[canon] = true
			o.remove = append(o.remove, canon)
		}
	}
	var err error
	if o.set, err = compileValues(side+".set", cfg.Set); err != nil {
		return ops{}, err
	}
	if o.add, err = compileValues(side+".add", cfg.Add); err != nil {
		return ops{}, err
	}
	return o, nil
}

// compileValues checks and canonicalizes a set or add map into a list
// sorted by name, so that the result does not depend on map order.
func compileValues(field string, m map[string]string) ([]op, error) {
	out := make([]op, 0, len(m))
	written := make(map[string]string, len(m)) // canonical -> name as written
	for name, value := range m {
		canon, err := canonicalName(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if why := whyUnsettable(canon); why != "" {
			return nil, fmt.Errorf("%s: %q cannot be set here: %s", field, name, why)
		}
		if other, dup := written[canon]; dup {
			a, b := min(name, other), max(name, other)
			return nil, fmt.Errorf("%s: %q and %q name the same header (names are case-insensitive)", field, a, b)
		}
		written[canon] = name
		if i := strings.IndexFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }); i >= 0 {
			return nil, fmt.Errorf("%s: %q: value contains the control character %q", field, name, value[i])
		}
		out = append(out, op{name: canon, value: value})
	}
	slices.SortFunc(out, func(a, b op) int { return cmp.Compare(a.name, b.name) })
	return out, nil
}

// canonicalName checks that name is a header name and returns its canonical form.
func canonicalName(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty header name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return "", fmt.Errorf("%q is not a header name (byte %q is not allowed)", name, c)
		}
	}
	return textproto.CanonicalMIMEHeaderKey(name), nil
}
