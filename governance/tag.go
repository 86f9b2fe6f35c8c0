package governance

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/dubbogw/dubbogw/cluster"
)

// TagKey is the provider URL parameter of a static tag and the attachment
// that carries a request's tag (dubbo-go common/constant/key.go Tagkey).
const TagKey = "dubbo.tag"

// TagRule is a tag router rule: dynamic tags of a provider application.
type TagRule struct {
	Key, ConfigVersion string
	Force, Enabled     bool
	Tags               []Tag
}

// Tag names the providers of one tag.
type Tag struct {
	Name      string
	Addresses []string
	Match     []ParamMatch
}

// ParamMatch is one condition of a tag's match on a provider parameter
// (dubbo-go common/match.go StringMatch: the first of exact, prefix,
// regex, wildcard, empty, noempty set decides).
type ParamMatch struct {
	Key                     string
	Exact, Prefix, Wildcard string
	Regex                   *regexp.Regexp
	Empty, NoEmpty          bool
}

type tagYAML struct {
	ConfigVersion string `yaml:"configVersion"`
	Key           string `yaml:"key"`
	Force         bool   `yaml:"force"`
	Enabled       *bool  `yaml:"enabled"`
	Tags          []struct {
		Name      string   `yaml:"name"`
		Addresses []string `yaml:"addresses"`
		Match     []struct {
			Key   string `yaml:"key"`
			Value struct {
				Exact    string `yaml:"exact"`
				Prefix   string `yaml:"prefix"`
				Regex    string `yaml:"regex"`
				Wildcard string `yaml:"wildcard"`
				Empty    string `yaml:"empty"`
				NoEmpty  string `yaml:"noempty"`
			} `yaml:"value"`
		} `yaml:"match"`
	} `yaml:"tags"`
}

func parseTagRule(data []byte) (*TagRule, error) {
	var y tagYAML
	if err := decode(data, &y); err != nil {
		return nil, err
	}
	if err := version(y.ConfigVersion); err != nil {
		return nil, err
	}
	if len(y.Tags) > MaxTags {
		return nil, fmt.Errorf("tags: %d, more than %d", len(y.Tags), MaxTags)
	}
	r := &TagRule{Key: y.Key, ConfigVersion: y.ConfigVersion, Force: y.Force, Enabled: y.Enabled == nil || *y.Enabled}
	seen := map[string]bool{}
	for i, yt := range y.Tags {
		if yt.Name == "" {
			return nil, fmt.Errorf("tags[%d]: no name", i)
		}
		if seen[yt.Name] {
			return nil, fmt.Errorf("tags[%d]: tag %q defined twice", i, yt.Name)
		}
		seen[yt.Name] = true
		if len(yt.Addresses) > MaxAddresses {
			return nil, fmt.Errorf("tags[%d] %q: %d addresses, more than %d", i, yt.Name, len(yt.Addresses), MaxAddresses)
		}
		if len(yt.Match) > MaxParamMatches {
			return nil, fmt.Errorf("tags[%d] %q: %d matches, more than %d", i, yt.Name, len(yt.Match), MaxParamMatches)
		}
		t := Tag{Name: yt.Name, Addresses: yt.Addresses}
		for j, ym := range yt.Match {
			at := fmt.Sprintf("tags[%d] %q match[%d]", i, yt.Name, j)
			if ym.Key == "" {
				return nil, errors.New(at + ": no key")
			}
			v := ym.Value
			m := ParamMatch{Key: ym.Key, Exact: v.Exact, Prefix: v.Prefix, Wildcard: v.Wildcard, Empty: v.Empty != "", NoEmpty: v.NoEmpty != ""}
			if v.Regex != "" {
				if len(v.Regex) > MaxRegex {
					return nil, fmt.Errorf("%s: regex longer than %d bytes", at, MaxRegex)
				}
				re, err := regexp.Compile(v.Regex) // RE2: linear in the value's length
				if err != nil {
					return nil, fmt.Errorf("%s: regex: %w", at, err)
				}
				m.Regex = re
			}
			if v.Exact == "" && v.Prefix == "" && v.Regex == "" && v.Wildcard == "" && !m.Empty && !m.NoEmpty {
				return nil, errors.New(at + ": value sets none of exact, prefix, regex, wildcard, empty, noempty")
			}
			t.Match = append(t.Match, m)
		}
		r.Tags = append(r.Tags, t)
	}
	return r, nil
}

// matches reports whether value satisfies m.
func (m *ParamMatch) matches(value string) bool {
	switch {
	case m.Exact != "":
		return value == m.Exact
	case m.Prefix != "":
		return strings.HasPrefix(value, m.Prefix)
	case m.Regex != nil:
		return m.Regex.MatchString(value)
	case m.Wildcard != "":
		return m.Wildcard == "*" || value == m.Wildcard
	case m.Empty:
		return value == ""
	case m.NoEmpty:
		return value != ""
	}
	return false
}

// providerParam is what a tag's match reads of p: its URL parameter, or
// its host, port, address or protocol.
func providerParam(p *cluster.Provider, key string) string {
	m := match{src: providerSource(key), name: key}
	v, _ := m.thenValue(p)
	return v
}

// addressMatches reports whether one of addrs names p's address: exactly,
// by host alone, or 0.0.0.0 with p's port or alone (any).
func addressMatches(addrs []string, p *cluster.Provider) bool {
	host, port := splitAddr(p.Addr)
	for _, a := range addrs {
		switch a {
		case p.Addr, host, "0.0.0.0", "*":
			return true
		}
		if h, pt := splitAddr(a); pt == port && (h == "0.0.0.0" || h == "*") {
			return true
		}
	}
	return false
}

// staticTag is p's own tag.
func staticTag(p *cluster.Provider) string { return p.Params.Get(TagKey) }

// tagged reports whether p is one of the providers of tag t of rule r.
func (r *TagRule) tagged(t *Tag, p *cluster.Provider) bool {
	switch {
	case len(t.Match) > 0:
		for i := range t.Match {
			if !t.Match[i].matches(providerParam(p, t.Match[i].Key)) {
				return false
			}
		}
		return true
	case len(t.Addresses) > 0:
		return addressMatches(t.Addresses, p)
	}
	return staticTag(p) == t.Name
}

// inAnyAddresses reports whether some tag of r names p by address.
func (r *TagRule) inAnyAddresses(p *cluster.Provider) bool {
	if r == nil {
		return false
	}
	for i := range r.Tags {
		if len(r.Tags[i].Addresses) > 0 && addressMatches(r.Tags[i].Addresses, p) {
			return true
		}
	}
	return false
}

// routeTag returns the providers of ps a request with tag goes to under
// rule r (nil: static tags alone), appended to out.
func routeTag(r *TagRule, tag string, ps []*cluster.Provider, out []*cluster.Provider) []*cluster.Provider {
	if r != nil && (!r.Enabled || len(r.Tags) == 0) {
		r = nil
	}
	untagged := func(out []*cluster.Provider) []*cluster.Provider {
		for _, p := range ps {
			if staticTag(p) == "" && !r.inAnyAddresses(p) {
				out = append(out, p)
			}
		}
		return out
	}
	if tag == "" {
		return untagged(out)
	}
	var t *Tag
	if r != nil {
		for i := range r.Tags {
			if r.Tags[i].Name == tag {
				t = &r.Tags[i]
			}
		}
	}
	if t == nil {
		t = &Tag{Name: tag}
	}
	n := len(out)
	for _, p := range ps {
		if r.tagged(t, p) {
			out = append(out, p)
		}
	}
	if len(out) > n || (r != nil && r.Force) {
		return out
	}
	return untagged(out)
}
