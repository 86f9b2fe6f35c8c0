// Package headers implements the headers route filter: it edits request
// headers before the upstream sees them and response headers before the
// client does, with literal values compiled once per route.
package headers

import (
	"cmp"
	"maps"
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

// editor is a compiled Config; it is read-only once New returns.
type editor struct {
	request, response ops
	// responseHook applies response ops; made once so requests allocate no closure.
	responseHook func(h http.Header, status int)
}

// ops are compiled Ops: canonical names, applied in the
// order remove, set, add, each list sorted by name.
type ops struct {
	remove []string
	set    []op
	add    []op
}

// op is one header to set or add. values is the value alone, made once
// and shared by every request: set puts it in the header as it is (its
// capacity is 1, so an Add elsewhere copies it rather than writes into
// it; nothing in the gateway writes a header value in place).
type op struct {
	name, value string
	values      []string
}

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

// New compiles cfg into the headers filter. Its error lists every
// problem, each naming its field, e.g. `request.set.Connection: ...`.
func New(cfg *Config) (filter.Filter, error) {
	var e *editor
	if err := config.Check("", func(at config.At) { e = compileEditor(cfg, at) }); err != nil {
		return nil, err
	}
	return e, nil
}

// compileEditor builds the editor of cfg, reporting its problems at at:
// the rules of the headers filter, written once for Validate and New.
func compileEditor(cfg *Config, at config.At) *editor {
	e := &editor{request: compile(at.Field("request"), cfg.Request), response: compile(at.Field("response"), cfg.Response)}
	if len(cfg.Request.Remove)+len(cfg.Request.Set)+len(cfg.Request.Add)+
		len(cfg.Response.Remove)+len(cfg.Response.Set)+len(cfg.Response.Add) == 0 {
		at.Errorf("empty headers filter: set request or response set, add or remove")
	}
	e.responseHook = func(h http.Header, _ int) { e.response.apply(h) }
	return e
}

func compile(at config.At, cfg Ops) ops {
	var o ops
	seen := make(map[string]bool, len(cfg.Remove))
	for i, name := range cfg.Remove {
		canon, err := canonicalName(name)
		if err != nil {
			at.Field("remove").Index(i).Err(err)
			continue
		}
		if !seen[canon] {
			seen[canon] = true
			o.remove = append(o.remove, canon)
		}
	}
	o.set = compileValues(at.Field("set"), cfg.Set)
	o.add = compileValues(at.Field("add"), cfg.Add)
	return o
}

// compileValues checks and canonicalizes a set or add map into a list
// sorted by name, so that the result does not depend on map order.
func compileValues(at config.At, m map[string]string) []op {
	out := make([]op, 0, len(m))
	written := make(map[string]string, len(m)) // canonical -> name as written
	for _, name := range slices.Sorted(maps.Keys(m)) {
		value, at := m[name], at.Field(name)
		canon, err := canonicalName(name)
		if err != nil {
			at.Err(err)
			continue
		}
		if why := whyUnsettable(canon); why != "" {
			at.Errorf("%q cannot be set here: %s", name, why)
			continue
		}
		if other, dup := written[canon]; dup {
			at.Errorf("%q and %q name the same header (names are case-insensitive)", other, name)
			continue
		}
		written[canon] = name
		// The value is not shown: header values are often secrets.
		if i := strings.IndexFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }); i >= 0 {
			at.Errorf("the value contains the control character %q", value[i])
			continue
		}
		out = append(out, op{name: canon, value: value, values: []string{value}})
	}
	slices.SortFunc(out, func(a, b op) int { return cmp.Compare(a.name, b.name) })
	return out
}

// canonicalName checks that name is a header name and returns its canonical form.
func canonicalName(name string) (string, error) {
	if err := config.CheckHeaderName(name); err != nil {
		return "", err
	}
	return textproto.CanonicalMIMEHeaderKey(name), nil
}
