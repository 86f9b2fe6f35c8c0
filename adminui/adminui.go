// Package adminui is the gateway's live dashboard, served on the admin
// listener at /admin/ui: one page (HTML, CSS and JavaScript embedded in the
// binary, nothing fetched from elsewhere, so it works offline) that polls
// the admin API (/admin/summary every second, never /metrics, whose text
// grows with every provider; /admin/services a page at a time, while in
// sight); and Redact, the secret-free view of the configuration that the
// admin API shows.
package adminui

import (
	_ "embed" // the page and its assets
	"io"
	"net/http"
)

// Path is where the page is served; its assets are below it. The page
// calls the admin API beside it, on the same listener.
const Path = "/admin/ui"

var (
	//go:embed static/index.html
	page string
	//go:embed static/app.js
	script string
	//go:embed static/app.css
	style string
)

// contentSecurityPolicy lets the page load only its own assets and call
// only its own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type asset struct {
	body        string
	contentType string
}

// Handler serves the page at Path + "/" (Path redirects there) and its
// assets at Path + "/app.js" and Path + "/app.css"; any other path is 404.
// The page names its assets and the admin API relative to itself, and the
// redirect is relative too, so the admin listener also works behind a
// proxy that serves it under a path prefix.
func Handler() http.Handler {
	assets := map[string]asset{
		Path + "/":        {page, "text/html; charset=utf-8"},
		Path + "/app.js":  {script, "text/javascript; charset=utf-8"},
		Path + "/app.css": {style, "text/css; charset=utf-8"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Path {
			w.Header().Set("Location", "ui/") // relative: keeps a proxy's prefix
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		a, ok := assets[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		_, _ = io.WriteString(w, a.body)
	})
}
