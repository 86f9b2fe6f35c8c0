// Package observe sets up the gateway's logger and its Prometheus registry
// (runtime and build-info collectors). Metric families of each part of the
// gateway are created by that part against the registry built here.
package observe

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// ParseLevel turns debug, info, warn or error into a slog level.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}

// NewLogger returns a logger writing format ("json" or "text") to w, whose
// level can be changed later through the returned LevelVar (on reload).
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	lv.Set(level)
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h), lv
}

// NewRegistry returns a registry with Go runtime, process and build-info
// collectors (dubbogw_build_info{version,revision,goversion}).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	b := Build()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "dubbogw_build_info",
		Help:        "Build information; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	info.Set(1)
	reg.MustRegister(info)
	return reg
}

// Register registers c with reg, or returns the collector already
// registered with the same description (by another route's filter, an
// earlier route table or Client, which then share the series).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering metrics: %w", err)
}

// MustRegister is Register for collectors whose descriptions are fixed in
// the code, where an error is a programming mistake: it panics.
func MustRegister[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	c, err := Register(reg, c)
	if err != nil {
		panic(err)
	}
	return c
}
