// Package grpcwire holds the pieces of gRPC's HTTP/2 wire format that more
// than one package of the gateway reads or writes: the grpc-timeout header
// and the names of the status codes.
package grpcwire

import (
	"strconv"
	"time"
)

// FormatTimeout writes d as a grpc-timeout value: at most 8 digits and a
// unit (milliseconds, or seconds past 8 digits), rounded up and at least
// one millisecond.
func FormatTimeout(d time.Duration) string {
	if d < time.Millisecond {
		return "1m"
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms < 1e8 {
		return strconv.FormatInt(int64(ms), 10) + "m"
	}
	s := (d + time.Second - 1) / time.Second
	if s < 1e8 {
		return strconv.FormatInt(int64(s), 10) + "S"
	}
	return "99999999S"
}

// ParseTimeout reads a grpc-timeout value ("TimeoutValue TimeoutUnit": 1
// to 8 digits, then H, M, S, m, u or n); false when v is not one.
func ParseTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	var n int64
	for i := 0; i < len(v)-1; i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	// 99999999 hours overflows a Duration: such a deadline is no deadline.
	if unit == time.Hour && n > int64(1<<63-1)/int64(time.Hour) {
		return 1<<63 - 1, true
	}
	return time.Duration(n) * unit, true
}
