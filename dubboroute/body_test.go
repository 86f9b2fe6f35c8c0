package dubboroute

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// chunked hides its length, as a chunked request body does.
type chunked struct{ io.Reader }

func (chunked) Close() error { return nil }

func TestReadBodyTakesFromTheBudget(t *testing.T) {
	h := &Handler{budget: bodyBudget{limit: 64 << 10}}
	body := strings.Repeat("x", 40<<10)

	r := httptest.NewRequest("POST", "/", strings.NewReader(body))
	got, held, err := h.readBody(r)
	if err != nil || string(got) != body || held != int64(len(body)) || cap(got) != len(body) {
		t.Fatalf("known length: %d bytes (cap %d), held %d, %v", len(got), cap(got), held, err)
	}
	// A second body of the same size does not fit while the first is held.
	if _, held2, err := h.readBody(httptest.NewRequest("POST", "/", strings.NewReader(body))); !errors.Is(err, errBudget) || held2 != 0 {
		t.Errorf("over the budget: held %d, %v", held2, err)
	}
	h.budget.give(held)

	r = httptest.NewRequest("POST", "/", nil)
	r.Body, r.ContentLength = chunked{strings.NewReader(body)}, -1
	got, held, err = h.readBody(r)
	if err != nil || string(got) != body || held < int64(len(body)) || held > 2*int64(len(body)) {
		t.Fatalf("unknown length: %d bytes, held %d, %v", len(got), held, err)
	}
	if h.budget.used.Load() != held {
		t.Errorf("budget used %d, held %d", h.budget.used.Load(), held)
	}
	h.budget.give(held)

	// An unknown length growing past the budget stops there, and gives
	// back what it held.
	r = httptest.NewRequest("POST", "/", nil)
	r.Body, r.ContentLength = chunked{strings.NewReader(strings.Repeat("x", 100<<10))}, -1
	_, held, err = h.readBody(r)
	if !errors.Is(err, errBudget) {
		t.Errorf("unknown length over the budget: %v", err)
	}
	h.budget.give(held)
	if used := h.budget.used.Load(); used != 0 {
		t.Errorf("budget used %d after every body was given back", used)
	}

	// A body that ends before its Content-Length.
	r = httptest.NewRequest("POST", "/", strings.NewReader("short"))
	r.ContentLength = 100
	if _, held, err = h.readBody(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: %v", err)
	}
	h.budget.give(held)
	if b, held, err := h.readBody(httptest.NewRequest("GET", "/", http.NoBody)); b != nil || held != 0 || err != nil {
		t.Errorf("no body: %q %d %v", b, held, err)
	}
}
