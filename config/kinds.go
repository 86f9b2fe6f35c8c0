package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
)

// kinds is a table of named configuration kinds (filters, route kinds,
// registry types, sections): each name maps to the constructor of its
// empty settings. Filled from init functions only, then read.
type kinds[T any] struct {
	what string // "filter", "route kind", ... for panics
	mu   sync.RWMutex
	m    map[string]func() T
}

func newKinds[T any](what string) *kinds[T] {
	return &kinds[T]{what: what, m: make(map[string]func() T)}
}

// register adds name; a second registration of a name, a name that is not
// a plain key or settings that are not a pointer to a struct (or, with
// anyPointer, to anything) panic: each is a build mistake.
func (k *kinds[T]) register(name string, newSpec func() T, anyPointer bool) {
	if !isPlainKey(name) {
		panic(fmt.Sprintf("config: %s name %q is not a plain key", k.what, name))
	}
	t := reflect.TypeOf(newSpec())
	if t == nil || t.Kind() != reflect.Pointer || (!anyPointer && t.Elem().Kind() != reflect.Struct) {
		panic(fmt.Sprintf("config: %s %q: its settings must be a pointer to a struct, got %v", k.what, name, t))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, dup := k.m[name]; dup {
		panic(fmt.Sprintf("config: %s %q registered twice", k.what, name))
	}
	k.m[name] = newSpec
}

// names lists the registered names, sorted.
func (k *kinds[T]) names() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Sorted(maps.Keys(k.m))
}

// make returns the empty settings of name.
func (k *kinds[T]) make(name string) (T, bool) {
	k.mu.RLock()
	f, ok := k.m[name]
	k.mu.RUnlock()
	if !ok {
		var zero T
		return zero, false
	}
	return f(), true
}
