package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// fakeConn records the read deadlines a body sets.
type fakeConn struct{ reads []time.Time }

func (c *fakeConn) SetReadDeadline(t time.Time) error  { c.reads = append(c.reads, t); return nil }
func (c *fakeConn) SetWriteDeadline(t time.Time) error { return nil }

// chunks returns its pieces one Read at a time, then err.
type chunks struct {
	pieces []string
	err    error
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.pieces) == 0 {
		return 0, c.err
	}
	n := copy(p, c.pieces[0])
	if c.pieces[0] = c.pieces[0][n:]; c.pieces[0] == "" {
		c.pieces = c.pieces[1:]
	}
	return n, nil
}

func bodyOf(t *testing.T, pieces []string, err error, proto int) (*requestBody, *fakeConn, *prometheus.CounterVec) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.ProtoMajor = proto
	r.Body = io.NopCloser(&chunks{pieces: pieces, err: err})
	conn := &fakeConn{}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "body_errors"}, []string{"reason"})
	start := time.Unix(1000, 0)
	b := newRequestBody(r, conn, 1<<20, start, 30*time.Second, 10*time.Second, 1024, newBodyErrorCounters(vec))
	return b, conn, vec
}

func TestRequestBodyDeadlineFollowsTheMinimumRate(t *testing.T) {
	start := time.Unix(1000, 0)
	b, conn, _ := bodyOf(t, []string{strings.Repeat("x", 2048), strings.Repeat("x", 100), strings.Repeat("x", 64<<10)}, io.EOF, 1)
	if len(conn.reads) != 1 || !conn.reads[0].Equal(start.Add(10*time.Second)) {
		t.Fatalf("first deadline %v, want start + body_grace", conn.reads)
	}
	buf := make([]byte, 128<<10)
	if _, err := b.Read(buf); err != nil { // 2 KiB earn 2 s, set 1 s ahead
		t.Fatal(err)
	}
	if want := start.Add(13 * time.Second); len(conn.reads) != 2 || !conn.reads[1].Equal(want) {
		t.Fatalf("deadline after 2KiB: %v, want %v", conn.reads, want)
	}
	if _, err := b.Read(buf); err != nil { // 100 bytes more: still within what is set
		t.Fatal(err)
	}
	if len(conn.reads) != 2 {
		t.Fatalf("deadline moved for 100 bytes within the set one: %v", conn.reads)
	}
	if _, err := b.Read(buf); err != nil { // 64 KiB: past the route's timeout
		t.Fatal(err)
	}
	if want := start.Add(30 * time.Second); len(conn.reads) != 3 || !conn.reads[2].Equal(want) {
		t.Fatalf("deadline after 66KiB: %v, want the route's timeout %v", conn.reads, want)
	}
	if _, err := b.Read(buf); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	if last := conn.reads[len(conn.reads)-1]; !last.IsZero() || !b.Complete() {
		t.Fatalf("HTTP/1 body at its end: last deadline %v (want none), complete %v", last, b.Complete())
	}
}

func TestRequestBodyClassifiesFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		after []string
		want  exchange.BodyErrorKind
	}{
		{"deadline within the rate's", os.ErrDeadlineExceeded, nil, exchange.BodyTooSlow},
		{"deadline at the route's timeout", os.ErrDeadlineExceeded, []string{strings.Repeat("x", 64<<10)}, exchange.BodyTimeout},
		{"ended early", io.ErrUnexpectedEOF, nil, exchange.BodyTruncated},
		{"bad chunk", errors.New("invalid byte in chunk length"), nil, exchange.BodyMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _, vec := bodyOf(t, c.after, c.err, 1)
			_, err := io.ReadAll(b)
			var be *exchange.BodyError
			if !errors.As(err, &be) || be.Kind != c.want {
				t.Fatalf("error %v, want a %s BodyError", err, c.want)
			}
			if b.Failure() != be {
				t.Error("Failure() is not the error returned")
			}
			if _, again := b.Read(make([]byte, 8)); again != be {
				t.Errorf("a second read returned %v, want the same failure", again)
			}
			if n := testenv.MetricValue(t, prometheusRegistry(t, vec), "body_errors", map[string]string{"reason": c.want.String()}); n != 1 {
				t.Errorf("counted %v, want 1", n)
			}
		})
	}
}

func TestRequestBodyOfAGoneClientIsAborted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(ctx)
	r.Body = io.NopCloser(&chunks{err: errors.New("client disconnected")})
	b := newRequestBody(r, nil, 1<<20, time.Now(), time.Second, time.Second, 1024, nil)
	_, err := io.ReadAll(b)
	var be *exchange.BodyError
	if !errors.As(err, &be) || be.Kind != exchange.BodyAborted {
		t.Fatalf("error %v, want an aborted BodyError", err)
	}
}

func TestRequestBodyLimit(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("0123456789"))
	b := newRequestBody(r, nil, 10, time.Now(), time.Second, time.Second, 0, nil)
	if got, err := io.ReadAll(b); err != nil || len(got) != 10 {
		t.Fatalf("a body of exactly the limit: %d bytes, %v", len(got), err)
	}
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader("0123456789!"))
	b = newRequestBody(r, nil, 10, time.Now(), time.Second, time.Second, 0, nil)
	var mbe *http.MaxBytesError
	if _, err := io.ReadAll(b); !errors.As(err, &mbe) {
		t.Fatalf("a body over the limit: %v, want *http.MaxBytesError", err)
	}
}

func prometheusRegistry(t *testing.T, cs ...prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	return reg
}
