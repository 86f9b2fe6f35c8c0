package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FilterSpec is the configuration of one kind of filter. The filter's own
// package defines it (a struct with yaml tags, decoded strictly like the
// rest of the file), its defaults and its rules, and registers it with
// RegisterFilter; this package knows no filter by name.
type FilterSpec interface {
	// Defaults fills the fields left unset.
	Defaults()
	// Validate reports every problem of the defaulted configuration, each
	// at its place: at.Field("allow_origins").Index(2).Errorf(...).
	Validate(at At, ctx FilterContext)
}

// FilterContext is what a filter's rules may depend on besides its own
// configuration.
type FilterContext struct {
	// Params are the path parameters of the route's pattern ({name},
	// {name...}); nil in default_filters, which run on every route.
	Params []string
	// Redis reports whether the top-level redis: section is set.
	Redis bool
}

// filterKinds is the one table of filter kinds: a filter's YAML key to
// the constructor of its empty configuration.
var filterKinds = newKinds[FilterSpec]("filter")

// RegisterFilter makes name a filter key of filter lists; newSpec returns
// the empty configuration an entry decodes into (a pointer to a struct).
// Called from the filter package's init; a second registration of a name
// panics, as it is a build mistake.
func RegisterFilter(name string, newSpec func() FilterSpec) {
	filterKinds.register(name, newSpec, false)
}

// FilterNames lists the registered filter keys, sorted.
func FilterNames() []string { return filterKinds.names() }

func newFilterSpec(name string) (FilterSpec, bool) { return filterKinds.make(name) }

// Filter is one entry of a filter list, written as a mapping of one key,
// the filter's name, to its configuration: `- cors: {allow_origins: ["*"]}`.
type Filter struct {
	// Name is the filter's key, as registered.
	Name string
	// Spec is the filter's configuration, of the type its package registered.
	Spec FilterSpec
}

// MarshalYAML writes the entry as it is read: its name mapped to its
// configuration (and so the admin API shows it).
func (f Filter) MarshalYAML() (any, error) { return map[string]any{f.Name: f.Spec}, nil }

var filterType = reflect.TypeFor[Filter]()

// decodeFilter decodes one filter list entry.
func (d *decoder) decodeFilter(n *yaml.Node, v reflect.Value, path string, line int) {
	if n.Kind != yaml.MappingNode {
		d.problems.add(path, line, "want a mapping of one filter name to its settings, got %s", describe(n))
		return
	}
	pairs := d.pairs(n, path)
	switch len(pairs) {
	case 0:
		d.problems.add(path, line, "empty filter entry: name one filter (%s)", strings.Join(FilterNames(), ", "))
		return
	case 1:
	default:
		names := make([]string, len(pairs))
		for i, kv := range pairs {
			names[i] = kv.key.Value
		}
		all := strings.Join(names[:len(names)-1], ", ")
		if len(names) == 2 {
			all = "both " + all
		}
		d.problems.add(path, line, "filter entry sets %s and %s; write one per list item", all, names[len(names)-1])
		return
	}
	kv := pairs[0]
	p := keyPath(path, kv.key.Value)
	d.lines[p] = kv.key.Line
	spec, ok := newFilterSpec(kv.key.Value)
	if !ok {
		d.problems.add(p, kv.key.Line, "unknown filter %q (known: %s)", kv.key.Value, strings.Join(FilterNames(), ", "))
		return
	}
	if value := unalias(kv.value); !(value.Kind == yaml.ScalarNode && value.ShortTag() == "!!null") { // "- cors:" takes every default
		d.decode(kv.value, reflect.ValueOf(spec).Elem(), p)
	}
	v.Set(reflect.ValueOf(Filter{Name: kv.key.Value, Spec: spec}))
}

// At is a place in the configuration where a rule can find problems: a
// path, and the list they are added to.
type At struct {
	ps   *problems
	path string
}

// Path is the YAML path of this place, e.g. "routes[2].filters[0].cors".
func (a At) Path() string { return a.path }

// Field is the place of a mapping key below this one.
func (a At) Field(name string) At { return At{a.ps, keyPath(a.path, name)} }

// Index is the place of a list item below this one.
func (a At) Index(i int) At { return At{a.ps, indexPath(a.path, i)} }

// Errorf reports a problem here.
func (a At) Errorf(format string, args ...any) { a.ps.add(a.path, 0, format, args...) }

// Err reports err, if not nil, as a problem here.
func (a At) Err(err error) {
	if err != nil {
		a.ps.add(a.path, 0, "%v", err)
	}
}

// Check runs rules against a fresh list rooted at path ("" for a filter's
// own fields) and returns what they found as an *Error, or nil: how a
// filter's constructor applies the same rules as its Validate.
func Check(path string, rules func(at At)) error {
	var ps problems
	rules(At{&ps, path})
	if len(ps) == 0 {
		return nil
	}
	sortProblems(ps)
	return &Error{Problems: ps}
}

// validateFilters checks the entries of a filter list.
func validateFilters(ps *problems, path string, fs []Filter, ctx FilterContext) {
	for i, f := range fs {
		if f.Spec == nil {
			ps.add(indexPath(path, i), 0, "empty filter entry: name one filter (%s)", strings.Join(FilterNames(), ", "))
			continue
		}
		f.Spec.Validate(At{ps, keyPath(indexPath(path, i), f.Name)}, ctx)
	}
}

// defaultFilters fills the defaults of the entries of a filter list.
func defaultFilters(fs []Filter) {
	for _, f := range fs {
		if f.Spec != nil {
			f.Spec.Defaults()
		}
	}
}

// IdentitySource is implemented by the FilterSpec of a filter (or a
// Section: the TLS listener's client certificate subject) that tells
// upstreams who the client is. What it sets, no client and no route may:
// the gateway removes those headers from every request as it enters, and
// a Dubbo route cannot set those attachments itself.
type IdentitySource interface {
	// IdentityHeaders are the request headers the filter sets.
	IdentityHeaders() []string
	// IdentityAttachments are the Dubbo attachment keys the filter sets,
	// and the identity fields it reads (lower-case).
	IdentityAttachments() []string
}

// identityOf calls f for every IdentitySource among the filters of c, in
// default_filters and on every route: an upstream that trusts an identity
// from the gateway cannot tell which route a request came through.
func identityOf(c *Config, f func(IdentitySource)) {
	each := func(fs []Filter) {
		for _, e := range fs {
			if s, ok := e.Spec.(IdentitySource); ok {
				f(s)
			}
		}
	}
	each(c.DefaultFilters)
	for _, key := range slices.Sorted(maps.Keys(c.Sections)) {
		if s, ok := c.Sections[key].(IdentitySource); ok {
			f(s)
		}
	}
	for _, rt := range c.Routes {
		if rt != nil {
			each(rt.Filters)
		}
	}
}

// IdentityHeaders lists the request headers the filters of c set to tell
// upstreams who the client is.
func IdentityHeaders(c *Config) []string {
	var out []string
	identityOf(c, func(s IdentitySource) { out = append(out, s.IdentityHeaders()...) })
	return out
}

// IdentityAttachments lists the Dubbo attachment keys the filters of c
// set to tell providers who the client is.
func IdentityAttachments(c *Config) []string {
	var out []string
	identityOf(c, func(s IdentitySource) { out = append(out, s.IdentityAttachments()...) })
	return out
}
