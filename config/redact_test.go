package config

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:pw@h:1/p":                       "http://REDACTED@h:1/p",
		"http://u@h:1/p":                          "http://REDACTED@h:1/p",
		"http://h:1/p":                            "http://h:1/p",
		"dubbo://h:1?token=t&version=1.0.0&x=":    "dubbo://h:1?token=REDACTED&version=REDACTED&x=",
		"h:1?token=t":                             "h:1?token=REDACTED",
		"10.0.0.1:20880":                          "10.0.0.1:20880",
		"http://h/p?bare#frag":                    "http://h/p?REDACTED#REDACTED",
		"http://u:p%zz@h:1/p":                     "http://REDACTED@h:1/p",
		"http://a@b@h/p?q=a@b":                    "http://REDACTED@h/p?q=REDACTED",
		"redis://:pw@127.0.0.1:6379/0":            "redis://REDACTED@127.0.0.1:6379/0",
		"http://h/a@b":                            "http://h/a@b", // "@" in the path is no user info
		"https://h:443/p?a=1&&b=2":                "https://h:443/p?a=REDACTED&&b=REDACTED",
		"http://[::1]:80/?k=v":                    "http://[::1]:80/?k=REDACTED",
		"dubbo://u:pw@10.0.0.1:20880/svc?token=t": "dubbo://REDACTED@10.0.0.1:20880/svc?token=REDACTED",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
