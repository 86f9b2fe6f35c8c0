package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as a Go duration string ("250ms", "5s", "1m30s").
// Bare numbers are rejected: "timeout: 5" would otherwise silently mean 5ns.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration such as \"5s\", got a %s", kindName(n))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil {
			return fmt.Errorf("duration %q has no unit: write e.g. \"%ss\" or \"%sms\"", n.Value, n.Value, n.Value)
		}
		return fmt.Errorf("bad duration %q: want e.g. \"250ms\", \"5s\", \"1m\"", n.Value)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalText writes the duration as a string (JSON in the admin API).
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// ByteSize is a size in bytes, written as a number or with a unit:
// B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
type ByteSize int64

// UnmarshalYAML parses a size.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a size such as \"8MiB\", got a %s", kindName(n))
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return err
	}
	*b = ByteSize(v)
	return nil
}

// MarshalYAML writes the size as a number of bytes.
func (b ByteSize) MarshalYAML() (any, error) { return int64(b), nil }

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// ParseByteSize parses "1024", "64KiB", "8MiB", "1MB".
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q: want a non-negative number of bytes, optionally with B, KB, MB, GB, KiB, MiB or GiB", s)
	}
	if v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return v * mult, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	default:
		return "scalar"
	}
}
