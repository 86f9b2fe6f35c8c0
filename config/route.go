package config

import (
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// RouteSpec is the configuration of one kind of route: what its requests
// are sent to. The kind's package defines it (a struct with yaml tags),
// its defaults and its rules, and registers it with RegisterRouteKind
// under the key that chooses it; its fields are keys of the route itself,
// beside name, match and filters: `upstream: users` makes an HTTP route,
// `dubbo: {...}` a Dubbo one. This package knows no route kind.
type RouteSpec interface {
	// Defaults fills the fields left unset. It may fill the route's own
	// (its timeout) and add what the route needs to the configuration.
	Defaults(ctx RouteContext)
	// Validate reports every problem of the defaulted configuration; at
	// is the route's place, so a problem of key k is at.Field(k).
	Validate(at At, ctx RouteContext)
}

// RouteContext is what a route kind's defaults and rules may depend on
// besides its own settings.
type RouteContext struct {
	// Config is the whole configuration, defaulted in order: sections
	// and registries before routes.
	Config *Config
	// Route is the route, its generic part defaulted.
	Route *Route
	// Params are the names of the path parameters of the route's
	// pattern ({name}, {name...}); nil for a prefix route.
	Params []string
}

// routeKinds is the one table of route kinds, by the key that chooses each.
var routeKinds = newKinds[RouteSpec]("route kind")

// RegisterRouteKind makes key choose a kind of route: a route that sets
// key decodes its keys other than the generic ones (name, match, filters,
// timeout...) into newSpec(), a pointer to a struct one of whose fields is
// key. Called from the kind's package's init.
func RegisterRouteKind(key string, newSpec func() RouteSpec) {
	routeKinds.register(key, newSpec, false) // panics unless a pointer to a struct
	t := reflect.TypeOf(newSpec()).Elem()
	if !hasYAMLField(t, key) {
		panic("config: route kind " + key + ": its settings have no field " + key)
	}
	for _, f := range yamlFields(routeType) {
		if hasYAMLField(t, f.name) {
			panic("config: route kind " + key + ": its field " + f.name + " is a generic route key")
		}
	}
}

// RouteKinds lists the keys of the registered route kinds, sorted.
func RouteKinds() []string { return routeKinds.names() }

func hasYAMLField(t reflect.Type, name string) bool {
	_, ok := fieldNamed(yamlFields(t), name)
	return ok
}

var routeType = reflect.TypeFor[Route]()

// decodeRoute decodes one route: its generic keys into the Route, the
// others into the settings of the kind its keys choose.
func (d *decoder) decodeRoute(n *yaml.Node, v reflect.Value, path string, line int) {
	if n.Kind != yaml.MappingNode {
		d.problems.add(path, line, "want a mapping, got %s", describe(n))
		return
	}
	pairs := d.pairs(n, path)
	var chosen []string
	for _, kv := range pairs {
		if _, ok := routeKinds.make(kv.key.Value); ok {
			chosen = append(chosen, kv.key.Value)
		}
	}
	r := v.Addr().Interface().(*Route)
	switch len(chosen) {
	case 0:
		d.problems.add(path, line, "say what the route calls: set one of %s", strings.Join(RouteKinds(), ", "))
	case 1:
		r.Kind = chosen[0]
		r.Spec, _ = routeKinds.make(r.Kind)
	default:
		d.problems.add(path, line, "set one of %s, not %s", strings.Join(RouteKinds(), ", "), strings.Join(chosen, " and "))
	}
	var spec reflect.Value
	if r.Spec != nil {
		spec = reflect.ValueOf(r.Spec).Elem()
	}
	d.decodeParts(pairs, path, v, spec, func(key string) string {
		for _, k := range RouteKinds() {
			if s, _ := routeKinds.make(k); hasYAMLField(reflect.TypeOf(s).Elem(), key) {
				if r.Kind == "" {
					return "" // no kind chosen: that problem is reported
				}
				return key + " is a setting of routes with " + k + ", not of routes with " + r.Kind
			}
		}
		return "unknown key"
	})
}

// decodeParts decodes the pairs of one mapping into two structs: the
// generic part and the settings of a kind (spec, invalid when unknown).
// A key of neither is a problem, with why(key) as its reason ("" to
// report nothing).
func (d *decoder) decodeParts(pairs []keyValue, path string, generic, spec reflect.Value, why func(key string) string) {
	fields := yamlFields(generic.Type())
	var specFields []yamlField
	if spec.IsValid() {
		specFields = yamlFields(spec.Type())
	}
	for _, kv := range pairs {
		p := keyPath(path, kv.key.Value)
		if f, ok := fieldNamed(fields, kv.key.Value); ok {
			d.lines[p] = kv.key.Line
			d.decode(kv.value, generic.Field(f.index), p)
			continue
		}
		if f, ok := fieldNamed(specFields, kv.key.Value); ok {
			d.lines[p] = kv.key.Line
			d.decode(kv.value, spec.Field(f.index), p)
			continue
		}
		reason := why(kv.key.Value)
		if reason == "" {
			continue
		}
		if reason == "unknown key" {
			names := make([]string, 0, len(fields)+len(specFields))
			for _, f := range append(fields, specFields...) {
				names = append(names, f.name)
			}
			reason += " (known: " + strings.Join(names, ", ") + ")"
		}
		d.problems.add(p, kv.key.Line, "%s", reason)
	}
}

func fieldNamed(fields []yamlField, name string) (yamlField, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return yamlField{}, false
}

// MarshalYAML writes the route as it is read: its generic keys and its
// kind's, side by side (and so the admin API shows it).
func (r Route) MarshalYAML() (any, error) {
	type plain Route // without this method
	return inline(plain(r), r.Spec), nil
}

// inline returns a value of a struct type made for it whose fields are
// those of each part (a struct or a pointer to one; nil parts are
// skipped), tags included: what a YAML writer and the admin API's
// redaction read as one mapping.
func inline(parts ...any) any {
	var fields []reflect.StructField
	var values []reflect.Value
	for _, p := range parts {
		v := reflect.ValueOf(p)
		for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
			if v.IsNil() {
				v = reflect.Value{}
				break
			}
			v = v.Elem()
		}
		if !v.IsValid() || v.Kind() != reflect.Struct {
			continue
		}
		for _, f := range yamlFields(v.Type()) {
			sf := v.Type().Field(f.index)
			fields = append(fields, reflect.StructField{
				Name: "F" + strconv.Itoa(len(fields)), Type: sf.Type,
				Tag: reflect.StructTag(`yaml:"` + f.name + `"` + redactTag(sf.Tag)),
			})
			values = append(values, v.Field(f.index))
		}
	}
	out := reflect.New(reflect.StructOf(fields)).Elem()
	for i, v := range values {
		out.Field(i).Set(v)
	}
	return out.Interface()
}

func redactTag(t reflect.StructTag) string {
	if r, ok := t.Lookup("redact"); ok {
		return ` redact:"` + r + `"`
	}
	return ""
}
