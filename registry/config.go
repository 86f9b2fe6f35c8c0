package registry

import (
	"fmt"
	"github.com/dubbogw/dubbogw/cluster"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
)

// Registry types register their settings with config.RegisterRegistryType
// and implement Spec, so that the gateway builds any of them alike. The
// static type is this package's own.

func init() {
	config.RegisterRegistryType(TypeStatic, func() config.RegistrySpec { return new(StaticConfig) })
}

// TypeStatic is the static registry's type: providers listed in the file.
const TypeStatic = "static"

// Spec is a registry type's settings that can build the registry.
type Spec interface {
	config.RegistrySpec
	// Build makes the registry; d is what every type may need.
	Build(d Deps) (Registry, error)
}

// Deps are what a registry is built with besides its settings.
type Deps struct {
	// Log is the gateway's logger.
	Log *slog.Logger
	// ReleaseAfter is the registry's release_after.
	ReleaseAfter time.Duration
	// Offline is set by `dubbogw validate`: a registry that would connect
	// somewhere builds an empty static one instead.
	Offline bool
	// Metadata fetches application instances' metadata from their
	// MetadataService (nil: such instances are skipped).
	Metadata MetadataFetcher
	// Redial is called with the address of a provider that (re)appeared.
	Redial func(addr string)
}

// Moded is a registry type's settings with discovery modes (interface or
// application level): a route may read its service with another mode
// than its registry's, through a copy of the registry with that mode.
type Moded interface {
	config.RegistrySpec
	// DiscoveryModes lists the modes; DiscoveryMode is the configured one.
	DiscoveryModes() []string
	DiscoveryMode() string
	// WithDiscovery returns a copy of the settings with mode.
	WithDiscovery(mode string) config.RegistrySpec
}

// StaticConfig is the settings of a static registry.
type StaticConfig struct {
	// Providers maps an interface name to its provider URLs:
	// "dubbo://10.0.0.1:20880?version=1.0.0&group=g&weight=100" or plain "10.0.0.1:20880".
	Providers map[string][]string `yaml:"providers" redact:"urls"`
}

// Defaults has nothing to fill.
func (*StaticConfig) Defaults() {}

// Validate checks the interface names and provider URLs.
func (s *StaticConfig) Validate(at config.At) {
	if len(s.Providers) == 0 {
		at.Field("providers").Errorf("a static registry needs providers: interface → [\"host:port\", ...]")
	}
	for _, iface := range slices.Sorted(maps.Keys(s.Providers)) {
		iat := at.Field("providers").Field(iface)
		if !protocol.JavaName(iface) {
			iat.Errorf("%q is not a Java interface name", iface)
		}
		for i, u := range s.Providers[iface] {
			iat.Index(i).Err(checkProviderURL(u))
		}
	}
}

// Build makes the static registry.
func (s *StaticConfig) Build(Deps) (Registry, error) { return NewStatic(s.Providers) }

// checkProviderURL accepts "host:port" or "dubbo://host:port[/path][?params]".
// Its errors show the URL redacted (config.RedactURL): parameters such as
// token are secrets.
func checkProviderURL(s string) error {
	if !strings.Contains(s, "://") {
		s = "dubbo://" + s
	}
	shown := config.RedactURL(s)
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a provider URL%s", shown, config.URLErrorDetail(s, err))
	}
	if _, ok := cluster.ParseProtocol(u.Scheme); !ok {
		return fmt.Errorf("%q: protocol %q is not supported (dubbo or tri)", shown, u.Scheme)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return fmt.Errorf("%q: want host:port", shown)
	}
	return config.CheckPort(port, false)
}
