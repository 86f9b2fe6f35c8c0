package zookeeper

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/registry"
)

func init() {
	config.RegisterRegistryType(Type, func() config.RegistrySpec { return new(Config) })
}

// Type is the zookeeper registry's type in the configuration.
const Type = "zookeeper"

// The documented defaults (see the field comments of Config).
const (
	DefaultRoot                = "dubbo"
	DefaultSessionTimeout      = config.Duration(30 * time.Second)
	DefaultTimeout             = config.Duration(5 * time.Second)
	DefaultApplication         = "dubbogw"
	DefaultWatchGC             = config.Duration(time.Minute)
	DefaultDiscovery           = DiscoveryAuto
	DefaultMetadataTimeout     = config.Duration(3 * time.Second)
	DefaultMetadataConcurrency = 8
	DefaultMetadataCache       = 1024
)

// Config is the settings of a registry of type zookeeper.
type Config struct {
	// Address is "host:port", several separated by commas
	// ("zookeeper://" in front is accepted).
	Address string `yaml:"address"`
	// Root is the root node, Dubbo's registry group. Default "dubbo".
	Root string `yaml:"root"`
	// SessionTimeout of the ZooKeeper session. Default 30s.
	SessionTimeout config.Duration `yaml:"session_timeout"`
	// Timeout bounds one ZooKeeper operation. Default 5s.
	Timeout config.Duration `yaml:"timeout"`
	// Register the gateway as a consumer of each service it calls
	// (ephemeral nodes, so Dubbo Admin shows it). Default true.
	Register *bool `yaml:"register"`
	// Application is the application name in consumer URLs. Default "dubbogw".
	Application string `yaml:"application"`
	// Username and Password enable digest authentication.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// WatchGC: a ZooKeeper watch cannot be removed, so watches of
	// released subscriptions are cleared by moving to a new session (made
	// before the old one closes), at most this often. Default 1m.
	WatchGC config.Duration `yaml:"watch_gc"`
	// Discovery says which registrations are read: "interface"
	// (/<root>/<interface>/providers), "application" (Dubbo 3's
	// application-level instances: mapping, /services/<app>, metadata) or
	// "auto" (both, merged by address, application-level data preferred).
	// A Dubbo route may ask for another mode (its discovery). Default
	// "auto".
	Discovery string `yaml:"discovery"`
	// ServicesRoot is where application instances are registered.
	// Default "/services" with the root "dubbo", else "/<root>" (Dubbo's
	// registry group replaces both roots).
	ServicesRoot string `yaml:"services_root"`
	// Metadata bounds how application instances' metadata is fetched
	// (their MetadataService, or remote nodes in ZooKeeper).
	Metadata Metadata `yaml:"metadata"`
	// Governance reads Dubbo's governance rules (configurators, tag and
	// condition routers, as Dubbo Admin writes them) from the config
	// centre in this ZooKeeper. Off by default: it costs watches.
	Governance Governance `yaml:"governance"`
}

// Governance says whether and where Dubbo's governance rules are read.
type Governance struct {
	// Enabled turns the rules on. Default false.
	Enabled bool `yaml:"enabled"`
	// Root is the config centre's root, "/<namespace>/config". Default
	// "/dubbo/config".
	Root string `yaml:"root"`
	// Group is the rules' group. Default "dubbo".
	Group string `yaml:"group"`
}

// Metadata bounds the fetching of application instances' metadata.
type Metadata struct {
	// Timeout of one fetch from an instance's MetadataService. Default
	// 3s. Remote metadata (storage "remote") is a ZooKeeper read, bounded
	// by timeout like the others.
	Timeout config.Duration `yaml:"timeout"`
	// Concurrency: fetches under way at most. Default 8.
	Concurrency int `yaml:"concurrency"`
	// Cache: entries (per instance and revision) kept beyond those live
	// instances use. Default 1024.
	Cache int `yaml:"cache"`
}

var discoveryModes = []string{DiscoveryAuto, DiscoveryInterface, DiscoveryApplication}

// Defaults fills the fields left unset.
func (c *Config) Defaults() {
	config.SetDefault(&c.Root, DefaultRoot)
	config.SetDefault(&c.SessionTimeout, DefaultSessionTimeout)
	config.SetDefault(&c.Timeout, DefaultTimeout)
	config.SetDefault(&c.Application, DefaultApplication)
	config.SetDefault(&c.WatchGC, DefaultWatchGC)
	config.SetDefaultPtr(&c.Register, true)
	config.SetDefault(&c.Discovery, DefaultDiscovery)
	config.SetDefault(&c.Metadata.Timeout, DefaultMetadataTimeout)
	config.SetDefault(&c.Metadata.Concurrency, DefaultMetadataConcurrency)
	config.SetDefault(&c.Metadata.Cache, DefaultMetadataCache)
	config.SetDefault(&c.Governance.Root, governance.DefaultRoot)
	config.SetDefault(&c.Governance.Group, governance.DefaultGroup)
}

// Validate reports every problem of the defaulted settings.
func (c *Config) Validate(at config.At) {
	addrs := Addrs(c.Address)
	if len(addrs) == 0 {
		at.Field("address").Errorf("required: ZooKeeper's host:port (several separated by commas)")
	}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			at.Field("address").Errorf("%q is not host:port", config.RedactURL(a))
		}
	}
	if strings.Contains(strings.Trim(c.Root, "/"), "/") || strings.Trim(c.Root, "/") == "" {
		at.Field("root").Errorf("%q: want one node name, such as \"dubbo\"", c.Root)
	}
	if c.SessionTimeout.D() < 2*time.Second {
		at.Field("session_timeout").Errorf("must be at least 2s, got %s", c.SessionTimeout.D())
	}
	at.Field("timeout").Err(config.Positive(c.Timeout))
	if (c.Username == "") != (c.Password == "") {
		at.Field("username").Errorf("username and password go together")
	}
	if !slices.Contains(discoveryModes, c.Discovery) {
		at.Field("discovery").Errorf("unknown mode %q (known: %s)", c.Discovery, strings.Join(discoveryModes, ", "))
	}
	if root := strings.Trim(c.ServicesRoot, "/"); c.ServicesRoot != "" && (root == "" || strings.Contains(root, "//")) {
		at.Field("services_root").Errorf("%q: want a ZooKeeper path, such as \"/services\"", c.ServicesRoot)
	}
	m := at.Field("metadata")
	if c.Metadata.Timeout.D() <= 0 {
		m.Field("timeout").Errorf("must be positive")
	}
	if c.Metadata.Concurrency < 1 || c.Metadata.Concurrency > 1024 {
		m.Field("concurrency").Errorf("must be between 1 and 1024, got %d", c.Metadata.Concurrency)
	}
	if c.Metadata.Cache < 1 {
		m.Field("cache").Errorf("must be at least 1, got %d", c.Metadata.Cache)
	}
	g := at.Field("governance")
	if root := strings.Trim(c.Governance.Root, "/"); !strings.HasPrefix(c.Governance.Root, "/") || root == "" || strings.Contains(root, "//") {
		g.Field("root").Errorf("%q: want a ZooKeeper path, such as \"/dubbo/config\"", c.Governance.Root)
	}
	if !validNodeName(c.Governance.Group) {
		g.Field("group").Errorf("%q: want one node name, such as \"dubbo\"", c.Governance.Group)
	}
}

// DiscoveryModes lists the modes a route may ask for.
func (c *Config) DiscoveryModes() []string { return slices.Clone(discoveryModes) }

// DiscoveryMode is the configured mode.
func (c *Config) DiscoveryMode() string { return c.Discovery }

// WithDiscovery returns a copy of c reading with mode.
func (c *Config) WithDiscovery(mode string) config.RegistrySpec {
	cp := *c
	cp.Discovery = mode
	return &cp
}

// Build makes the registry; offline, an empty static one stands in.
func (c *Config) Build(d registry.Deps) (registry.Registry, error) {
	if d.Offline {
		return registry.NewStatic(nil)
	}
	return New(Options{
		Addrs:          Addrs(c.Address),
		Root:           c.Root,
		SessionTimeout: c.SessionTimeout.D(),
		Timeout:        c.Timeout.D(),
		Grace:          d.ReleaseAfter,
		WatchGC:        c.WatchGC.D(),
		Register:       c.Register == nil || *c.Register,
		Application:    c.Application,
		Username:       c.Username,
		Password:       c.Password,
		Logger:         d.Log,

		Discovery:           c.Discovery,
		ServicesRoot:        c.ServicesRoot,
		Metadata:            d.Metadata,
		Redial:              d.Redial,
		MetadataTimeout:     c.Metadata.Timeout.D(),
		MetadataConcurrency: c.Metadata.Concurrency,
		MetadataCache:       c.Metadata.Cache,
		Governance:          c.governance(),
	})
}

func (c *Config) governance() *GovernanceOptions {
	if !c.Governance.Enabled {
		return nil
	}
	return &GovernanceOptions{Root: c.Governance.Root, Group: c.Governance.Group}
}

// Addrs splits an address ("h:p,h2:p", with or without "zookeeper://")
// into host:port entries.
func Addrs(address string) []string {
	address = strings.TrimPrefix(strings.TrimSpace(address), "zookeeper://")
	var out []string
	for a := range strings.SplitSeq(address, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

var _ registry.Moded = (*Config)(nil)
var _ registry.Spec = (*Config)(nil)
