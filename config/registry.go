package config

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Registry is a named source of Dubbo providers: the settings every type
// shares, and the settings of its type.
type Registry struct {
	// Type chooses the kind of registry, as registered (static,
	// zookeeper). Default DefaultRegistryType.
	Type string `yaml:"type"`
	// ReleaseAfter is how long a subscription nobody uses is kept (so a
	// reload that keeps a service does not re-subscribe). Default 30s.
	ReleaseAfter Duration `yaml:"release_after"`
	// StartupWait bounds how long a start or a reload waits for the
	// registry's first answer about the services its routes call. Default 3s.
	StartupWait Duration `yaml:"startup_wait"`

	// Spec is the type's own settings: the registry's other keys.
	Spec RegistrySpec `yaml:"-"`
	// DerivedFrom names the registry this one is a copy of, made by a
	// route kind's defaults (a different discovery mode); empty for a
	// configured registry.
	DerivedFrom string `yaml:"-"`
}

// DefaultRegistryType is the type of a registry that names none.
const DefaultRegistryType = "static"

// Registry defaults every type shares.
const (
	DefaultRegistryReleaseAfter = Duration(30e9)
	DefaultRegistryStartupWait  = Duration(3e9)
)

// RegistrySpec is the configuration of one type of registry. The type's
// package defines it, its defaults and rules, and registers it with
// RegisterRegistryType; this package knows no registry type's fields.
type RegistrySpec interface {
	// Defaults fills the fields left unset.
	Defaults()
	// Validate reports every problem of the defaulted configuration; at
	// is the registry's place.
	Validate(at At)
}

var registryTypes = newKinds[RegistrySpec]("registry type")

// RegisterRegistryType makes name a value of a registry's type: such a
// registry decodes its keys other than the generic ones (type,
// release_after, startup_wait) into newSpec(), a pointer to a struct.
// Called from the type's package's init.
func RegisterRegistryType(name string, newSpec func() RegistrySpec) {
	registryTypes.register(name, newSpec, false)
}

// RegistryTypes lists the registered registry types, sorted.
func RegistryTypes() []string { return registryTypes.names() }

var registryType = reflect.TypeFor[Registry]()

// decodeRegistry decodes one registry: its generic keys into the Registry,
// the others into the settings of its type.
func (d *decoder) decodeRegistry(n *yaml.Node, v reflect.Value, path string, line int) {
	if n.Kind != yaml.MappingNode {
		d.problems.add(path, line, "want a mapping, got %s", describe(n))
		return
	}
	// type chooses the settings the other keys decode into: it is read
	// first, and once.
	var rest []keyValue
	r := v.Addr().Interface().(*Registry)
	for _, kv := range d.pairs(n, path) {
		if kv.key.Value != "type" {
			rest = append(rest, kv)
			continue
		}
		p := keyPath(path, "type")
		d.lines[p] = kv.key.Line
		d.decode(kv.value, v.FieldByName("Type"), p)
	}
	given := r.Type
	if r.Type == "" {
		r.Type = DefaultRegistryType // type: "" or ~ is the default, as an absent one
	}
	var spec reflect.Value
	if s, ok := registryTypes.make(r.Type); ok {
		r.Spec = s
		spec = reflect.ValueOf(s).Elem()
	} else if given != "" {
		p := keyPath(path, "type")
		d.problems.add(p, d.lines[p], "unknown registry type %q (known: %s)", r.Type, strings.Join(RegistryTypes(), ", "))
	}
	d.decodeParts(rest, path, v, spec, func(key string) string {
		if r.Spec == nil {
			return "" // an unknown type: that problem is reported
		}
		for _, t := range RegistryTypes() {
			if s, _ := registryTypes.make(t); hasYAMLField(reflect.TypeOf(s).Elem(), key) {
				return key + " is a setting of " + t + " registries, not of " + r.Type + " ones"
			}
		}
		return "unknown key"
	})
}

// MarshalYAML writes the registry as it is read: its generic keys and its
// type's, side by side.
func (r Registry) MarshalYAML() (any, error) {
	type plain Registry
	return inline(plain(r), r.Spec), nil
}

// Section is a top-level key of the configuration owned by another
// package (upstreams:, dubbo:), which registers it with RegisterSection.
type Section interface {
	// Defaults fills the fields left unset. Sections are defaulted before
	// registries and routes, which may read them.
	Defaults(c *Config)
	// Validate reports every problem of the defaulted section; at is its place.
	Validate(at At, c *Config)
}

// SectionWarner is a Section that also finds what is allowed but
// probably unintended (an upstream no route uses).
type SectionWarner interface {
	Warn(at At, c *Config)
}

var sections = newKinds[Section]("section")

// RegisterSection makes key a top-level key of the configuration whose
// value decodes into newSection() (a pointer to a struct or a map).
// Called from the owning package's init.
func RegisterSection(key string, newSection func() Section) {
	if hasYAMLField(configType, key) {
		panic("config: section " + key + " is a key of Config")
	}
	sections.register(key, newSection, true)
}

// Section returns the section registered as key: the one decoded, or
// after Defaults an empty one defaulted; nil for an unknown key or
// before Defaults when the file did not set it.
func (c *Config) Section(key string) Section { return c.Sections[key] }

var configType = reflect.TypeFor[Config]()

// decodeConfig decodes the top level: Config's own keys and the registered sections.
func (d *decoder) decodeConfig(n *yaml.Node, v reflect.Value, path string, line int) {
	if n.Kind != yaml.MappingNode {
		d.problems.add(path, line, "want a mapping, got %s", describe(n))
		return
	}
	c := v.Addr().Interface().(*Config)
	fields := yamlFields(configType)
	for _, kv := range d.pairs(n, path) {
		p := keyPath(path, kv.key.Value)
		if f, ok := fieldNamed(fields, kv.key.Value); ok {
			d.lines[p] = kv.key.Line
			d.decode(kv.value, v.Field(f.index), p)
			continue
		}
		s, ok := sections.make(kv.key.Value)
		if !ok {
			names := make([]string, 0, len(fields))
			for _, f := range fields {
				names = append(names, f.name)
			}
			names = append(names, sections.names()...)
			d.problems.add(p, kv.key.Line, "unknown key (known: %s)", strings.Join(names, ", "))
			continue
		}
		d.lines[p] = kv.key.Line
		d.decode(kv.value, reflect.ValueOf(s).Elem(), p)
		if c.Sections == nil {
			c.Sections = make(map[string]Section)
		}
		c.Sections[kv.key.Value] = s
	}
}

// MarshalYAML writes the configuration as it is read: its own keys and
// its sections side by side.
func (c Config) MarshalYAML() (any, error) {
	type plain Config
	parts := []any{plain(c)}
	for _, key := range sections.names() {
		if s := c.Sections[key]; s != nil {
			parts = append(parts, sectionPart(key, s))
		}
	}
	return inline(parts...), nil
}

// sectionPart is a struct of one field, key, holding s.
func sectionPart(key string, s Section) any {
	t := reflect.StructOf([]reflect.StructField{{Name: "S", Type: reflect.TypeOf(s), Tag: reflect.StructTag(`yaml:"` + key + `"`)}})
	v := reflect.New(t).Elem()
	v.Field(0).Set(reflect.ValueOf(s))
	return v.Interface()
}
