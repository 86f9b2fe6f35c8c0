package config

import (
	"slices"
	"strings"
	"testing"
)

// probe is a filter only these tests know: config decodes, defaults and
// validates it through RegisterFilter alone, knowing nothing of it.
type probe struct {
	Name    string            `yaml:"name"`
	Count   int               `yaml:"count"`
	Methods []string          `yaml:"methods"`
	Path    string            `yaml:"path"`
	Secrets map[string]string `yaml:"secrets" redact:"values"`
	Remote  bool              `yaml:"remote"`
}

func (p *probe) Defaults() {
	if p.Count == 0 {
		p.Count = 1
	}
}

func (p *probe) Validate(at At, ctx FilterContext) {
	if p.Name == "" {
		at.Field("name").Errorf("required")
	}
	if p.Count < 1 {
		at.Field("count").Errorf("must be at least 1, got %d", p.Count)
	}
	CheckMethods(at.Field("methods"), p.Methods)
	if name, ok := strings.CutPrefix(p.Path, "{"); ok && !slices.Contains(ctx.Params, strings.TrimSuffix(name, "}")) {
		at.Field("path").Errorf("%s is not a parameter of the route (has: %s)", p.Path, strings.Join(ctx.Params, ", "))
	}
	if p.Remote && !ctx.Redis {
		at.Field("remote").Errorf("needs the top-level redis: section")
	}
}

// marker is a second test filter, for entries that name two.
type marker struct{}

func (*marker) Defaults()                  {}
func (*marker) Validate(At, FilterContext) {}

func init() {
	RegisterFilter("probe", func() FilterSpec { return new(probe) })
	RegisterFilter("marker", func() FilterSpec { return new(marker) })
}

func TestFilterEntries(t *testing.T) {
	entry := func(e string) string { return withFilter(e) }
	cases := []struct {
		name  string
		yaml  string
		wants []want
	}{
		{"accepted", entry(`probe: {name: a, methods: [GET], path: "{id}"}`), nil},
		{"no settings take the defaults", entry("marker:"), nil},
		{"every problem of an entry at once", entry(`probe: {count: -1, methods: [get, GET, GET], path: "{uid}"}`), []want{
			{"routes[0].filters[0].probe.count", "must be at least 1, got -1", 13},
			{"routes[0].filters[0].probe.methods[0]", `"get": methods are case-sensitive; write GET`, 13},
			{"routes[0].filters[0].probe.methods[2]", "GET repeats methods[1]", 13},
			{"routes[0].filters[0].probe.name", "required", 13},
			{"routes[0].filters[0].probe.path", "{uid} is not a parameter of the route (has: id)", 13},
		}},
		{"unknown key of a filter", entry("probe: {name: a, nmae: b}"),
			[]want{{"routes[0].filters[0].probe.nmae", "unknown key (known: name, count, methods, path, secrets, remote)", 13}}},
		{"wrong type in a filter", entry("probe: {name: a, count: many}"),
			[]want{{"routes[0].filters[0].probe.count", `want an integer, got the string "many"`, 13}}},
		{"unknown filter", entry("probes: {name: a}"),
			[]want{{"routes[0].filters[0].probes", `unknown filter "probes" (known: `, 13}}},
		{"two filters in one entry", entry("{probe: {name: a}, marker: {}}"),
			[]want{{"routes[0].filters[0]", "filter entry sets both probe and marker; write one per list item", 13}}},
		{"three filters in one entry", entry("{probe: {name: a}, marker: {}, probes: {}}"),
			[]want{{"routes[0].filters[0]", "filter entry sets probe, marker and probes; write one per list item", 13}}},
		{"empty entry", entry("{}"), []want{{"routes[0].filters[0]", "empty filter entry: name one filter", 13}}},
		{"null entry", entry("~"), []want{{"routes[0].filters[0]", "empty filter entry: name one filter", 13}}},
		{"not a mapping", entry("probe"), []want{{"routes[0].filters[0]", `want a mapping of one filter name to its settings, got the string "probe"`, 13}}},
		{"duplicate key", entry("probe: {name: a, secrets: {X-A: a, X-A: b}}"),
			[]want{{"routes[0].filters[0].probe.secrets.X-A", "duplicate key", 13}}},
		{"the filter is told there is no redis", entry("probe: {name: a, remote: true}"),
			[]want{{"routes[0].filters[0].probe.remote", "needs the top-level redis", 13}}},
		{"the filter is told there is redis", entry("probe: {name: a, remote: true}") + "redis: {address: \"127.0.0.1:6379\"}\n", nil},
		{"default filters have no path parameters", base + "default_filters:\n  - probe: {name: a, path: \"{id}\"}\n",
			[]want{{"default_filters[0].probe.path", "{id} is not a parameter of the route (has: )", 15}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "t.yaml", nil)
			if tc.wants == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			checkProblems(t, err, tc.wants)
		})
	}
}

func TestFilterDefaultsAndYAML(t *testing.T) {
	c, err := Parse([]byte(withFilter("probe: {name: a}")), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := c.Routes[0].Filters[0]
	if p, ok := f.Spec.(*probe); f.Name != "probe" || !ok || p.Count != 1 || p.Name != "a" {
		t.Fatalf("entry %+v (%T), want the probe with its default count", f, f.Spec)
	}
	if got, err := f.MarshalYAML(); err != nil || got.(map[string]any)["probe"] != f.Spec {
		t.Errorf("MarshalYAML = %v, %v; want {probe: spec}", got, err)
	}
	if names := FilterNames(); !slices.Contains(names, "probe") || !slices.IsSorted(names) {
		t.Errorf("FilterNames() = %v", names)
	}
}

func TestRegisterFilterRefusesMistakes(t *testing.T) {
	for name, f := range map[string]func(){
		"twice":         func() { RegisterFilter("probe", func() FilterSpec { return new(probe) }) },
		"not a key":     func() { RegisterFilter("a b", func() FilterSpec { return new(probe) }) },
		"not a pointer": func() { RegisterFilter("value", func() FilterSpec { return valueSpec{} }) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

type valueSpec struct{}

func (valueSpec) Defaults()                  {}
func (valueSpec) Validate(At, FilterContext) {}
