package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
)

// ErrNotLoopback is returned for addresses outside the loopback interface:
// load is only ever sent to 127.0.0.0/8 or ::1.
var ErrNotLoopback = errors.New("not a loopback IP address")

// CheckLoopback returns nil when hostport ("127.0.0.1:8080", "[::1]:80")
// names a loopback IP address, and an error wrapping ErrNotLoopback
// otherwise. Host names are refused: they could resolve anywhere.
func CheckLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("checking %q is on loopback: %w", hostport, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("checking %q is on loopback: %w", hostport, ErrNotLoopback)
	}
	return nil
}

// HTTPGet returns a Target that GETs rawURL with client, reads the whole
// body, and fails unless the status is wantStatus. rawURL must be http://
// with a loopback IP address and a port; header lists name, value pairs set
// on the request (https:// too: client's transport then says which
// certificates it trusts). The request is built once; each call only binds it to its
// ctx.
func HTTPGet(client *http.Client, rawURL string, wantStatus int, header ...string) (Target, error) {
	if len(header)%2 != 0 {
		return nil, fmt.Errorf("target %s: headers come in name, value pairs", rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the target URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("target %s: scheme %q, want http or https", rawURL, u.Scheme)
	}
	if err := CheckLoopback(u.Host); err != nil {
		return nil, fmt.Errorf("target %s: %w", rawURL, err)
	}
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("building the request to %s: %w", rawURL, err)
	}
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return func(ctx context.Context) error {
		res, err := client.Do(req.WithContext(ctx))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			return fmt.Errorf("reading the body of GET %s: %w", rawURL, err)
		}
		if res.StatusCode != wantStatus {
			return fmt.Errorf("GET %s: status %d, want %d", rawURL, res.StatusCode, wantStatus)
		}
		return nil
	}, nil
}
