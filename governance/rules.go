package governance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Where Dubbo's config centre keeps rules in ZooKeeper: the root
// "/<namespace>/config" (namespace "dubbo") and the group "dubbo"
// (dubbo-go v3.3.0 config_center/zookeeper/impl.go: rootPath
// "/dubbo/config", key path root/group/key with the default group "dubbo";
// Java's ZookeeperDynamicConfiguration the same).
const (
	DefaultRoot  = "/dubbo/config"
	DefaultGroup = "dubbo"
)

// The suffixes of rule keys (dubbo-go common/constant/key.go:
// ConfiguratorSuffix, TagRouterRuleSuffix, ConditionRouterRuleSuffix).
const (
	SuffixConfigurators   = ".configurators"
	SuffixTagRouter       = ".tag-router"
	SuffixConditionRouter = ".condition-router"
)

// Bounds of a rule node.
const (
	// MaxRuleBytes bounds a rule's YAML: ZooKeeper's own node limit.
	MaxRuleBytes = 1 << 20
	// MaxConditions bounds the conditions of one rule.
	MaxConditions = 64
	// MaxTags bounds the tags of a tag rule, MaxAddresses the addresses of
	// a tag or configurator item, MaxItems the items of a configurator.
	MaxTags      = 256
	MaxAddresses = 1024
	MaxItems     = 256
	// MaxParamMatches bounds a tag's match list.
	MaxParamMatches = 32
	// MaxRegex bounds a regex of a tag's match.
	MaxRegex = 256
)

// Kind is what a rule does, from its key's suffix.
type Kind uint8

// The kinds of rules.
const (
	KindConfigurators Kind = iota + 1
	KindTagRouter
	KindConditionRouter
)

func (k Kind) String() string {
	switch k {
	case KindConfigurators:
		return "configurators"
	case KindTagRouter:
		return "tag-router"
	case KindConditionRouter:
		return "condition-router"
	}
	return "unknown"
}

// Key is the key of the rule of kind about name (an application, or a
// ServiceKey).
func Key(name string, kind Kind) string { return name + "." + kind.String() }

// Path is the ZooKeeper node of key under root and group.
func Path(root, group, key string) string {
	return strings.TrimRight(root, "/") + "/" + group + "/" + key
}

// ServiceKey is the name of a service in rule keys: Dubbo's
// URL.getColonSeparatedKey, "interface:version:group", empty parts kept
// empty ("org.example.Users::"; dubbo-go common/url.go ColonSeparatedKey,
// which also writes version 0.0.0 as empty).
func ServiceKey(iface, version, group string) string {
	if version == "0.0.0" {
		version = ""
	}
	return iface + ":" + version + ":" + group
}

// Rule is one parsed rule node: exactly one of its kinds is set.
type Rule struct {
	Kind          Kind
	Configurators *ConfiguratorRule
	TagRouter     *TagRule
	Condition     *ConditionRule
}

// Parse parses the data of rule node key (its kind from the suffix). A
// rule that cannot be parsed, or that asks for what this gateway does not
// do, is an error naming the problem; nothing of it applies.
func Parse(key string, data []byte) (*Rule, error) {
	if len(data) > MaxRuleBytes {
		return nil, fmt.Errorf("%d bytes: more than %d", len(data), MaxRuleBytes)
	}
	var (
		r   = &Rule{}
		err error
	)
	switch {
	case strings.HasSuffix(key, SuffixConfigurators):
		r.Kind = KindConfigurators
		r.Configurators, err = parseConfigurators(data)
	case strings.HasSuffix(key, SuffixTagRouter):
		r.Kind = KindTagRouter
		r.TagRouter, err = parseTagRule(data)
	case strings.HasSuffix(key, SuffixConditionRouter):
		r.Kind = KindConditionRouter
		r.Condition, err = parseConditionRule(data)
	default:
		return nil, fmt.Errorf("key %q has no rule suffix (.configurators, .tag-router, .condition-router)", key)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// decode decodes one YAML document into v. yaml.v3 refuses excessive
// aliasing (a billion-laughs document) and reads linearly otherwise.
func decode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty rule")
		}
		return fmt.Errorf("not the YAML of a rule: %w", err)
	}
	return nil
}

// version checks a rule's configVersion: v2.7 and v3.0 (and none, read as
// v2.7) are read; others are refused by name.
func version(v string) error {
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(v)), "v") {
	case "", "2.7", "3.0":
		return nil
	case "3.1":
		return errors.New("configVersion v3.1 (several weighted destinations, trafficDisable) is not supported: write v3.0 conditions")
	}
	return fmt.Errorf("configVersion %q is not supported: want v2.7 or v3.0", v)
}

// ConditionRule is a condition router rule.
type ConditionRule struct {
	Key, Scope, ConfigVersion string
	Force, Runtime, Enabled   bool
	Priority                  int
	Conditions                []*Condition
}

type conditionYAML struct {
	ConfigVersion string   `yaml:"configVersion"`
	Scope         string   `yaml:"scope"`
	Key           string   `yaml:"key"`
	Force         bool     `yaml:"force"`
	Runtime       bool     `yaml:"runtime"`
	Enabled       *bool    `yaml:"enabled"`
	Priority      int      `yaml:"priority"`
	Conditions    []string `yaml:"conditions"`
}

func parseConditionRule(data []byte) (*ConditionRule, error) {
	var head struct {
		ConfigVersion string `yaml:"configVersion"`
	}
	if err := decode(data, &head); err != nil {
		return nil, err
	}
	if err := version(head.ConfigVersion); err != nil {
		return nil, err
	}
	var y conditionYAML
	if err := decode(data, &y); err != nil {
		return nil, err
	}
	if len(y.Conditions) == 0 {
		return nil, errors.New("conditions: none")
	}
	if len(y.Conditions) > MaxConditions {
		return nil, fmt.Errorf("conditions: %d, more than %d", len(y.Conditions), MaxConditions)
	}
	r := &ConditionRule{Key: y.Key, Scope: y.Scope, ConfigVersion: y.ConfigVersion, Force: y.Force, Runtime: y.Runtime,
		Enabled: y.Enabled == nil || *y.Enabled, Priority: y.Priority}
	for i, text := range y.Conditions {
		c, err := ParseCondition(text)
		if err != nil {
			return nil, fmt.Errorf("conditions[%d] %q: %w", i, text, err)
		}
		r.Conditions = append(r.Conditions, c)
	}
	return r, nil
}
