package adminui

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
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
		Path:              "text/html", // the client follows the redirect to Path + "/"
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
	_, page := get(Path + "/")
	for _, want := range []string{`src="app.js"`, `href="app.css"`, `id="routes"`, `id="rate"`} {
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

// TestPageWorksUnderAPrefix: the redirect and every URL the page and its
// script use are relative, so a proxy serving the admin listener under a
// path prefix (here /ops) serves a working page; the Chromium test of the
// gateway loads it that way.
func TestPageWorksUnderAPrefix(t *testing.T) {
	admin := http.NewServeMux()
	admin.Handle("GET "+Path, Handler())
	admin.Handle("GET "+Path+"/", Handler())
	srv := httptest.NewServer(http.StripPrefix("/ops", admin))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/ops" + Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ops"+Path+"/" {
		t.Fatalf("GET /ops%s: %d at %s, want 200 at /ops%s/ (a relative redirect)", Path, resp.StatusCode, resp.Request.URL.Path, Path)
	}
	absolute := regexp.MustCompile("(?:src|href)=\"/|fetch(?:Text|JSON)?\\(['`]/|['`]/(?:admin|metrics)")
	for name, body := range map[string]string{"page": page, "script": script} {
		if m := absolute.FindAllString(body, -1); len(m) > 0 {
			t.Errorf("the %s uses absolute paths %q: they break under a prefix", name, m)
		}
	}
	for _, ref := range []string{"'../summary'", "'../routes'", "`../services?"} {
		if !strings.Contains(script, ref) {
			t.Errorf("the script does not fetch %s", ref)
		}
	}
}

// TestScriptPollsTheSummaryNotMetrics: the page reads /admin/summary,
// /admin/routes and /admin/services and nothing else; never /metrics,
// whose text grows with every provider (7.9 MB at 5,000 services of 10,
// parsed every second), and never the whole services list at once.
func TestScriptPollsTheSummaryNotMetrics(t *testing.T) {
	if strings.Contains(script, "metrics") {
		t.Error("the script names metrics: it must read /admin/summary instead of /metrics")
	}
	// Every path the script names, as a string or template literal.
	paths := regexp.MustCompile("['`](\\.\\./[^'`?$]*)").FindAllStringSubmatch(script, -1)
	got := map[string]bool{}
	for _, p := range paths {
		got[p[1]] = true
	}
	if want := map[string]bool{"../summary": true, "../routes": true, "../services": true}; !maps.Equal(got, want) {
		t.Errorf("the script fetches %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	// Services a page at a time: the limit and the cursor are sent.
	for _, want := range []string{"limit:", "'after'", "'prefix'"} {
		if !strings.Contains(script, want) {
			t.Errorf("the script never sets %s on /admin/services", want)
		}
	}
}
