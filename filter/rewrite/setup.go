// Package rewrite implements the rewrite route filter: it changes the path
// sent upstream by stripping a prefix, filling a path template with the
// route's parameters, or applying a regular expression, then optionally
// adding a prefix.
package rewrite

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

// rewriter is a compiled Config; it is read-only once New returns.
// At most one of strip, template and re is set.
type rewriter struct {
	strip       string // decoded prefix without trailing "/"
	template    []part
	re          *regexp.Regexp
	replacement string
	addPrefix   string // escaped prefix without trailing "/"
}

// part is a literal piece of a path template, or a parameter.
type part struct {
	literal string // decoded
	param   string // r.PathValue name; "" for a literal
}

// New compiles cfg into the rewrite filter. params are the names of the
// route's path parameters (without "..."); a template may only use those.
// Its error lists every problem, each naming its field.
func New(cfg *Config, params []string) (filter.Filter, error) {
	var rw *rewriter
	if err := config.Check("", func(at config.At) { rw = compile(cfg, params, at) }); err != nil {
		return nil, err
	}
	return rw, nil
}

// compile builds the rewriter of cfg, reporting its problems at at: the
// rules of the rewrite filter, written once for Validate and New.
func compile(cfg *Config, params []string, at config.At) *rewriter {
	var set []string
	for _, f := range []struct{ name, value string }{
		{"strip_prefix", cfg.StripPrefix}, {"path", cfg.Path}, {"regex", cfg.Regex},
	} {
		if f.value != "" {
			set = append(set, f.name)
		}
	}
	if len(set) > 1 {
		at.Errorf("set at most one of strip_prefix, path and regex (got %s)", strings.Join(set, " and "))
	}
	if len(set) == 0 && cfg.AddPrefix == "" {
		at.Errorf("empty rewrite: set strip_prefix, path, regex or add_prefix")
	}
	if cfg.Replacement != "" && cfg.Regex == "" {
		at.Field("replacement").Errorf("only used with regex")
	}

	rw := &rewriter{}
	var err error
	if cfg.StripPrefix != "" {
		if rw.strip, err = cleanPrefix(cfg.StripPrefix); err != nil {
			at.Field("strip_prefix").Err(err)
		}
	}
	if cfg.Path != "" {
		if rw.template, err = parseTemplate(cfg.Path, params); err != nil {
			at.Field("path").Errorf("%q: %v", cfg.Path, err)
		}
	}
	if cfg.Regex != "" {
		if rw.re, err = regexp.Compile(cfg.Regex); err != nil {
			at.Field("regex").Errorf("%q does not compile: %v", cfg.Regex, err)
		} else if err := checkReplacement(rw.re, cfg.Replacement); err != nil {
			at.Field("replacement").Errorf("%q: %v", cfg.Replacement, err)
		}
		rw.replacement = cfg.Replacement
	}
	if cfg.AddPrefix != "" {
		p, err := cleanPrefix(cfg.AddPrefix)
		if err != nil {
			at.Field("add_prefix").Err(err)
		}
		rw.addPrefix = escapePath(p)
	}
	return rw
}

// cleanPrefix checks a path prefix written as a decoded path and drops a
// trailing "/": "/api/" and "/api" are the same prefix.
func cleanPrefix(p string) (string, error) {
	if err := config.CheckPath(p); err != nil {
		return "", err
	}
	trimmed := strings.TrimRight(p, "/")
	if trimmed == "" {
		return "", fmt.Errorf("%q has no effect", p)
	}
	if path.Clean(trimmed) != trimmed {
		return "", fmt.Errorf("%q is not a clean path (no \"//\", \".\" or \"..\" segments), e.g. %q", p, path.Clean(trimmed))
	}
	return trimmed, nil
}

// parseTemplate splits a path template into literals and "{name}"
// parameters ("{name...}" is accepted too), checking each name against the
// route's parameters.
func parseTemplate(tmpl string, params []string) ([]part, error) {
	if err := config.CheckPath(tmpl); err != nil {
		return nil, err
	}
	var parts []part
	for rest := tmpl; rest != ""; {
		open, end := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
		if end >= 0 && (open < 0 || end < open) {
			return nil, errors.New(`"}" without "{"`)
		}
		if open < 0 {
			parts = append(parts, part{literal: rest})
			break
		}
		if end < 0 {
			return nil, errors.New(`"{" without "}"`)
		}
		if open > 0 {
			parts = append(parts, part{literal: rest[:open]})
		}
		name := strings.TrimSuffix(rest[open+1:end], "...")
		if !isIdentifier(name) {
			return nil, fmt.Errorf("%q is not a parameter: want {name} with name a letter or _ followed by letters, digits or _", rest[open:end+1])
		}
		if !slices.Contains(params, name) {
			if len(params) == 0 {
				return nil, fmt.Errorf("{%s}: the route's path captures no parameters (default_filters and prefix routes have none)", name)
			}
			return nil, fmt.Errorf("{%s} is not a parameter of the route's match.path (it captures: %s)", name, strings.Join(params, ", "))
		}
		parts = append(parts, part{param: name})
		rest = rest[end+1:]
	}
	return parts, nil
}

func isIdentifier(s string) bool {
	for i, r := range s {
		if !(unicode.IsLetter(r) || r == '_' || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// checkReplacement rejects replacements that regexp.Expand would silently
// get wrong: references to groups the regex lacks ("$1x" is group "1x",
// not group 1 then "x") and "%" not starting an escape, since the
// replacement is written in the percent-encoded path.
func checkReplacement(re *regexp.Regexp, repl string) error {
	for i := 0; i < len(repl); i++ {
		switch repl[i] {
		case '%':
			if i+2 >= len(repl) || !isHex(repl[i+1]) || !isHex(repl[i+2]) {
				return errors.New(`"%" must start an escape such as %2F: the path is percent-encoded (write %25 for "%")`)
			}
		case '$':
			name, n, ok := groupRef(repl[i+1:])
			i += n
			if !ok {
				continue // "$$", or a malformed reference regexp.Expand writes as text
			}
			if num, isNum := groupNumber(name); isNum {
				if num > re.NumSubexp() {
					return fmt.Errorf("$%s: the regex has %d groups", name, re.NumSubexp())
				}
			} else if re.SubexpIndex(name) < 0 {
				hint := ""
				if name[0] >= '0' && name[0] <= '9' {
					hint = fmt.Sprintf(` (for a group followed by text, write "${%d}...")`, leadingNumber(name))
				}
				return fmt.Errorf("$%s names no group of the regex%s", name, hint)
			}
		}
	}
	return nil
}

// groupRef reads a reference after "$" as regexp.Expand does: "{name}" or
// the longest run of letters, digits and "_". n is the length read; "$$"
// reads as no reference with n 1.
func groupRef(s string) (name string, n int, ok bool) {
	if strings.HasPrefix(s, "$") {
		return "", 1, false
	}
	brace := strings.HasPrefix(s, "{")
	start := 0
	if brace {
		start = 1
	}
	i := start
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			break
		}
		i += size
	}
	if i == start {
		return "", 0, false
	}
	name = s[start:i]
	if brace {
		if i >= len(s) || s[i] != '}' {
			return "", 0, false
		}
		i++
	}
	return name, i, true
}

// groupNumber parses a numeric group name as regexp.Expand does.
func groupNumber(name string) (int, bool) {
	if len(name) > 1 && name[0] == '0' {
		return 0, false
	}
	num := 0
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' || num >= 1e8 {
			return 0, false
		}
		num = num*10 + int(name[i]-'0')
	}
	return num, true
}

func leadingNumber(s string) int {
	n := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1e8; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// escapePath is the standard escaping of a decoded path, as url.URL uses it.
func escapePath(p string) string {
	u := url.URL{Path: p}
	return u.EscapedPath()
}
