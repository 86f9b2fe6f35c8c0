package config

import (
	"strings"
	"testing"
	"time"
)

func TestTracingDefaults(t *testing.T) {
	c, err := Parse([]byte("tracing: {enabled: true}\n"), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Tracing
	if !tr.Enabled || tr.Endpoint != "http://127.0.0.1:4318" || tr.SampleRatio == nil || *tr.SampleRatio != 1 ||
		tr.ServiceName != "dubbogw" || tr.Timeout.D() != 5*time.Second || tr.MaxQueueSize != 2048 {
		t.Errorf("defaults: %+v (ratio %v)", tr, tr.SampleRatio)
	}
	c, err = Parse([]byte("listen: \":8080\"\n"), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tracing.Enabled {
		t.Error("tracing is on by default")
	}
	c, err = Parse([]byte("tracing: {enabled: true, sample_ratio: 0}\n"), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *c.Tracing.SampleRatio != 0 {
		t.Errorf("an explicit sample_ratio 0 became %v", *c.Tracing.SampleRatio)
	}
}

func TestTracingProblems(t *testing.T) {
	cases := []struct{ yaml, path, reason string }{
		{"tracing: {sample_ratio: 1.5}", "tracing.sample_ratio", "from 0 to 1"},
		{"tracing: {endpoint: 'ftp://x'}", "tracing.endpoint", "http(s) URL"},
		{"tracing: {endpoint: '127.0.0.1:4318'}", "tracing.endpoint", "http(s) URL"},
		{"tracing: {max_queue_size: -1}", "tracing.max_queue_size", "at least 1"},
		{"tracing: {exporter: grpc}", "tracing.exporter", "unknown key"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.yaml+"\n"), "t.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: got %v, want %s: %s", tc.yaml, err, tc.path, tc.reason)
		}
	}
}
