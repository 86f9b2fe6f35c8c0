package config

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decoder decodes a YAML node tree into Go values strictly: unknown keys,
// duplicate keys and values of the wrong type become problems at their YAML
// path, and decoding goes on so that every problem is found in one pass.
type decoder struct {
	problems problems
	// lines maps each decoded path to the line of its key (or list item).
	lines map[string]int
}

func newDecoder() *decoder { return &decoder{lines: make(map[string]int)} }

// lineOf returns the line of path, or of its nearest decoded ancestor.
func (d *decoder) lineOf(path string) int {
	if line, ok := d.lines[path]; ok {
		return line
	}
	segs := splitPath(path)
	for i := len(segs) - 2; i >= 0; i-- {
		if line, ok := d.lines[path[:segs[i].end]]; ok {
			return line
		}
	}
	return d.lines[""]
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// decode stores n into v. line is where n is written, which for an alias is
// the alias, not its anchor.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	line := n.Line
	n = unalias(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		v.SetZero()
		return
	}
	switch v.Type() {
	case filterType:
		d.decodeFilter(n, v, path, line)
		return
	case routeType:
		d.decodeRoute(n, v, path, line)
		return
	case registryType:
		d.decodeRegistry(n, v, path, line)
		return
	case configType:
		d.decodeConfig(n, v, path, line)
		return
	}
	if v.CanAddr() && reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.problems.add(path, line, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(n, elem.Elem(), path)
		v.Set(elem)
	case reflect.Struct:
		d.decodeStruct(n, v, path, line)
	case reflect.Map:
		d.decodeMap(n, v, path, line)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.problems.add(path, line, "want a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := indexPath(path, i)
			d.lines[p] = item.Line
			d.decode(item, s.Index(i), p)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.problems.add(path, line, "want a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.problems.add(path, line, "want an integer, got %s%s", describe(n), quoteHint(n, "!!int"))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		var f float64
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (tag != "!!float" && tag != "!!int") || n.Decode(&f) != nil {
			d.problems.add(path, line, "want a number, got %s%s", describe(n), quoteHint(n, "!!float"))
			return
		}
		v.SetFloat(f)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.problems.add(path, line, "want true or false, got %s%s", describe(n), quoteHint(n, "!!bool"))
			return
		}
		v.SetBool(b)
	default:
		// Only reachable if types.go gains a field of a kind not handled above.
		d.problems.add(path, line, "cannot decode into a Go %s", v.Type())
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, line int) {
	if n.Kind != yaml.MappingNode {
		d.problems.add(path, line, "want a mapping, got %s", describe(n))
		return
	}
	fields := yamlFields(v.Type())
	for _, kv := range d.pairs(n, path) {
		p := keyPath(path, kv.key.Value)
		i := slices.IndexFunc(fields, func(f yamlField) bool { return f.name == kv.key.Value })
		if i < 0 {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.name
			}
			d.problems.add(p, kv.key.Line, "unknown key (known: %s)", strings.Join(names, ", "))
			continue
		}
		d.lines[p] = kv.key.Line
		d.decode(kv.value, v.Field(fields[i].index), p)
	}
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string, line int) {
	if n.Kind != yaml.MappingNode {
		d.problems.add(path, line, "want a mapping, got %s", describe(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		d.problems.add(path, line, "cannot decode into a Go %s", v.Type())
		return
	}
	m := reflect.MakeMap(v.Type())
	for _, kv := range d.pairs(n, path) {
		p := keyPath(path, kv.key.Value)
		d.lines[p] = kv.key.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(kv.value, elem, p)
		m.SetMapIndex(reflect.ValueOf(kv.key.Value).Convert(v.Type().Key()), elem)
	}
	v.Set(m)
}

type keyValue struct{ key, value *yaml.Node }

// pairs lists the entries of mapping n: its own keys (a repeated key is a
// problem), then keys brought in by "<<: *anchor" merges that n does not set.
func (d *decoder) pairs(n *yaml.Node, path string) []keyValue {
	var (
		out    []keyValue
		merges []*yaml.Node
		seen   = make(map[string]int)
	)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			d.problems.add(path, key.Line, "mapping keys must be names, got %s", describe(key))
			continue
		}
		if key.ShortTag() == "!!merge" {
			merges = append(merges, value)
			continue
		}
		if first, dup := seen[key.Value]; dup {
			d.problems.add(keyPath(path, key.Value), key.Line, "duplicate key (first set on line %d)", first)
			continue
		}
		seen[key.Value] = key.Line
		out = append(out, keyValue{key, value})
	}
	for _, m := range merges {
		for _, src := range mergeSources(m) {
			if src.Kind != yaml.MappingNode {
				d.problems.add(path, unalias(m).Line, "<< merges a mapping or a list of mappings, got %s", describe(src))
				continue
			}
			for _, kv := range mergedPairs(src) {
				if _, set := seen[kv.key.Value]; !set {
					seen[kv.key.Value] = kv.key.Line
					out = append(out, kv)
				}
			}
		}
	}
	return out
}

// mergedPairs lists the entries a merge source contributes, its own merges
// included; the first occurrence of a key wins. Problems inside the source are
// reported where the source itself is decoded, not here.
func mergedPairs(n *yaml.Node) []keyValue {
	var out []keyValue
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		switch {
		case key.Kind != yaml.ScalarNode:
		case key.ShortTag() == "!!merge":
			merges = append(merges, value)
		default:
			out = append(out, keyValue{key, value})
		}
	}
	for _, m := range merges {
		for _, src := range mergeSources(m) {
			if src.Kind == yaml.MappingNode {
				out = append(out, mergedPairs(src)...)
			}
		}
	}
	return out
}

// unalias follows an alias to the node it names.
func unalias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// mergeSources lists what the value of a "<<" key merges, aliases
// followed: one mapping or a list of them (anything else is returned too,
// for the caller to report).
func mergeSources(m *yaml.Node) []*yaml.Node {
	m = unalias(m)
	if m.Kind != yaml.SequenceNode {
		return []*yaml.Node{m}
	}
	out := make([]*yaml.Node, len(m.Content))
	for i, src := range m.Content {
		out[i] = unalias(src)
	}
	return out
}

type yamlField struct {
	name  string
	index int
}

// yamlFields lists the YAML keys of a struct type in field order.
func yamlFields(t reflect.Type) []yamlField {
	var fields []yamlField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name)
		}
		fields = append(fields, yamlField{name: name, index: i})
	}
	return fields
}

// describe names what a node holds, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	n = unalias(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		switch n.ShortTag() {
		case "!!str":
			return "the string " + strconv.Quote(v)
		case "!!int", "!!float":
			return "the number " + v
		case "!!bool":
			return v
		default:
			return strconv.Quote(v)
		}
	default:
		return "nothing"
	}
}

// quoteHint suggests dropping quotes when a quoted scalar would have had the wanted tag.
func quoteHint(n *yaml.Node, want string) string {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		return ""
	}
	plain := yaml.Node{Kind: yaml.ScalarNode, Value: n.Value}
	if plain.ShortTag() == want {
		return " (drop the quotes)"
	}
	return ""
}
