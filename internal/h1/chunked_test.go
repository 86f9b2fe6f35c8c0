package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http/httputil"
	"strings"
	"testing"
)

// chunkedSeeds are bodies at the edges net/http draws.
var chunkedSeeds = []string{
	"5\r\nhello\r\n0\r\n\r\n",
	"5;ext=1\r\nhello\r\n6 \t\r\n world\r\n0\r\n\r\n",
	"A\r\n0123456789\r\n0;last\r\n",
	"5\nhello\r\n0\r\n\r\n",
	"5\r\nhello\n0\r\n\r\n",
	"5\r\nhelloXX0\r\n\r\n",
	"5\r\nhel",
	"5\r\nhello",
	"5\r\nhello\r",
	"5\r\r\nhello\r\n0\r\n\r\n",
	"5 ;x\r\nhello\r\n0\r\n\r\n",
	"\r\nhello\r\n",
	"g\r\nhello\r\n",
	"-5\r\nhello\r\n",
	"+5\r\nhello\r\n",
	"00000000000000005\r\nhello\r\n",
	"0000000000000005\r\nhello\r\n0\r\n\r\n",
	"ffffffffffffffff\r\nhello",
	"1;" + strings.Repeat("e", 5000) + "\r\nx\r\n0\r\n\r\n",
	"1;" + strings.Repeat("e", 4090) + "\r\nx\r\n0\r\n\r\n",
	strings.Repeat("1;"+strings.Repeat("e", 300)+"\r\nx\r\n", 80) + "0\r\n\r\n",
	strings.Repeat("1\r\nx\r\n", 3000) + "0\r\n\r\n",
	"",
}

type chunkedOutcome struct {
	data       string
	failed     bool
	unexpected bool // the stream ended early
}

func readChunked(r io.Reader) chunkedOutcome {
	data, err := io.ReadAll(r)
	return chunkedOutcome{data: string(data), failed: err != nil, unexpected: errors.Is(err, io.ErrUnexpectedEOF)}
}

func checkChunked(t *testing.T, body []byte) {
	t.Helper()
	want := readChunked(httputil.NewChunkedReader(bufio.NewReaderSize(bytes.NewReader(body), 4096)))
	var c ChunkedReader
	c.Reset(bufio.NewReaderSize(bytes.NewReader(body), 4096))
	got := readChunked(&c)
	if got != want {
		t.Errorf("%.100q:\n h1       %+.60v\n net/http %+.60v", body, got, want)
	}
}

func TestChunkedReaderSeeds(t *testing.T) {
	for _, s := range chunkedSeeds {
		checkChunked(t, []byte(s))
	}
}

// FuzzChunkedReader: on any bytes, ChunkedReader reads the data
// net/http's chunked reader reads, and fails where it fails.
func FuzzChunkedReader(f *testing.F) {
	for _, s := range chunkedSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkChunked(t, body)
	})
}

// TestChunkedReaderOneByteReads: a reader that hands over one byte at a
// time (a slow client) reads the same body.
func TestChunkedReaderOneByteReads(t *testing.T) {
	body := "5;x=y\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
	var c ChunkedReader
	c.Reset(bufio.NewReaderSize(&oneByte{r: strings.NewReader(body)}, 4096))
	got, err := io.ReadAll(&c)
	if err != nil || string(got) != "hello world" {
		t.Fatalf("got %q, %v", got, err)
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
