package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// substitute replaces ${NAME}, ${NAME:-default} and $${ in every scalar value
// below n, in place. Mapping keys are left alone, and a substituted value is
// never parsed as YAML again, so a variable cannot add structure. A scalar
// that was one whole reference gets its tag re-resolved from the new value, so
// "${PORT}" can fill an integer field.
func substitute(n *yaml.Node, path string, lookup func(string) (string, bool), ps *problems) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			substitute(c, path, lookup, ps)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			substitute(c, indexPath(path, i), lookup, ps)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			child := keyPath(path, key.Value)
			if key.ShortTag() == "!!merge" {
				child = path
			}
			substitute(value, child, lookup, ps)
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		value, whole, err := expand(n.Value, lookup)
		if err != nil {
			ps.add(path, n.Line, "%v", err)
		}
		n.Value = value
		if n.Style&yaml.TaggedStyle != 0 {
			return // an explicit tag such as !!str stands
		}
		if whole {
			n.Tag, n.Style = "", 0
		} else {
			n.Tag = "!!str"
		}
	}
	// Alias nodes are skipped: their anchor is substituted where it is defined.
}

// expand substitutes references in s. whole reports that s was exactly one
// ${...} reference. Unset variables without a default are substituted with ""
// and reported in the error together with any syntax error.
func expand(s string, lookup func(string) (string, bool)) (out string, whole bool, err error) {
	var (
		b       strings.Builder
		missing []string
		refs    int
	)
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '$')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+j])
		i += j
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
			continue
		case !strings.HasPrefix(s[i:], "${"):
			b.WriteByte('$')
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return s, false, fmt.Errorf(`unterminated "${" in %q (write "$${" for a literal "${")`, s)
		}
		start, body := i, s[i+2:i+2+end]
		i += 2 + end + 1
		name, def, hasDefault := strings.Cut(body, ":-")
		if !isEnvName(name) {
			hint := ""
			if strings.ContainsAny(name, ":-") {
				hint = "; a default is written ${NAME:-default}"
			}
			return s, false, fmt.Errorf("bad environment variable name %q in %q%s", name, s, hint)
		}
		value, ok := lookup(name)
		switch {
		case hasDefault && value == "":
			value = def
		case !ok:
			missing = append(missing, name)
		}
		b.WriteString(value)
		refs++
		whole = start == 0 && i == len(s)
	}
	switch len(missing) {
	case 0:
	case 1:
		err = fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", missing[0], missing[0])
	default:
		err = fmt.Errorf("environment variables %s are not set", strings.Join(missing, ", "))
	}
	return b.String(), whole && refs == 1, err
}

// isEnvName reports whether s is a shell-style variable name.
func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' && i > 0) {
			return false
		}
	}
	return true
}
