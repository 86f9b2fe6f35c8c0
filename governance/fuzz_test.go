package governance

import (
	"strings"
	"testing"
	"time"
)

// FuzzCondition: no condition text makes the parser panic or take more
// than linear time, and whatever it accepts Dubbo's own algorithm (the
// naive parser of oracle_test.go) parses the same way.
func FuzzCondition(f *testing.F) {
	for _, s := range []string{
		"method = find* & arguments[0] = vip => host != 10.0.0.1,10.0.0.2",
		"=> address = *:20880", "application = app1 =>", "host = $host", "method == x", "a = b c", ", a", "0\v=0",
		"attachments[zone] != a & attachments[zone] = b* => region = hz & provider.region != x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		start := time.Now()
		c, err := ParseCondition(text)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("%d bytes took %s", len(text), d)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("refused without a reason")
			}
			return
		}
		if strings.Contains(text, "consumer.") || strings.Contains(text, "provider.") {
			return // Dubbo also drops them inside values: not compared
		}
		nc, nerr := naiveParse(text)
		if nerr != nil {
			t.Fatalf("%q: accepted, Dubbo's parser refuses it: %v", text, nerr)
		}
		if !sameSide(c.when, nc.when) || c.block != nc.block || (!c.block && !sameSide(c.then, nc.then)) {
			t.Fatalf("%q: parsed differently from Dubbo's", text)
		}
	})
}

// FuzzParse: no rule node data makes Parse panic, whatever its kind.
func FuzzParse(f *testing.F) {
	f.Add("shop.tag-router", "configVersion: v3.0\nforce: true\ntags:\n  - name: gray\n    match:\n      - key: env\n        value: {regex: \"^g.*\"}\n")
	f.Add("a.B::.condition-router", "configVersion: v3.0\nconditions:\n  - method = a => host = b\n")
	f.Add("gw.configurators", "configs:\n  - side: consumer\n    parameters: {disabled: true, timeout: 5}\n")
	f.Fuzz(func(t *testing.T, key, data string) {
		r, err := Parse(key, []byte(data))
		if err == nil && r == nil {
			t.Fatal("no rule and no error")
		}
	})
}
