package governance

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ConfiguratorRule is a configurators rule (dubbo-go
// config_center/parser/configuration_parser.go ConfiguratorConfig).
type ConfiguratorRule struct {
	Key, Scope, ConfigVersion string
	Enabled                   bool
	Items                     []ConfigItem
}

// ConfigItem is one item of a configurators rule: parameters and whom
// they apply to.
type ConfigItem struct {
	Side              string // "consumer" or "provider" (also for none, as Dubbo's URL.getSide)
	Addresses         []string
	ProviderAddresses []string
	Services          []string
	Applications      []string
	// The parameters applied; nil when the item does not set them.
	Weight   *int
	Disabled *bool
	Timeout  time.Duration // 0: not set
	// Ignored are the item's other parameters, which this gateway does
	// not apply (shown with the rule).
	Ignored []string
}

type configuratorYAML struct {
	ConfigVersion string `yaml:"configVersion"`
	Scope         string `yaml:"scope"`
	Key           string `yaml:"key"`
	Enabled       *bool  `yaml:"enabled"`
	Configs       []struct {
		Type              string         `yaml:"type"`
		Enabled           *bool          `yaml:"enabled"`
		Side              string         `yaml:"side"`
		Addresses         []string       `yaml:"addresses"`
		ProviderAddresses []string       `yaml:"providerAddresses"`
		Services          []string       `yaml:"services"`
		Applications      []string       `yaml:"applications"`
		Parameters        map[string]any `yaml:"parameters"`
		Match             any            `yaml:"match"`
	} `yaml:"configs"`
}

func parseConfigurators(data []byte) (*ConfiguratorRule, error) {
	var y configuratorYAML
	if err := decode(data, &y); err != nil {
		return nil, err
	}
	if err := version(y.ConfigVersion); err != nil {
		return nil, err
	}
	if len(y.Configs) > MaxItems {
		return nil, fmt.Errorf("configs: %d items, more than %d", len(y.Configs), MaxItems)
	}
	r := &ConfiguratorRule{Key: y.Key, Scope: y.Scope, ConfigVersion: y.ConfigVersion, Enabled: y.Enabled == nil || *y.Enabled}
	for i, c := range y.Configs {
		at := fmt.Sprintf("configs[%d]", i)
		if c.Match != nil {
			return nil, errors.New(at + ": match (v3.0 address/param conditions) is not supported: use addresses, providerAddresses, services and applications")
		}
		if c.Enabled != nil && !*c.Enabled && c.Type != "" && c.Type != "general" {
			continue // an item switched off on its own (Dubbo reads an item's enabled when its type is not general)
		}
		for name, list := range map[string][]string{"addresses": c.Addresses, "providerAddresses": c.ProviderAddresses, "services": c.Services, "applications": c.Applications} {
			if len(list) > MaxAddresses {
				return nil, fmt.Errorf("%s: %s: %d entries, more than %d", at, name, len(list), MaxAddresses)
			}
		}
		it := ConfigItem{Side: "provider", Addresses: c.Addresses, ProviderAddresses: c.ProviderAddresses, Services: c.Services, Applications: c.Applications}
		switch c.Side {
		case "", "provider":
		case "consumer":
			it.Side = "consumer"
		default:
			return nil, fmt.Errorf("%s: side %q: want consumer or provider", at, c.Side)
		}
		if len(c.Parameters) == 0 {
			return nil, errors.New(at + ": no parameters (Dubbo refuses such an item too)")
		}
		for _, k := range sortedKeys(c.Parameters) {
			v, ok := scalar(c.Parameters[k])
			if !ok {
				return nil, fmt.Errorf("%s: parameters.%s is not a scalar", at, k)
			}
			switch k {
			case "weight":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("%s: parameters.weight %q is not an integer", at, v)
				}
				it.Weight = &n
			case "disabled":
				b, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("%s: parameters.disabled %q is not true or false", at, v)
				}
				it.Disabled = &b
			case "timeout":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n <= 0 || n > int64(24*time.Hour/time.Millisecond) {
					return nil, fmt.Errorf("%s: parameters.timeout %q: want milliseconds, more than 0", at, v)
				}
				it.Timeout = time.Duration(n) * time.Millisecond
			default:
				it.Ignored = append(it.Ignored, k)
			}
		}
		r.Items = append(r.Items, it)
	}
	return r, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// scalar renders a decoded YAML scalar.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

// Target is a provider of one service, as configurators address it.
type Target struct {
	Addr                      string // host:port
	Application               string // the provider's
	Interface, Version, Group string
}

// Override is what configurators change of one provider.
type Override struct {
	Weight   int
	Disabled bool
	Timeout  time.Duration // 0: the route's
}

// Apply applies r's items that address t, as consumer c sees it, to o.
func (r *ConfiguratorRule) Apply(t *Target, c *Consumer, o *Override) {
	if r == nil || !r.Enabled {
		return
	}
	for i := range r.Items {
		it := &r.Items[i]
		if !it.addresses(t, c) || !serviceListed(it.Services, t) {
			continue
		}
		if it.Weight != nil {
			o.Weight = *it.Weight
		}
		if it.Disabled != nil {
			o.Disabled = *it.Disabled
		}
		if it.Timeout > 0 && it.Side == "consumer" {
			o.Timeout = it.Timeout
		}
	}
}

// addresses reports whether the item applies to provider t for consumer
// c: Dubbo's AbstractConfigurator.configureIfMatch, the host being the
// consumer's for a consumer-side item, the provider's for a provider-side one.
func (it *ConfigItem) addresses(t *Target, c *Consumer) bool {
	host, _ := splitAddr(t.Addr)
	if it.Side == "consumer" {
		return listedOrAll(it.Addresses, "0.0.0.0", c.Host) &&
			(len(it.ProviderAddresses) == 0 || slices.Contains(it.ProviderAddresses, t.Addr) || slices.Contains(it.ProviderAddresses, "0.0.0.0")) &&
			listedOrAll(it.Applications, "*", c.Application)
	}
	return (listedOrAll(it.Addresses, "0.0.0.0", host) || slices.Contains(it.Addresses, t.Addr)) &&
		listedOrAll(it.Applications, "*", t.Application)
}

// listedOrAll reports whether list is empty, holds all, or holds v.
func listedOrAll(list []string, all, v string) bool {
	return len(list) == 0 || slices.Contains(list, all) || (v != "" && slices.Contains(list, v))
}

// serviceListed reports whether services (as "[group/]interface[:version]")
// is empty, holds "*", or names t's service.
func serviceListed(services []string, t *Target) bool {
	if len(services) == 0 {
		return true
	}
	for _, s := range services {
		if s == "*" {
			return true
		}
		group, iface, version := "", s, ""
		if i := strings.IndexByte(iface, '/'); i >= 0 {
			group, iface = iface[:i], iface[i+1:]
		}
		if i := strings.IndexByte(iface, ':'); i >= 0 {
			iface, version = iface[:i], iface[i+1:]
		}
		if iface == t.Interface && (group == "" || group == t.Group) && (version == "" || version == t.Version) {
			return true
		}
	}
	return false
}
