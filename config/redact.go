package config

import "strings"

// Redacted replaces a secret wherever the configuration is shown: the
// admin API, logs, errors.
const Redacted = "REDACTED"

// RedactURL hides what a URL may carry as a secret: its user info (user
// name included: a token is often written there) and the value of every
// query parameter and the fragment, keeping the scheme, host, port, path
// and parameter names:
//
//	dubbo://u:pw@10.0.0.1:20880/svc?token=t&version=1 → dubbo://REDACTED@10.0.0.1:20880/svc?token=REDACTED&version=REDACTED
//
// A string without "://" is taken as host:port[/path][?query]. It never
// fails: nothing is parsed that could refuse the string and leave it whole.
func RedactURL(s string) string {
	prefix, rest := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		prefix, rest = s[:i+3], s[i+3:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = Redacted + authority[at:]
	}
	path, fragment, hasFragment := strings.Cut(tail, "#")
	path, query, hasQuery := strings.Cut(path, "?")
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(prefix)
	b.WriteString(authority)
	b.WriteString(path)
	if hasQuery {
		b.WriteByte('?')
		for i, param := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			name, value, ok := strings.Cut(param, "=")
			switch {
			case ok && value != "":
				b.WriteString(name + "=" + Redacted)
			case ok || param == "":
				b.WriteString(param)
			default:
				b.WriteString(Redacted) // a bare value
			}
		}
	}
	if hasFragment {
		b.WriteByte('#')
		if fragment != "" {
			b.WriteString(Redacted)
		}
	}
	return b.String()
}
