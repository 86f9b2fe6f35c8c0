package governance

import (
	"testing"
	"time"
)

// TestConfiguratorApply: whom items address. Semantics: Dubbo's
// AbstractConfigurator.configureIfMatch as dubbo-go v3.3.0
// config_center/configurator/override.go writes it (a consumer-side item
// matches the consumer's host, 0.0.0.0 for all; providerAddresses the
// provider's address; applications the consumer's application) and
// config_center/parser/configuration_parser.go (addresses default to
// 0.0.0.0; an application-scope item's services).
func TestConfiguratorApply(t *testing.T) {
	rule := mustRule(t, "gw.configurators", `configVersion: v3.0
scope: application
key: gw
enabled: true
configs:
  - side: consumer
    addresses: [0.0.0.0]
    providerAddresses: ["10.0.0.3:20880"]
    applications: [gw]
    parameters:
      disabled: true
  - side: consumer
    addresses: ["10.1.1.1"]
    parameters:
      weight: 7
  - side: consumer
    services: ["blue/org.example.Users:1.0.0"]
    parameters:
      timeout: 250
  - side: provider
    addresses: ["10.0.0.4"]
    applications: [shop]
    parameters:
      weight: 40
`).Configurators
	cons := &Consumer{Application: "gw", Host: "10.2.2.2"}
	for _, c := range []struct {
		name   string
		target Target
		cons   *Consumer
		want   Override
	}{
		{"consumer side, provider address listed: disabled", Target{Addr: "10.0.0.3:20880", Interface: "I"}, cons, Override{Weight: 100, Disabled: true}},
		{"consumer side, another provider", Target{Addr: "10.0.0.3:20881", Interface: "I"}, cons, Override{Weight: 100}},
		{"consumer side, another consumer application", Target{Addr: "10.0.0.3:20880", Interface: "I"}, &Consumer{Application: "other", Host: "10.2.2.2"}, Override{Weight: 100}},
		{"consumer side, this consumer's host", Target{Addr: "10.0.0.9:20880", Interface: "I"}, &Consumer{Application: "gw", Host: "10.1.1.1"}, Override{Weight: 7}},
		{"consumer side, service listed", Target{Addr: "10.0.0.9:20880", Interface: "org.example.Users", Group: "blue", Version: "1.0.0"}, cons, Override{Weight: 100, Timeout: 250 * time.Millisecond}},
		{"consumer side, service of another group", Target{Addr: "10.0.0.9:20880", Interface: "org.example.Users", Group: "red", Version: "1.0.0"}, cons, Override{Weight: 100}},
		{"provider side, provider's host and application", Target{Addr: "10.0.0.4:20880", Application: "shop", Interface: "I"}, cons, Override{Weight: 40}},
		{"provider side, another application", Target{Addr: "10.0.0.4:20880", Application: "cart", Interface: "I"}, cons, Override{Weight: 100}},
	} {
		o := Override{Weight: 100}
		rule.Apply(&c.target, c.cons, &o)
		if o != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, o, c.want)
		}
	}
	rule.Enabled = false
	o := Override{Weight: 100}
	rule.Apply(&Target{Addr: "10.0.0.3:20880", Interface: "I"}, cons, &o)
	if o.Disabled {
		t.Error("a disabled rule applied")
	}
}
