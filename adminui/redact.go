package adminui

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Redacted replaces every secret in the output of Redact.
const Redacted = "REDACTED"

// Redact returns v (a configuration: structs, maps, slices, scalars) as
// plain data for encoding/json, keyed by the fields' yaml names, with
// secrets replaced by Redacted: the scalar values of fields and map keys
// whose name says password, secret, token, credential, API key, private key
// or authorization; both keys and values of such maps (auth memory-store
// tokens); and the password of any URL with user info. A struct named so
// (auth's token: where the token is read) keeps its fields; each is judged
// by its own name. Nil pointers, maps and slices are left out.
func Redact(v any) any {
	return redact(reflect.ValueOf(v), false)
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

func redact(v reflect.Value, secret bool) any {
	if !v.IsValid() {
		return nil
	}
	if v.Type().Implements(reflect.TypeFor[yaml.Marshaler]()) && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		out, err := v.Interface().(yaml.Marshaler).MarshalYAML()
		if err != nil {
			return fmt.Sprintf("<%v>", err)
		}
		return redact(reflect.ValueOf(out), secret)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return redact(v.Elem(), secret)
	case reflect.Struct:
		out := map[string]any{}
		redactStruct(v, out)
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if secret {
			return Redacted // the keys may be secrets too
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			out[k] = redact(it.Value(), sensitive(k))
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = redact(v.Index(i), secret)
		}
		return out
	case reflect.String:
		s := v.String()
		if secret && s != "" {
			return Redacted
		}
		return redactURL(s)
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if secret {
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
		out[name] = redact(fv, sensitive(name))
	}
}

func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return v.IsNil()
	}
	return false
}

// redactURL hides the password of a URL with user info
// ("http://user:pw@host" → "http://user:REDACTED@host"); other strings are
// returned as they are.
func redactURL(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return Redacted // it may carry a password we cannot find
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	u.User = url.UserPassword(u.User.Username(), Redacted)
	return u.String()
}
