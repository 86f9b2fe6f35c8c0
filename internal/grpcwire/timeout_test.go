package grpcwire

import (
	"testing"
	"time"
)

func TestFormatTimeout(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "1m", time.Microsecond: "1m", time.Millisecond: "1m", 1500 * time.Microsecond: "2m",
		time.Second: "1000m", 30 * time.Hour: "108000S", 1e6 * time.Hour: "99999999S",
	} {
		if got := FormatTimeout(d); got != want {
			t.Errorf("FormatTimeout(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"1m": time.Millisecond, "1000m": time.Second, "5S": 5 * time.Second, "2M": 2 * time.Minute,
		"1H": time.Hour, "10u": 10 * time.Microsecond, "7n": 7, "99999999S": 99999999 * time.Second,
		"99999999H": 1<<63 - 1,
	} {
		if got, ok := ParseTimeout(v); !ok || got != want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "m", "5", "5s", "123456789m", "-5m", "5 m", "1.5S"} {
		if got, ok := ParseTimeout(v); ok {
			t.Errorf("ParseTimeout(%q) = %v, accepted", v, got)
		}
	}
	// Round trip: a formatted timeout reads back no shorter.
	for _, d := range []time.Duration{time.Millisecond, 1234 * time.Millisecond, 3 * time.Hour} {
		if got, _ := ParseTimeout(FormatTimeout(d)); got < d {
			t.Errorf("%v formatted and read back is %v", d, got)
		}
	}
}

func TestCodeName(t *testing.T) {
	for c, want := range map[int]string{0: "OK", 4: "DEADLINE_EXCEEDED", 14: "UNAVAILABLE", 16: "UNAUTHENTICATED"} {
		if got, ok := CodeName(c); !ok || got != want {
			t.Errorf("CodeName(%d) = %q, %v", c, got, ok)
		}
	}
	for _, c := range []int{-1, 17, 1000} {
		if got, ok := CodeName(c); ok {
			t.Errorf("CodeName(%d) = %q, accepted", c, got)
		}
	}
}
