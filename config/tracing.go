package config

import (
	"net/url"
	"time"
)

// Tracing exports OpenTelemetry traces of the requests the gateway serves
// (a server span per request, a client span per upstream, Dubbo or Redis
// call) over OTLP/HTTP, and continues W3C trace context (traceparent,
// tracestate) from clients to upstreams and Dubbo providers.
type Tracing struct {
	// Enabled turns tracing on. Default false: no span is made and the
	// request path does no tracing work.
	Enabled bool `yaml:"enabled"`
	// Endpoint is the OTLP/HTTP collector base URL; spans are POSTed to
	// <endpoint>/v1/traces. Default "http://127.0.0.1:4318".
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of new traces recorded, from 0 to 1; a
	// request that carries a traceparent follows its sampled flag.
	// Default 1. A pointer, so that an explicit 0 survives Defaults.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// ServiceName is the service.name resource attribute. Default "dubbogw".
	ServiceName string `yaml:"service_name"`
	// Timeout bounds one export request. Default 5s.
	Timeout Duration `yaml:"timeout"`
	// MaxQueueSize bounds the spans waiting for export; beyond it spans
	// are dropped (counted), never waited for. Default 2048.
	MaxQueueSize int `yaml:"max_queue_size"`
}

// Defaults of the tracing section.
const (
	DefaultTracingEndpoint    = "http://127.0.0.1:4318"
	DefaultTracingSampleRatio = 1.0
	DefaultTracingService     = "dubbogw"
	DefaultTracingTimeout     = Duration(5 * time.Second)
	DefaultTracingQueueSize   = 2048
)

func defaultTracing(c *Config) {
	tr := &c.Tracing
	SetDefault(&tr.Endpoint, DefaultTracingEndpoint)
	SetDefaultPtr(&tr.SampleRatio, DefaultTracingSampleRatio)
	SetDefault(&tr.ServiceName, DefaultTracingService)
	SetDefault(&tr.Timeout, DefaultTracingTimeout)
	SetDefault(&tr.MaxQueueSize, DefaultTracingQueueSize)
}

func validateTracing(ps *problems, c *Config) {
	tr := &c.Tracing
	if u, err := url.Parse(tr.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ps.add("tracing.endpoint", 0, "want an http(s) URL such as %q, got %q", DefaultTracingEndpoint, RedactURL(tr.Endpoint))
	}
	if r := tr.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		ps.add("tracing.sample_ratio", 0, "must be from 0 to 1, got %g", *r)
	}
	if tr.ServiceName == "" {
		ps.add("tracing.service_name", 0, "must not be empty")
	}
	if tr.Timeout.D() <= 0 {
		ps.add("tracing.timeout", 0, "must be positive")
	}
	if tr.MaxQueueSize < 1 {
		ps.add("tracing.max_queue_size", 0, "must be at least 1, got %d", tr.MaxQueueSize)
	}
}
