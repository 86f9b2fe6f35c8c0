package configsource

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/config"
)

// Scheme starts a --config that names a ZooKeeper node instead of a file.
const Scheme = "zookeeper://"

// IsZooKeeper reports whether a --config value names a ZooKeeper node.
func IsZooKeeper(s string) bool { return strings.HasPrefix(s, Scheme) }

// Location is a ZooKeeper node holding a configuration:
// zookeeper://[user:password@]host:port[,host:port...]/path.
type Location struct {
	Addrs []string // host:port, at least one
	Path  string   // absolute, such as /dubbogw/prod/config
	// Username and Password, when set, are added to the session as digest
	// credentials (ZooKeeper's "digest" scheme, user:password).
	Username, Password string
}

// maxLocation bounds the --config value (and --zookeeper): a URL of a
// few servers and a path is far shorter.
const maxLocation = 4096

// ParseLocation parses raw, then substitutes ${NAME} references from env
// in each of its parts (so that the password can come from the
// environment, whatever characters it has: the command line is visible
// to every user of the machine). A user name or password written in the
// URL itself may be percent-encoded (a "/" or "@" in it must be). An
// error never shows the password.
func ParseLocation(raw string, env func(string) (string, bool)) (Location, error) {
	if len(raw) > maxLocation {
		return Location{}, fmt.Errorf("ZooKeeper location longer than %d bytes", maxLocation)
	}
	loc, err := parseLocation(raw, env)
	if err != nil {
		return Location{}, fmt.Errorf("%s: %w", redactRaw(raw), err)
	}
	return loc, nil
}

// redactRaw hides everything up to the last "@" of a URL that may not
// parse: a password with a "/" would end config.RedactURL's authority
// before its "@".
func redactRaw(raw string) string {
	rest, ok := strings.CutPrefix(raw, Scheme)
	if at := strings.LastIndexByte(rest, '@'); ok && at >= 0 {
		return Scheme + config.Redacted + rest[at:]
	}
	return config.RedactURL(raw)
}

func parseLocation(raw string, env func(string) (string, bool)) (Location, error) {
	var loc Location
	rest, ok := strings.CutPrefix(raw, Scheme)
	if !ok {
		return loc, errors.New(`want zookeeper://[user:password@]host:port[,host:port]/path`)
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if strings.ContainsAny(path, "?#") {
		return loc, errors.New("no query or fragment: the URL is the servers and the node's path")
	}
	if strings.Contains(path, "@") && !strings.Contains(authority, "@") {
		return loc, errors.New(`a "/" in the user name or password: write it %2F, or take it from ${NAME}`)
	}
	expand := func(what, s string) (string, error) {
		out, err := config.ExpandEnv(s, env)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		return out, nil
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, pass, hasPass := strings.Cut(authority[:at], ":")
		authority = authority[at+1:]
		var err error
		if user, err = url.PathUnescape(user); err != nil {
			return loc, errors.New("the user name is not valid percent-encoding")
		}
		if pass, err = url.PathUnescape(pass); err != nil {
			return loc, errors.New("the password is not valid percent-encoding")
		}
		if loc.Username, err = expand("user name", user); err != nil {
			return loc, err
		}
		if loc.Password, err = expand("password", pass); err != nil {
			return loc, err
		}
		if loc.Username == "" || !hasPass || loc.Password == "" {
			return loc, errors.New("digest credentials are user:password, both not empty")
		}
	}
	authority, err := expand("servers", authority)
	if err != nil {
		return loc, err
	}
	if loc.Addrs, err = ParseAddrs(authority); err != nil {
		return loc, err
	}
	if path, err = expand("path", path); err != nil {
		return loc, err
	}
	if err := CheckPath(path); err != nil {
		return loc, err
	}
	loc.Path = path
	return loc, nil
}

// ParseAddrs splits "host:port[,host:port]" and checks each entry.
func ParseAddrs(s string) ([]string, error) {
	var addrs []string
	for a := range strings.SplitSeq(s, ",") {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q is not host:port", a)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, errors.New("no ZooKeeper server: want host:port[,host:port]")
	}
	return addrs, nil
}

// CheckPath checks a node path as ZooKeeper would, and refuses the
// paths a configuration must not live at: the root and ZooKeeper's own
// /zookeeper tree.
func CheckPath(p string) error {
	switch {
	case p == "" || p == "/":
		return errors.New("the node's path is missing: zookeeper://host:port/path/of/the/node")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q: want an absolute path", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("path %q ends with /", p)
	case p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/"):
		return fmt.Errorf("path %q is ZooKeeper's own tree", p)
	case len(p) > 1024:
		return fmt.Errorf("path longer than 1024 bytes")
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q: empty, . or .. segment", p)
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 && r <= 0xffff {
				return fmt.Errorf("path %q: character %U is not allowed in a ZooKeeper path", p, r)
			}
		}
	}
	return nil
}

// String is the location with no secret: a password never shows in a
// log line, an error or the admin API.
func (l Location) String() string {
	cred := ""
	if l.Username != "" {
		cred = config.Redacted + "@"
	}
	return Scheme + cred + strings.Join(l.Addrs, ",") + l.Path
}
