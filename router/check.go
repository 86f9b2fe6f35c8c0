package router

import (
	"fmt"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The checks New applies to a Spec's path and host, for configuration
// validation: a config names the file line of a bad pattern, and the
// grammar of hosts, patterns and prefixes is written once, here.

// PatternParams returns the parameter names of a path pattern in order
// ("/users/{id}/files/{path...}": id, path), or why New would refuse it.
func PatternParams(pattern string) ([]string, error) {
	segs, err := parsePath(pattern)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range segs {
		if s.kind != staticSeg {
			names = append(names, s.text)
		}
	}
	return names, nil
}

// CheckPrefix says why New would refuse a path prefix, or nil.
func CheckPrefix(prefix string) error {
	_, err := parsePrefix(prefix)
	return err
}

// CheckHost says why New would refuse a route host ("api.example.com",
// "*.example.com", an IP address), or nil.
func CheckHost(host string) error {
	_, _, err := parseHost(host)
	return err
}

// CheckMethod says why New would refuse a method of a Spec, or nil: a
// method is an HTTP token (RFC 9110), matched case-sensitively, so it is
// written in upper case.
func CheckMethod(m string) error {
	switch {
	case !httpguts.ValidHeaderFieldName(m):
		return fmt.Errorf("%q is not an HTTP method", m)
	case m != strings.ToUpper(m):
		return fmt.Errorf("%q: methods are case-sensitive; write %s", m, strings.ToUpper(m))
	}
	return nil
}
