package main

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// swapHandler is a slog.Handler whose destination can be set after the
// loggers made from it exist: the configuration source logs before the
// configuration it reads says the log's format and level.
type swapHandler struct {
	root *atomic.Pointer[slog.Handler] // shared by every handler made from it
	with []func(slog.Handler) slog.Handler
}

func (s *swapHandler) set(h slog.Handler) {
	if s.root == nil {
		s.root = new(atomic.Pointer[slog.Handler])
	}
	s.root.Store(&h)
}

func (s *swapHandler) current() slog.Handler {
	h := *s.root.Load()
	for _, f := range s.with {
		h = f(h)
	}
	return h
}

func (s *swapHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return s.current().Enabled(ctx, l)
}

func (s *swapHandler) Handle(ctx context.Context, r slog.Record) error {
	return s.current().Handle(ctx, r)
}

func (s *swapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return s.derive(func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) })
}

func (s *swapHandler) WithGroup(name string) slog.Handler {
	return s.derive(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}

func (s *swapHandler) derive(f func(slog.Handler) slog.Handler) *swapHandler {
	return &swapHandler{root: s.root, with: append(append([]func(slog.Handler) slog.Handler(nil), s.with...), f)}
}
