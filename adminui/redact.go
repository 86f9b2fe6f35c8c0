package adminui

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/dubbogw/dubbogw/config"
)

// Redacted replaces every secret in the output of Redact.
const Redacted = config.Redacted

// Redact returns v (a configuration: structs, maps, slices, scalars) as
// plain data for encoding/json, keyed by the fields' yaml names, with
// secrets replaced by Redacted: the scalar values of fields and map keys
// whose name says password, secret, token, credential, API key, private key
// or authorization; both keys and values of such maps (auth memory-store
// tokens); the values of maps tagged `redact:"values"` (header values set
// by a headers filter, constant Dubbo attachments); and in any URL, and in
// every string of a field tagged `redact:"urls"` (provider addresses, with
// or without a scheme), the user info and query values (config.RedactURL).
// A struct named so (auth's token: where the token is read) keeps its
// fields; each is judged by its own name. Nil pointers, maps and slices
// are left out.
func Redact(v any) any {
	return redact(reflect.ValueOf(v), plain)
}

// sensitive reports whether a field or key called name holds a secret: its
// name, lower-cased without "_" and "-", contains one of the words below.
func sensitive(name string) bool {
	n := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, name)
	for _, w := range [...]string{"password", "passwd", "secret", "token", "credential", "apikey", "privatekey", "authorization"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// mode is how redact treats a value.
type mode int

const (
	plain  mode = iota // secrets found by name; strings with "://" are URLs
	secret             // a secret whole: scalars and maps become Redacted
	values             // a map whose keys show and whose values are secrets
	urls               // every string is a URL, scheme or not
)

// fieldMode is the mode of a struct field or map key called name, with
// its redact tag.
func fieldMode(name, tag string) mode {
	switch {
	case sensitive(name):
		return secret
	case tag == "values":
		return values
	case tag == "urls":
		return urls
	}
	return plain
}

func redact(v reflect.Value, m mode) any {
	if !v.IsValid() {
		return nil
	}
	if v.Type().Implements(reflect.TypeFor[yaml.Marshaler]()) && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		out, err := v.Interface().(yaml.Marshaler).MarshalYAML()
		if err != nil {
			return fmt.Sprintf("<%v>", err)
		}
		return redact(reflect.ValueOf(out), m)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return redact(v.Elem(), m)
	case reflect.Struct:
		out := map[string]any{}
		redactStruct(v, out)
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if m == secret {
			return Redacted // the keys may be secrets too
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			switch {
			case m == values:
				out[k] = redact(it.Value(), secret)
			case m == urls:
				out[k] = redact(it.Value(), urls)
			default:
				out[k] = redact(it.Value(), fieldMode(k, ""))
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = redact(v.Index(i), m)
		}
		return out
	case reflect.String:
		s := v.String()
		switch {
		case s == "":
			return s
		case m == secret || m == values:
			return Redacted
		case m == urls || strings.Contains(s, "://"):
			return config.RedactURL(s)
		}
		return s
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if m == secret || m == values {
			return Redacted
		}
		return v.Interface()
	}
	return nil // channels, funcs: not configuration
}

// redactStruct adds the exported fields of struct v to out under their yaml
// names, inlining ",inline" ones.
func redactStruct(v reflect.Value, out map[string]any) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if strings.Contains(opts, "inline") {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				redactStruct(fv, out)
				continue
			}
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if isNil(fv) {
			continue
		}
		out[name] = redact(fv, fieldMode(name, f.Tag.Get("redact")))
	}
}

func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return v.IsNil()
	}
	return false
}
