package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Request: true, TwoWay: true, Serialization: 2, ID: 1, BodyLen: 10},
		{Request: true, Serialization: 2, ID: 1<<64 - 1, BodyLen: 1<<31 - 1},
		{Request: true, TwoWay: true, Event: true, Serialization: 2, ID: 7, BodyLen: 1},
		{Event: true, Serialization: 2, Status: StatusOK, ID: 7, BodyLen: 1},
		{Serialization: 2, Status: StatusThreadpoolExhausted, ID: 1 << 40},
	} {
		b := AppendHeader([]byte("prefix"), h)
		if !bytes.HasPrefix(b, []byte("prefix")) || len(b) != len("prefix")+HeaderLen {
			t.Fatalf("AppendHeader(%+v) = % x", h, b)
		}
		got, err := ParseHeader(b[len("prefix"):])
		if err != nil {
			t.Fatalf("ParseHeader(% x): %v", b, err)
		}
		if got != h {
			t.Errorf("round trip of %+v gave %+v", h, got)
		}
	}
}

func TestAppendHeaderDefaultsToHessian2AndDropsRequestStatus(t *testing.T) {
	b := AppendHeader(nil, Header{Request: true, Status: StatusServiceError, ID: 3})
	want := hx(t, "da bb 82 00 | 00 00 00 00 00 00 00 03 | 00 00 00 00")
	if !bytes.Equal(b, want) {
		t.Errorf("got  % x\nwant % x", b, want)
	}
}

func TestParseHeaderRejects(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "da bb c2 00", "frame header of 4 bytes"},
		{"bad magic", "ca fe c2 00 | 00 00 00 00 00 00 00 01 | 00 00 00 00", "bad magic 0xcafe"},
		{"serialization", "da bb c6 00 | 00 00 00 00 00 00 00 01 | 00 00 00 00", "serialization id 6"},
		{"negative length", "da bb c2 00 | 00 00 00 00 00 00 00 01 | 80 00 00 00", "negative body length -2147483648"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHeader(hx(t, tc.in))
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestStatusString(t *testing.T) {
	want := map[Status]string{
		StatusOK:                  "OK",
		StatusClientTimeout:       "CLIENT_TIMEOUT",
		StatusServerTimeout:       "SERVER_TIMEOUT",
		StatusBadRequest:          "BAD_REQUEST",
		StatusBadResponse:         "BAD_RESPONSE",
		StatusServiceNotFound:     "SERVICE_NOT_FOUND",
		StatusServiceError:        "SERVICE_ERROR",
		StatusServerError:         "SERVER_ERROR",
		StatusClientError:         "CLIENT_ERROR",
		StatusThreadpoolExhausted: "SERVER_THREADPOOL_EXHAUSTED_ERROR",
		Status(21):                "STATUS(21)",
	}
	for s, name := range want {
		if got := s.String(); got != name {
			t.Errorf("Status(%d).String() = %q, want %q", byte(s), got, name)
		}
	}
	// The numeric values are Java's Response constants.
	codes := []Status{StatusOK, StatusClientTimeout, StatusServerTimeout, StatusBadRequest, StatusBadResponse,
		StatusServiceNotFound, StatusServiceError, StatusServerError, StatusClientError, StatusThreadpoolExhausted}
	javaCodes := []byte{20, 30, 31, 40, 50, 60, 70, 80, 90, 100}
	for i, c := range codes {
		if byte(c) != javaCodes[i] {
			t.Errorf("%v = %d, want %d", c, byte(c), javaCodes[i])
		}
	}
}
