package config

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads, substitutes, decodes, defaults and validates the file at path,
// taking ${ENV} values from the process environment.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ReadError{Source: path, Err: err}
	}
	return Parse(data, path, os.LookupEnv)
}

// ReadError is a configuration that could not be read at all (a file
// missing, a ZooKeeper node out of reach), as opposed to one read and
// refused for its problems (*Error): a reload counts the first as a
// failure and the second as rejected.
type ReadError struct {
	Source string // where it was read from, with no secret in it (Err names it too)
	Err    error
}

func (e *ReadError) Error() string { return "read config: " + e.Err.Error() }

func (e *ReadError) Unwrap() error { return e.Err }

// ExpandEnv substitutes ${NAME}, ${NAME:-default} and $${ in s as the
// configuration's values are (for a configuration's location, such as a
// ZooKeeper URL with its credentials); an unset variable without a default
// is an error.
func ExpandEnv(s string, env func(string) (string, bool)) (string, error) {
	out, _, err := expand(s, env)
	return out, err
}

// Parse reads a configuration from data: it substitutes ${ENV} references
// using env (nil means no variable is set), decodes strictly, fills defaults
// and validates. source names data in errors (a file name). The error, if
// any, is an *Error listing every problem found.
func Parse(data []byte, source string, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	root, problem := parseDocument(data)
	if problem != nil {
		return nil, &Error{Source: source, Problems: []Problem{*problem}}
	}

	var substituted problems
	substitute(root, "", env, &substituted)

	d := newDecoder()
	d.lines[""] = root.Line
	var c Config
	d.decode(root, reflect.ValueOf(&c).Elem(), "")

	// A problem found by an earlier step hides the later steps' problems on
	// the same key: a missing variable makes a value wrong, and a value that
	// could not be decoded is missing for validation.
	all := append([]Problem(nil), substituted...)
	for _, p := range d.problems {
		if !slices.ContainsFunc(substituted, func(q Problem) bool { return q.Path == p.Path }) {
			all = append(all, p)
		}
	}
	Defaults(&c)
	for _, p := range validate(&c) {
		if slices.ContainsFunc(all, func(q Problem) bool { return related(q.Path, p.Path) }) {
			continue
		}
		p.Line = d.lineOf(p.Path)
		all = append(all, p)
	}
	if len(all) > 0 {
		sortProblems(all)
		return nil, &Error{Source: source, Problems: all}
	}
	return &c, nil
}

var yamlErrorLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parseDocument parses data into the node of its single document's content.
func parseDocument(data []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Problem{Reason: "empty configuration"}
		}
		return nil, syntaxProblem(data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxProblem(data, err)
	default:
		return nil, &Problem{Line: next.Line, Reason: `more than one YAML document: remove the second "---"`}
	}
	if len(doc.Content) == 0 {
		return nil, &Problem{Reason: "empty configuration"}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, &Problem{Line: root.Line, Reason: "empty configuration"}
	}
	return root, nil
}

// syntaxProblem turns a YAML syntax error into a Problem. The line yaml.v3
// reports is often off (0-based for parser errors, or the start of the
// enclosing block), so the line is taken as the first line whose prefix of
// the document fails with the same error.
func syntaxProblem(data []byte, err error) *Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlErrorLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if l := failingLine(data, msg); l > 0 {
		line = l
	}
	reason := "YAML syntax: " + msg
	if strings.HasPrefix(msg, "did not find expected ',' or") && bytes.Contains(nthLine(data, line), []byte("${")) {
		reason += `; inside {...} or [...] write "${NAME}" in quotes`
	}
	return &Problem{Line: line, Reason: reason}
}

// nthLine returns line n (1-based) of data, or nil.
func nthLine(data []byte, n int) []byte {
	for i := 1; n > 0 && len(data) > 0; i++ {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if i == n {
			return line
		}
		data = rest
	}
	return nil
}

// failingLine returns the first line n such that lines 1..n alone fail to
// parse with message msg, or 0. Only used for reasonably small documents.
func failingLine(data []byte, msg string) int {
	const maxLines = 5000
	if bytes.Count(data, []byte("\n")) > maxLines {
		return 0
	}
	end := 0
	for n := 1; end < len(data); n++ {
		if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
			end += i + 1
		} else {
			end = len(data)
		}
		var node yaml.Node
		err := yaml.Unmarshal(data[:end], &node)
		if err == nil {
			continue
		}
		if m := yamlErrorLine.FindStringSubmatch(err.Error()); m != nil && m[2] == msg {
			return n
		}
	}
	return 0
}

// ApplyEnvOverrides applies DUBBOGW_LISTEN, DUBBOGW_ADMIN_LISTEN,
// DUBBOGW_LOG_LEVEL and DUBBOGW_LOG_FORMAT when they are set and not empty.
// Their values are checked like the file's; on any problem c is left
// unchanged and the error is an *Error.
func ApplyEnvOverrides(c *Config, env func(string) (string, bool)) error {
	next := *c
	var ps problems
	override := func(name, path string, dst *string, check func(string) error) {
		v, ok := env(name)
		if !ok || v == "" {
			return
		}
		if err := check(v); err != nil {
			ps.add(path, 0, "from %s: %v", name, err)
			return
		}
		*dst = v
	}
	override("DUBBOGW_LISTEN", "listen", &next.Listen, checkListenAddr)
	override("DUBBOGW_ADMIN_LISTEN", "admin.listen", &next.Admin.Listen, checkListenAddr)
	override("DUBBOGW_LOG_LEVEL", "log.level", &next.Log.Level, checkLogLevel)
	override("DUBBOGW_LOG_FORMAT", "log.format", &next.Log.Format, checkLogFormat)
	if len(ps) == 0 {
		if err := checkListenersApart(next.Listen, next.Admin.Listen); err != nil {
			ps.add("admin.listen", 0, "%v", err)
		}
	}
	if len(ps) > 0 {
		sortProblems(ps)
		return &Error{Problems: ps}
	}
	c.Listen, c.Admin.Listen, c.Log = next.Listen, next.Admin.Listen, next.Log
	return nil
}
