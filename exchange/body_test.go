package exchange

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// failedBody is a request body that records a failure, as the gateway's does.
type failedBody struct {
	io.ReadCloser
	failure *BodyError
}

func (b failedBody) Failure() *BodyError { return b.failure }
func (b failedBody) Complete() bool      { return false }

func TestWriteBodyErrorAnswersByKind(t *testing.T) {
	for _, c := range []struct {
		kind   BodyErrorKind
		status int
		code   string
	}{
		{BodyMalformed, http.StatusBadRequest, CodeBadRequest},
		{BodyTruncated, http.StatusBadRequest, CodeBadRequest},
		{BodyTooSlow, http.StatusRequestTimeout, CodeRequestTimeout},
		{BodyTimeout, http.StatusRequestTimeout, CodeRequestTimeout},
		{BodyAborted, 0, CodeClientClosed}, // nothing written: nobody reads it
	} {
		t.Run(c.kind.String(), func(t *testing.T) {
			info := &Info{}
			r := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(WithInfo(context.Background(), info))
			w := httptest.NewRecorder()
			err := &BodyError{Kind: c.kind, Err: errors.New("boom")}
			if !WriteBodyError(w, r, err) {
				t.Fatal("WriteBodyError did not take a *BodyError")
			}
			if c.status == 0 {
				if w.Body.Len() != 0 {
					t.Errorf("wrote %q for a client that is gone", w.Body.String())
				}
			} else if w.Code != c.status || !strings.Contains(w.Body.String(), `"`+c.code+`"`) {
				t.Errorf("got %d %s, want %d %s", w.Code, w.Body.String(), c.status, c.code)
			}
			if info.ErrorCode != c.code {
				t.Errorf("Info.ErrorCode = %q, want %q", info.ErrorCode, c.code)
			}
		})
	}
}

func TestBodyFailureFromTheBody(t *testing.T) {
	// The exchange failed with a cancellation the broken body caused: the
	// body still says whose fault it is.
	be := &BodyError{Kind: BodyTooSlow, Err: errors.New("i/o timeout")}
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Body = failedBody{ReadCloser: http.NoBody, failure: be}
	if got := BodyFailure(r, context.Canceled); got != be {
		t.Errorf("BodyFailure = %v, want the body's failure", got)
	}
	r.Body = http.NoBody
	if got := BodyFailure(r, context.Canceled); got != nil {
		t.Errorf("BodyFailure of a plain body and a cancellation = %v, want nil", got)
	}
	if WriteBodyError(httptest.NewRecorder(), r, errors.New("connection refused")) {
		t.Error("WriteBodyError took an upstream's error")
	}
}
