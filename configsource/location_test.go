package configsource

import (
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "ZK_PW" {
			return "s3cret:with@signs", true
		}
		return "", false
	}
	loc, err := ParseLocation("zookeeper://ops:${ZK_PW}@zk1:2181,zk2:2182/dubbogw/prod/config", env)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Username != "ops" || loc.Password != "s3cret:with@signs" || loc.Path != "/dubbogw/prod/config" ||
		len(loc.Addrs) != 2 || loc.Addrs[0] != "zk1:2181" || loc.Addrs[1] != "zk2:2182" {
		t.Errorf("parsed: %+v", loc)
	}
	if s := loc.String(); s != "zookeeper://REDACTED@zk1:2181,zk2:2182/dubbogw/prod/config" {
		t.Errorf("String: %q", s)
	}
	// Percent-encoded credentials; a password from the environment as it is.
	if loc, err := ParseLocation("zookeeper://ops:${PW}@h:1/x", func(string) (string, bool) { return "a/b@c%41", true }); err != nil || loc.Password != "a/b@c%41" {
		t.Errorf("password from the environment: %+v %v", loc, err)
	}
	if _, err := ParseLocation("zookeeper://ops:pw9q/x7z@h:1/x", nil); err == nil || strings.Contains(err.Error(), "pw9q") ||
		strings.Contains(err.Error(), "x7z") || !strings.Contains(err.Error(), "%2F") {
		t.Errorf("a / in a literal password: %v", err)
	}
	if loc, err := ParseLocation("zookeeper://a%40b:p%2Fw@h:1/x", nil); err != nil || loc.Username != "a@b" || loc.Password != "p/w" {
		t.Errorf("percent-encoded: %+v %v", loc, err)
	}
	for raw, want := range map[string]string{
		"zookeeper://h:2181":                           "path is missing",
		"zookeeper://h:2181/":                          "path is missing",
		"zookeeper://h:2181/a//b":                      "empty",
		"zookeeper://h:2181/a/":                        "ends with /",
		"zookeeper://h:2181/zookeeper/quota":           "ZooKeeper's own",
		"zookeeper://h/a":                              "not host:port",
		"zookeeper://h:99999/a":                        "not host:port",
		"zookeeper://h:1,/a":                           "not host:port",
		"zookeeper://h:1/a?x=1":                        "no query",
		"zookeeper://u@h:1/a":                          "user:password",
		"zookeeper://u:${MISSING}@h:1/a":               "MISSING is not set",
		"file.yaml":                                    "want zookeeper://",
		"zookeeper://h:1/a/../b":                       ". or ..",
		"zookeeper://h:1/" + strings.Repeat("a", 5000): "longer than",
	} {
		_, err := ParseLocation(raw, env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", raw, err, want)
		}
	}
	// An error never shows the password.
	_, err = ParseLocation("zookeeper://ops:${ZK_PW}@h:1/a/", env)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the password: %v", err)
	}
	_, err = ParseLocation("zookeeper://ops:plain-pw@h/a", env)
	if err == nil || strings.Contains(err.Error(), "plain-pw") {
		t.Errorf("error shows the password: %v", err)
	}
}
