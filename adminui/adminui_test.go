package adminui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestHandlerServesThePageOffline(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	client := srv.Client()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	// Anything the page loads from elsewhere would break offline use: no
	// absolute URL at all, but the SVG namespace (a name, never fetched).
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for path, wantType := range map[string]string{
		Path:              "text/html",
		Path + "/":        "text/html",
		Path + "/app.js":  "text/javascript",
		Path + "/app.css": "text/css",
	} {
		resp, body := get(path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: no restrictive Content-Security-Policy", path)
		}
		for _, m := range external.FindAllString(body, -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s refers to %s: the page must work offline", path, m)
			}
		}
	}
	_, page := get(Path)
	for _, want := range []string{`src="/admin/ui/app.js"`, `href="/admin/ui/app.css"`, `id="routes"`, `id="rate"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if resp, _ := get(Path + "/../metrics"); resp.StatusCode == 200 {
		t.Error("serves paths beside its assets")
	}
	if resp, _ := get(Path + "/index.html.bak"); resp.StatusCode != 404 {
		t.Errorf("unknown asset: %d, want 404", resp.StatusCode)
	}
}
