package dubboroute

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// errBudget: taking the request's body would put the route over its
// memory budget (max_body_bytes_in_flight).
var errBudget = errors.New("is at its budget of request bodies in flight")

// bodyBudget is a route's memory budget: the bytes of request bodies its
// requests hold at once. Every request takes its body's bytes before
// reading them and gives them back when its call is done.
type bodyBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes; false when that would exceed the budget.
func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// give returns n bytes taken before.
func (b *bodyBudget) give(n int64) {
	if n != 0 {
		b.used.Add(-n)
	}
}

// firstChunk is what a body of unknown length is read into first.
const firstChunk = 4 << 10

// readBody reads the request body once into a buffer of its size, taking
// its bytes from the route's budget first: held is what to give back
// (also on error). The route's body limit applies upstream of here
// (*http.MaxBytesError past it). A body of unknown length grows its buffer
// by doubling, each growth taken from the budget before it is made.
func (h *Handler) readBody(r *http.Request) (body []byte, held int64, err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, 0, nil
	}
	if n := r.ContentLength; n > 0 {
		if !h.budget.take(n) {
			return nil, 0, fmt.Errorf("%w (%d bytes)", errBudget, h.budget.limit)
		}
		body = make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, n, fmt.Errorf("reading the request body: %w", err)
		}
		return body, n, nil
	}
	for {
		if len(body) == cap(body) {
			grow := int64(max(cap(body), firstChunk))
			if !h.budget.take(grow) {
				return nil, held, fmt.Errorf("%w (%d bytes)", errBudget, h.budget.limit)
			}
			held += grow
			body = append(make([]byte, 0, int64(cap(body))+grow), body...)
		}
		n, err := r.Body.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, held, nil
		}
		if err != nil {
			return nil, held, fmt.Errorf("reading the request body: %w", err)
		}
	}
}
