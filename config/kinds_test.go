package config

// config's own tests cannot link the real route kinds, sections and
// registry types (their packages import config), and config knows none of
// them. These stand-ins, registered the way the real ones are, let the
// generic tests (decoding, defaults order, warnings, problems and lines)
// run on a configuration of the same shape: a backends: section (as
// upstreams:), route kinds backend and call (as upstream and dubbo), and
// registry types listed and remote (as static and zookeeper). Each real
// kind's rules are tested in its package, and all of them together in
// package all.

// standInBackends is a section of named backends, like proxy's upstreams:.
type standInBackends map[string]*struct {
	Targets []struct {
		URL string `yaml:"url"`
	} `yaml:"targets"`
	Timeout Duration `yaml:"timeout"`
}

func (s *standInBackends) Defaults(*Config) {
	for _, u := range *s {
		if u != nil {
			SetDefault(&u.Timeout, Duration(30e9))
		}
	}
}

func (s *standInBackends) Validate(at At, _ *Config) {
	for name, u := range *s {
		if u == nil || len(u.Targets) == 0 {
			at.Field(name).Field("targets").Errorf("required: at least one target")
		}
	}
}

func (s *standInBackends) Warn(at At, c *Config) {
	used := map[string]bool{}
	for _, r := range c.Routes {
		if u, ok := r.Spec.(*standInBackendRoute); ok {
			used[u.Backend] = true
		}
	}
	for name := range *s {
		if !used[name] {
			at.Field(name).Errorf("not used by any route")
		}
	}
}

// standInBackendRoute is a route kind that names a backend, like proxy's upstream.
type standInBackendRoute struct {
	Backend  string   `yaml:"backend"`
	Upgrades []string `yaml:"upgrades"`
}

func (r *standInBackendRoute) Defaults(ctx RouteContext) {
	if us, ok := ctx.Config.Section("backends").(*standInBackends); ok {
		if u := (*us)[r.Backend]; u != nil {
			SetDefault(&ctx.Route.Timeout, u.Timeout)
		}
	}
}

func (r *standInBackendRoute) Validate(at At, ctx RouteContext) {
	us, _ := ctx.Config.Section("backends").(*standInBackends)
	if _, ok := (*us)[r.Backend]; !ok {
		at.Field("backend").Errorf("backend %q is not defined", r.Backend)
	}
}

// standInCallRoute is a route kind that calls through a registry, like dubboroute's dubbo.
type standInCallRoute struct {
	Call struct {
		Registry  string `yaml:"registry"`
		Interface string `yaml:"interface"`
		Method    string `yaml:"method"`
	} `yaml:"call"`
}

func (*standInCallRoute) Defaults(RouteContext) {}

func (r *standInCallRoute) Validate(at At, ctx RouteContext) {
	_, err := RegistryNamed(ctx.Config, r.Call.Registry)
	at.Field("call").Field("registry").Err(err)
}

// standInListed is a registry type listing its providers, like static.
type standInListed struct {
	Providers map[string][]string `yaml:"providers" redact:"urls"`
}

func (*standInListed) Defaults() {}
func (s *standInListed) Validate(at At) {
	if len(s.Providers) == 0 {
		at.Field("providers").Errorf("a listed registry needs providers")
	}
}

// standInRemote is a registry type reading a server, like zookeeper.
type standInRemote struct {
	Address  string `yaml:"address"`
	Password string `yaml:"password"`
}

func (*standInRemote) Defaults() {}
func (z *standInRemote) Validate(at At) {
	if z.Address == "" {
		at.Field("address").Errorf("required")
	}
}

func init() {
	RegisterSection("backends", func() Section { return new(standInBackends) })
	RegisterRouteKind("backend", func() RouteSpec { return new(standInBackendRoute) })
	RegisterRouteKind("call", func() RouteSpec { return new(standInCallRoute) })
	RegisterRegistryType("listed", func() RegistrySpec { return new(standInListed) })
	RegisterRegistryType("remote", func() RegistrySpec { return new(standInRemote) })
}
